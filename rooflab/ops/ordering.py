"""Order-dependent reductions: top-k, sort, cumulative sum (row kernels along `axis`) and
histogram (over the whole tensor).

Like the other reductions each needs a whole row on chip (`row_bytes`, fp32). PyTorch runs
them as library kernels (radix select, segmented sort, scan); their FLOPs are comparisons and
adds, on the vector units. No Triton kernel is generated for them: validation checks their
PyTorch references and skips timing them, saying so.
"""

from __future__ import annotations

import math

import numpy as np

from rooflab.dtypes import lookup
from rooflab.ops.base import (Attr, OpCost, OpKind, Role, ShapeError, TritonHook, axis_of,
                              out_dtype, read_write_once, register)

_AXIS = Attr("int", "the axis it runs along (default -1)")
_INT64 = lookup("int64")


def _hook(kind: str) -> TritonHook:
    return TritonHook(unsupported=f"no generated Triton kernel for {kind}: its PyTorch "
                                  "reference is checked, the kernel is not timed")


def _row_cost(op, ins, outs, per_element: int) -> OpCost:
    x = ins[0]
    reads, writes = read_write_once(ins, outs)
    return OpCost(vector_flops=per_element * x.numel, reads=reads, writes=writes,
                  row_bytes=4 * x.shape[axis_of(op, x)], passes_if_spilled=1)


# ----------------------------------------------------------------------------- top-k, sort
def _topk_infer(op, ins):
    x = ins[0]
    ax = axis_of(op, x)
    k = op.attrs.get("k")
    if k is None:
        raise ShapeError("topk needs `k:`")
    if k > x.shape[ax]:
        raise ShapeError(f"topk k={k} is larger than dimension {ax} of {list(x.shape)}")
    shape = x.shape[:ax] + (k,) + x.shape[ax + 1:]
    return [(shape, x.dtype), (shape, _INT64)]


def _topk_cost(op, ins, outs):
    # NB: a radix select compares each element with the running k-th value: 1 per element
    return _row_cost(op, ins, outs, 1)


def _topk_ref(op, xs, c):
    v, i = c.torch.topk(xs[0], op.attrs["k"], dim=op.attrs.get("axis", -1),
                        largest=op.attrs.get("largest", True))
    return [v, i]


def _sort_infer(op, ins):
    x = ins[0]
    axis_of(op, x)
    return [(x.shape, x.dtype), (x.shape, _INT64)]


def _sort_cost(op, ins, outs):
    x = ins[0]
    n = x.shape[axis_of(op, x)]
    # a comparison sort of n keys: n * ceil(log2 n) comparisons per row (per point of a
    # sweep's grid when n varies over it: numpy's log2)
    if isinstance(n, np.ndarray):
        return _row_cost(op, ins, outs, np.where(n > 1, np.maximum(1, np.ceil(np.log2(n))), 0))
    return _row_cost(op, ins, outs, max(1, math.ceil(math.log2(n))) if n > 1 else 0)


def _sort_ref(op, xs, c):
    v, i = c.torch.sort(xs[0], dim=op.attrs.get("axis", -1),
                        descending=op.attrs.get("descending", False), stable=True)
    return [v, i]


register(OpKind(
    "topk", Role.REDUCTION, "reduction", (1, 1),
    "torch.topk(x, k, axis, largest): outputs the values (x's dtype) and int64 indices, "
    "both x's shape with `axis` -> k. Reads x, writes both; 1 comparison per element.",
    _topk_infer, _topk_cost,
    {"k": Attr("int", "how many to keep", min=1, required=True), "axis": _AXIS,
     "largest": Attr("bool", "keep the largest (default true) or the smallest")},
    _topk_ref, _hook("topk")))
register(OpKind(
    "sort", Role.REDUCTION, "reduction", (1, 1),
    "torch.sort(x, axis, descending): outputs the sorted values and their int64 indices "
    "(argsort reads the second). Reads x, writes both; n*ceil(log2 n) comparisons per row "
    "of n.",
    _sort_infer, _sort_cost,
    {"axis": _AXIS, "descending": Attr("bool", "largest first (default false)")},
    _sort_ref, _hook("sort")))


# ----------------------------------------------------------------------------- cumsum
def _cumsum_infer(op, ins):
    x = ins[0]
    axis_of(op, x)
    # torch.cumsum of an integer tensor accumulates in int64
    return [(x.shape, out_dtype(op, x.dtype if x.dtype.is_float else _INT64))]


register(OpKind(
    "cumsum", Role.REDUCTION, "reduction", (1, 1),
    "torch.cumsum(x, axis[, dtype]): running sums along `axis`, x's shape (integers "
    "accumulate in int64). Reads x, writes the output; 1 add per element.",
    _cumsum_infer, lambda op, ins, outs: _row_cost(op, ins, outs, 1),
    {"axis": _AXIS, "dtype": Attr("dtype", "output dtype (default x's; int64 for integers)")},
    lambda op, xs, c: c.torch.cumsum(xs[0], dim=op.attrs.get("axis", -1)), _hook("cumsum")))


# ----------------------------------------------------------------------------- histogram
def _histogram_infer(op, ins):
    x = ins[0]
    bins = op.attrs.get("bins")
    if bins is None:
        raise ShapeError("histogram needs `bins:`")
    if op.attrs.get("min", 0.0) > op.attrs.get("max", 0.0):
        raise ShapeError(f"histogram min {op.attrs['min']} is above max {op.attrs['max']}")
    return [((bins,), x.dtype)]


def _histogram_cost(op, ins, outs):
    reads, writes = read_write_once(ins, outs)
    # per element: scale to a bin (subtract, multiply, truncate) and one atomic add; the bins
    # stay in shared memory, so it is not a row kernel (no row_bytes)
    return OpCost(vector_flops=4 * ins[0].numel, reads=reads, writes=writes)


def _histogram_ref(op, xs, c):
    x = xs[0].float()
    lo, hi = op.attrs.get("min", 0.0), op.attrs.get("max", 0.0)
    return c.torch.histc(x, bins=op.attrs["bins"], min=lo, max=hi)


register(OpKind(
    "histogram", Role.REDUCTION, "reduction", (1, 1),
    "torch.histc(x, bins, min, max) over the whole tensor: [bins] counts in x's dtype (as "
    "histc returns them; min = max = 0: the data's range). Reads x, writes the "
    "bins; 4 FLOPs per element (bin index and add).",
    _histogram_infer, _histogram_cost,
    {"bins": Attr("int", "number of equal-width bins", min=1, required=True),
     "min": Attr("float", "lower edge (default 0; with max 0: the data's minimum)"),
     "max": Attr("float", "upper edge (default 0; with min 0: the data's maximum)")},
    _histogram_ref, _hook("histogram")))
