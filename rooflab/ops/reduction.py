"""Reduction op kinds: sum / mean / max over an axis, softmax, layernorm and rmsnorm.

Each needs a whole row on chip (`row_bytes`, in fp32); a row that does not fit in shared memory
is read again (`passes_if_spilled`). The Triton hooks hold the generated row kernel's lines:
`row` with the whole row in registers, `loop` for rows too long for that, in two passes: pass 1
streams the row in chunks into per-lane partial statistics ({y}a, {y}s), reduced once after the
loop; pass 2 streams the row again and writes the elementwise result.
"""

from __future__ import annotations

from rooflab.ops.base import (DTYPE_ATTR, Attr, OpCost, OpKind, Role, ShapeError, TritonHook,
                              axis_of, out_dtype, read_write_once, register)

_AXIS = Attr("int", "the axis reduced over (default -1)")
_EPS = Attr("float", "added to the variance (default 1e-5)", min=0)


# ----------------------------------------------------------------------------- sum, mean, max
def _reduce_infer(op, ins):
    x = ins[0]
    ax = axis_of(op, x)
    shape = list(x.shape)
    if op.attrs.get("keepdim", False):
        shape[ax] = 1
    else:
        del shape[ax]
    return [(tuple(shape), out_dtype(op, x.dtype))]


def _reduce_cost(op, ins, outs):
    x = ins[0]
    reads, writes = read_write_once(ins, outs)
    return OpCost(vector_flops=x.numel, reads=reads, writes=writes,
                  row_bytes=4 * x.shape[axis_of(op, x)], passes_if_spilled=1)


_REDUCE = {
    "sum": (lambda x, ax, keep: x.sum(ax, keep),
            TritonHook(row=("{y} = tl.sum(tl.where(mask, {x}, 0.0), axis=0)",),
                       loop=(("{y}a = tl.zeros([BLOCK_C], dtype=tl.float32)",),
                             ("{y}a += tl.where(mask, {x}, 0.0)",),
                             ("{y} = tl.sum({y}a, axis=0)",), ()))),
    "mean": (lambda x, ax, keep: x.mean(ax, keep),
             TritonHook(row=("{y} = tl.sum(tl.where(mask, {x}, 0.0), axis=0) / {c}",),
                        loop=(("{y}a = tl.zeros([BLOCK_C], dtype=tl.float32)",),
                              ("{y}a += tl.where(mask, {x}, 0.0)",),
                              ("{y} = tl.sum({y}a, axis=0) / {c}",), ()))),
    "max": (lambda x, ax, keep: x.amax(ax, keep),
            TritonHook(row=("{y} = tl.max(tl.where(mask, {x}, float('-inf')), axis=0)",),
                       loop=(("{y}a = tl.full([BLOCK_C], float('-inf'), dtype=tl.float32)",),
                             ("{y}a = tl.maximum({y}a, tl.where(mask, {x}, float('-inf')))",),
                             ("{y} = tl.max({y}a, axis=0)",), ()))),
}


def _reduce_ref(fn):
    return lambda op, xs, c: fn(xs[0], op.attrs.get("axis", -1), op.attrs.get("keepdim", False))


for _kind, (_fn, _hook) in _REDUCE.items():
    register(OpKind(
        _kind, Role.REDUCTION, "reduction", (1, 1),
        f"{_kind} over `axis` (default -1), `keepdim` false by default. 1 FLOP per input element.",
        _reduce_infer, _reduce_cost,
        {"axis": _AXIS, "keepdim": Attr("bool", "keep the reduced axis as size 1"),
         "dtype": DTYPE_ATTR},
        _reduce_ref(_fn), _hook))


# ----------------------------------------------------------------------------- softmax
def _softmax_infer(op, ins):
    axis_of(op, ins[0])
    return [(ins[0].shape, out_dtype(op, ins[0].dtype))]


def _softmax_cost(op, ins, outs):
    x = ins[0]
    reads, writes = read_write_once(ins, outs)
    return OpCost(vector_flops=5 * x.numel, reads=reads, writes=writes, sfu_ops=x.numel,
                  row_bytes=4 * x.shape[axis_of(op, x)], passes_if_spilled=2)


register(OpKind(
    "softmax", Role.REDUCTION, "reduction", (1, 1),
    "Softmax over `axis` (default -1). 5 FLOPs/elem: max, subtract, exp, sum, divide. "
    "A row that does not fit on chip takes a second pass (online max/sum, then normalise).",
    _softmax_infer, _softmax_cost, {"axis": _AXIS, "dtype": DTYPE_ATTR},
    lambda op, xs, c: c.torch.softmax(xs[0], dim=op.attrs.get("axis", -1)),
    TritonHook(
        row=("{y}m = tl.max(tl.where(mask, {x}, float('-inf')), axis=0)",
             "{y}e = tl.where(mask, tl.exp({x} - {y}m), 0.0)",
             "{y} = {y}e / tl.sum({y}e, axis=0)"),
        # online softmax per lane; a finite start keeps exp(old - new) defined for lanes that
        # have only seen -inf (masked scores)
        loop=(("{y}a = tl.full([BLOCK_C], -3.0e38, dtype=tl.float32)",
               "{y}s = tl.zeros([BLOCK_C], dtype=tl.float32)"),
              ("{y}n = tl.maximum({y}a, tl.where(mask, {x}, float('-inf')))",
               "{y}s = {y}s * tl.exp({y}a - {y}n) + tl.where(mask, tl.exp({x} - {y}n), 0.0)",
               "{y}a = {y}n"),
              ("{y}m = tl.max({y}a, axis=0)",
               "{y}i = 1.0 / tl.sum({y}s * tl.exp({y}a - {y}m), axis=0)"),
              ("{y} = tl.exp({x} - {y}m) * {y}i",)))))


# ----------------------------------------------------------------------------- norms
def _norm_infer(op, ins):
    x = ins[0]
    if op.kind == "rmsnorm" and len(ins) > 2:
        raise ShapeError("rmsnorm takes x and an optional weight, not a bias")
    for p in ins[1:]:
        if p.shape != (x.shape[-1],):
            raise ShapeError(f"{p.name} must have shape [{x.shape[-1]}] (the normalised "
                             f"axis of {list(x.shape)}), got {list(p.shape)}")
    return [(x.shape, out_dtype(op, x.dtype))]


def _norm_cost(op, ins, outs):
    x = ins[0]
    reads, writes = read_write_once(ins, outs)
    per = 7 if op.kind == "layernorm" else 4
    return OpCost(vector_flops=per * x.numel, reads=reads, writes=writes,
                  row_bytes=4 * x.shape[-1], passes_if_spilled=2)


def _rmsnorm_ref(op, xs, c):
    x = xs[0]
    y = x * c.torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + op.attrs.get("eps", 1e-5))
    return y * xs[1] if len(xs) > 1 else y


def _layernorm_ref(op, xs, c):
    x = xs[0]
    return c.F.layer_norm(x, (x.shape[-1],), xs[1] if len(xs) > 1 else None,
                          xs[2] if len(xs) > 2 else None, op.attrs.get("eps", 1e-5))


register(OpKind(
    "rmsnorm", Role.REDUCTION, "reduction", (1, 3),
    "RMS-normalise over the last axis; inputs x [, weight] (broadcast over rows, read once). "
    "4 FLOPs/elem (square, sum, scale, weight).",
    _norm_infer, _norm_cost, {"eps": _EPS, "dtype": DTYPE_ATTR}, _rmsnorm_ref,
    TritonHook(
        row=("{y}r = tl.rsqrt(tl.sum(tl.where(mask, {x} * {x}, 0.0), axis=0) / {c} + {eps})",
             "{y} = {x} * {y}r{w}"),
        loop=(("{y}a = tl.zeros([BLOCK_C], dtype=tl.float32)",),
              ("{y}a += tl.where(mask, {x} * {x}, 0.0)",),
              ("{y}r = tl.rsqrt(tl.sum({y}a, axis=0) / {c} + {eps})",),
              ("{y} = {x} * {y}r{w}",)))))

register(OpKind(
    "layernorm", Role.REDUCTION, "reduction", (1, 3),
    "Normalise over the last axis; inputs x [, weight [, bias]] (broadcast over rows, read "
    "once). 7 FLOPs/elem (mean, centre, square, sum, scale, weight, bias).",
    _norm_infer, _norm_cost, {"eps": _EPS, "dtype": DTYPE_ATTR}, _layernorm_ref,
    TritonHook(
        row=("{y}m = tl.sum(tl.where(mask, {x}, 0.0), axis=0) / {c}",
             "{y}d = tl.where(mask, {x} - {y}m, 0.0)",
             "{y}r = tl.rsqrt(tl.sum({y}d * {y}d, axis=0) / {c} + {eps})",
             "{y} = {y}d * {y}r{w}{b}"),
        # sum and sum of squares in fp32; E[x^2] - mean^2 is exact enough for activations whose
        # mean is not large against their spread
        loop=(("{y}a = tl.zeros([BLOCK_C], dtype=tl.float32)",
               "{y}s = tl.zeros([BLOCK_C], dtype=tl.float32)"),
              ("{y}a += tl.where(mask, {x}, 0.0)", "{y}s += tl.where(mask, {x} * {x}, 0.0)"),
              ("{y}m = tl.sum({y}a, axis=0) / {c}",
               "{y}r = tl.rsqrt(tl.maximum(tl.sum({y}s, axis=0) / {c} - {y}m * {y}m, 0.0) + {eps})"),
              ("{y} = ({x} - {y}m) * {y}r{w}{b}",)))))
