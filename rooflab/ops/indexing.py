"""Indexing op kinds: gathers that read elements or slices by index (gather, index_select,
index) and in-place scatters that write them (scatter, index_add, index_copy, index_put).

Indices are data: a gather reads only the elements it selects, at most the whole source; a
scatter is priced as the in-place kernel PyTorch runs (its output is the updated target, whose
untouched bytes never move). Which positions an index names is unknown before the program
runs, so duplicates are assumed absent: every index touches a distinct element or slice, capped
at the target's size. References take random indices modulo the indexed dimension.
"""

from __future__ import annotations

from rooflab.graph import Op, Tensor
from rooflab.ops.base import (Attr, OpCost, OpKind, Role, ShapeError, TritonHook, axis_of,
                              broadcast, register)

_AXIS = Attr("int", "the indexed dimension (negative counts from the end)", required=True)


def _hook(kind: str) -> TritonHook:
    return TritonHook(unsupported=f"no generated Triton kernel for {kind}: its PyTorch "
                                  "reference is checked, the kernel is not timed")


def _check_index(index: Tensor, what: str, one_d: bool = False) -> None:
    if index.dtype.is_float:
        raise ShapeError(f"{what} index must be an integer dtype, got {index.dtype.name}")
    if one_d and len(index.shape) != 1:
        raise ShapeError(f"{what} index must be 1-D, got {list(index.shape)}")


def _axis(op: Op, x: Tensor) -> int:
    if "axis" not in op.attrs:
        raise ShapeError(f"{op.kind} needs `axis:`")
    return axis_of(op, x)


def _slice_elems(x: Tensor, ax: int) -> int:
    """Elements of one slice of x at a fixed position along axis `ax`."""
    return x.numel // x.shape[ax]


def _with_axis(shape: tuple[int, ...], ax: int, size: int) -> tuple[int, ...]:
    return shape[:ax] + (size,) + shape[ax + 1:]


def _capped(x: Tensor, elems: int) -> int:
    """Bytes of `elems` elements of x, at most all of x."""
    return min(x.dtype.nbytes(elems), x.nbytes)


def _same_dtype(x: Tensor, src: Tensor, kind: str) -> None:
    if src.dtype != x.dtype:
        raise ShapeError(f"{kind} writes {src.dtype.name} values into a {x.dtype.name} tensor; "
                         "cast them first")


# ----------------------------------------------------------------------------- gathers
def _gather_infer(op, ins):
    x, index = ins
    _check_index(index, "gather")
    ax = _axis(op, x)
    if len(index.shape) != len(x.shape):
        raise ShapeError(f"gather index {list(index.shape)} must have as many dimensions as "
                         f"x {list(x.shape)}")
    for d, (i, n) in enumerate(zip(index.shape, x.shape)):
        if d != ax and i > n:
            raise ShapeError(f"gather index {list(index.shape)} is larger than x "
                             f"{list(x.shape)} in dimension {d} (only axis {ax} may differ)")
    return [(index.shape, x.dtype)]


def _gather_cost(op, ins, outs):
    x, index = ins
    return OpCost(reads=((0, _capped(x, index.numel)), (1, index.nbytes)),
                  writes=((0, outs[0].nbytes),))


def _gather_ref(op, xs, c):
    x, index = xs
    ax = op.attrs["axis"] % x.dim()
    return c.torch.gather(x, ax, index.long() % x.shape[ax])


def _index_select_infer(op, ins):
    x, index = ins
    _check_index(index, "index_select", one_d=True)
    ax = _axis(op, x)
    return [(_with_axis(x.shape, ax, index.shape[0]), x.dtype)]


def _index_select_cost(op, ins, outs):
    x, index = ins
    ax = axis_of(op, x)
    rows = min(index.shape[0], x.shape[ax])
    return OpCost(reads=((0, x.dtype.nbytes(rows * _slice_elems(x, ax))), (1, index.nbytes)),
                  writes=((0, outs[0].nbytes),))


def _index_select_ref(op, xs, c):
    x, index = xs
    ax = op.attrs["axis"] % x.dim()
    return c.torch.index_select(x, ax, index.long() % x.shape[ax])


def _index_infer(op, ins):
    x, index = ins
    _check_index(index, "index")
    return [(index.shape + x.shape[1:], x.dtype)]


def _index_cost(op, ins, outs):
    x, index = ins
    return OpCost(reads=((0, _capped(x, index.numel * _slice_elems(x, 0))), (1, index.nbytes)),
                  writes=((0, outs[0].nbytes),))


def _index_ref(op, xs, c):
    x, index = xs
    return x[index.long() % x.shape[0]]


register(OpKind(
    "gather", Role.GATHER, "gather", (2, 2),
    "torch.gather(x, axis, index): out[i][j] = x[index[i][j]][j] along `axis`; index has x's "
    "rank and is no larger than x off the axis; out has index's shape. Reads the index and "
    "the elements it selects (at most all of x), writes out. No FLOPs.",
    _gather_infer, _gather_cost, {"axis": _AXIS}, _gather_ref, _hook("gather")))
register(OpKind(
    "index_select", Role.GATHER, "gather", (2, 2),
    "x.index_select(axis, index) with a 1-D integer index: x's shape with `axis` -> "
    "len(index). Reads only the selected slices (at most all of x) and the index.",
    _index_select_infer, _index_select_cost, {"axis": _AXIS}, _index_select_ref,
    _hook("index_select")))
register(OpKind(
    "index", Role.GATHER, "gather", (2, 2),
    "x[index] (ATen index.Tensor, one integer index of any shape, on the leading dim): "
    "index.shape + x.shape[1:]. Reads the rows it selects (at most all of x) and the index.",
    _index_infer, _index_cost, {}, _index_ref, _hook("index")))


# ----------------------------------------------------------------------------- scatters
def _scatter_infer(op, ins):
    x, index, src = ins
    _check_index(index, "scatter")
    ax = _axis(op, x)
    reduce = op.attrs.get("reduce", "none")
    if reduce not in ("none", "add"):
        raise ShapeError(f"scatter `reduce` must be none or add, got '{reduce}'")
    if not len(x.shape) == len(index.shape) == len(src.shape):
        raise ShapeError(f"scatter needs x {list(x.shape)}, index {list(index.shape)} and src "
                         f"{list(src.shape)} of one rank")
    for d, (i, s, n) in enumerate(zip(index.shape, src.shape, x.shape)):
        if i > s or (d != ax and i > n):
            raise ShapeError(f"scatter index {list(index.shape)} must be no larger than src "
                             f"{list(src.shape)}, and than x {list(x.shape)} off axis {ax} "
                             f"(dimension {d})")
    _same_dtype(x, src, "scatter")
    return [(x.shape, x.dtype)]


def _scatter_cost(op, ins, outs):
    x, index, src = ins
    n = index.numel                     # elements written: one per index entry
    touched = _capped(x, n)
    reads = [(1, index.nbytes), (2, _capped(src, n))]
    add = op.attrs.get("reduce", "none") == "add"
    if add:
        reads.append((0, touched))      # read-modify-write of the touched elements
    return OpCost(vector_flops=n if add else 0, reads=tuple(reads), writes=((0, touched),))


def _scatter_ref(op, xs, c):
    x, index, src = xs
    ax = op.attrs["axis"] % x.dim()
    index = index.long() % x.shape[ax]
    src = src[tuple(slice(0, n) for n in index.shape)]
    if op.attrs.get("reduce", "none") == "add":
        return x.scatter_add(ax, index, src)
    return x.scatter(ax, index, src)


def _slices_infer(op, ins):
    """index_add / index_copy: src is x's shape with `axis` -> len(index)."""
    x, index, src = ins
    _check_index(index, op.kind, one_d=True)
    ax = _axis(op, x)
    want = _with_axis(x.shape, ax, index.shape[0])
    if src.shape != want:
        raise ShapeError(f"{op.kind} src must be {list(want)} (x {list(x.shape)} with axis "
                         f"{ax} -> len(index) {index.shape[0]}), got {list(src.shape)}")
    _same_dtype(x, src, op.kind)
    return [(x.shape, x.dtype)]


def _slices_cost(op, ins, outs):
    x, index, src = ins
    ax = axis_of(op, x)
    touched = x.dtype.nbytes(min(index.shape[0], x.shape[ax]) * _slice_elems(x, ax))
    reads = ((1, index.nbytes), (2, src.nbytes))
    if op.kind == "index_add":          # read-modify-write of the touched slices
        flops = src.numel * (2 if op.attrs.get("alpha", 1) != 1 else 1)
        return OpCost(vector_flops=flops, reads=reads + ((0, touched),), writes=((0, touched),))
    return OpCost(reads=reads, writes=((0, min(src.nbytes, x.nbytes)),))


def _index_add_ref(op, xs, c):
    x, index, src = xs
    ax = op.attrs["axis"] % x.dim()
    return x.index_add(ax, index.long() % x.shape[ax], src, alpha=op.attrs.get("alpha", 1))


def _index_copy_ref(op, xs, c):
    x, index, src = xs
    ax = op.attrs["axis"] % x.dim()
    # NB: with repeated indices, which copy wins is unspecified (CPU: the last)
    return x.index_copy(ax, index.long() % x.shape[ax], src)


def _index_put_infer(op, ins):
    x, index, src = ins
    _check_index(index, "index_put", one_d=True)
    want = (index.shape[0],) + x.shape[1:]
    try:
        fits = broadcast(src.shape, want) == want
    except ShapeError:
        fits = False
    if not fits:
        raise ShapeError(f"index_put values {list(src.shape)} must broadcast to {list(want)} "
                         f"(len(index) rows of x {list(x.shape)})")
    _same_dtype(x, src, "index_put")
    return [(x.shape, x.dtype)]


def _index_put_cost(op, ins, outs):
    x, index, src = ins
    rows = min(index.shape[0], x.shape[0])
    touched = x.dtype.nbytes(rows * _slice_elems(x, 0))
    reads = [(1, index.nbytes), (2, src.nbytes)]
    if op.attrs.get("accumulate", False):
        reads.append((0, touched))
        return OpCost(vector_flops=rows * _slice_elems(x, 0), reads=tuple(reads),
                      writes=((0, touched),))
    return OpCost(reads=tuple(reads), writes=((0, touched),))


def _index_put_ref(op, xs, c):
    x, index, src = xs
    index = index.long() % x.shape[0]
    return x.index_put((index,), src, accumulate=op.attrs.get("accumulate", False))


register(OpKind(
    "scatter", Role.SCATTER, "gather", (3, 3),
    "x.scatter_(axis, index, src) in place (`reduce: add` for scatter_add_): the output is "
    "the updated x. x, index and src share a rank; index is no larger than src, nor than x "
    "off the axis. Reads the index and index.numel elements of src (add: and of x), writes "
    "index.numel elements of x; add: 1 FLOP each.",
    _scatter_infer, _scatter_cost,
    {"axis": _AXIS, "reduce": Attr("str", "none (overwrite, default) or add")},
    _scatter_ref, _hook("scatter")))
register(OpKind(
    "index_add", Role.SCATTER, "gather", (3, 3),
    "x.index_add_(axis, index, src[, alpha]) in place with a 1-D index; src is x's shape "
    "with `axis` -> len(index). Read-modify-write of the touched slices: reads src, the index "
    "and those slices of x, writes them; 1 FLOP per src element (2 with alpha != 1).",
    _slices_infer, _slices_cost,
    {"axis": _AXIS, "alpha": Attr("float", "src is scaled by alpha (default 1)")},
    _index_add_ref, _hook("index_add")))
register(OpKind(
    "index_copy", Role.SCATTER, "gather", (3, 3),
    "x.index_copy_(axis, index, src) in place with a 1-D index (a KV-cache append); src is "
    "x's shape with `axis` -> len(index). Reads src and the index, writes src's bytes only.",
    _slices_infer, _slices_cost, {"axis": _AXIS}, _index_copy_ref, _hook("index_copy")))
register(OpKind(
    "index_put", Role.SCATTER, "gather", (3, 3),
    "x[index] = src in place (index_put_ with a 1-D index on the leading dim); src "
    "broadcasts to [len(index), *x.shape[1:]]. Reads src and the index, writes the touched "
    "rows; `accumulate: true` (+=) also reads them and adds (1 FLOP per element).",
    _index_put_infer, _index_put_cost,
    {"accumulate": Attr("bool", "add into x instead of overwriting (default false)")},
    _index_put_ref, _hook("index_put")))


def _copy_into_infer(op, ins):
    x, src = ins
    if src.shape != x.shape:
        raise ShapeError(f"copy_into src {list(src.shape)} must have x's shape {list(x.shape)}")
    return [(x.shape, x.dtype)]


register(OpKind(
    "copy_into", Role.SCATTER, "gather", (2, 2),
    "x.copy_(src) in place where x is a view (a slice of a buffer the step allocated, as "
    "DeepSeek's attention fills its keys): src's values, cast to x's dtype, are written into "
    "x's bytes; the output is the updated x. Reads src, writes x.",
    _copy_into_infer, lambda op, ins, outs: OpCost(reads=((1, ins[1].nbytes),),
                                                  writes=((0, ins[0].nbytes),)),
    {}, lambda op, xs, c: xs[1].to(xs[0].dtype),
    TritonHook(unsupported="copy_into writes through a view in place: its PyTorch reference "
                           "is checked, no kernel is generated")))
