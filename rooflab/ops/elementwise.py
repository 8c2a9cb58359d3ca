"""Generic elementwise kinds for traced programs: `elementwise` (a named ATen pointwise op that
has no kind of its own: comparisons, where, masked_fill, cos, bitwise ops, ...), `fill` (a
kernel that only writes: zeros, full, arange) and `expand` (a broadcasting view).

These let a traced graph keep every kernel eager PyTorch launches with its real bytes, where a
hand-written workload would use a named kind. They are priced like any pointwise op: one pass
over the inputs (a broadcast operand read once), the output written once, `flops` FLOPs per
output element (default 1; transcendentals such as cos count 1 and one special-function op).
"""

from __future__ import annotations

from rooflab.dtypes import lookup
from rooflab.ops.base import (DTYPE_ATTR, Attr, OpCost, OpKind, Role, ShapeError, TritonHook,
                              broadcast, out_dtype, read_write_once, register)

# ATen pointwise ops that run on the special-function units (one op per element)
SFU_FUNCTIONS = frozenset({"cos", "sin", "exp", "exp2", "log", "log2", "log1p", "erf", "tanh",
                           "sigmoid", "reciprocal", "rsqrt", "sqrt", "pow", "div", "softplus"})


def _elementwise_infer(op, ins):
    if not ins:
        raise ShapeError("elementwise needs at least one input (use `fill` for none)")
    shape = broadcast(*(t.shape for t in ins))
    return [(shape, out_dtype(op, ins[0].dtype))]


def _elementwise_cost(op, ins, outs):
    reads, writes = read_write_once(ins, outs)
    n = outs[0].numel
    sfu = n if op.attrs.get("fn") in SFU_FUNCTIONS else 0
    return OpCost(vector_flops=op.attrs.get("flops", 1) * n, reads=reads, writes=writes,
                  sfu_ops=sfu)


def _elementwise_ref(op, xs, c):
    # the stand-in computes a sum of the inputs: the same bytes in and out, not the same values
    out = xs[0]
    for x in xs[1:]:
        out = out + x
    return out.expand(c.out_shape).clone()


register(OpKind(
    "elementwise", Role.POINTWISE, "pointwise", (1, 8),
    "A named elementwise op (`fn`, e.g. the ATen op `masked_fill`) with NumPy broadcasting: "
    "reads each input once, writes the output once, `flops` FLOPs per element (default 1).",
    _elementwise_infer, _elementwise_cost,
    {"fn": Attr("str", "what it computes (the ATen op name)", required=True),
     "flops": Attr("int", "FLOPs per output element (default 1)", min=0),
     "dtype": DTYPE_ATTR},
    _elementwise_ref,
    TritonHook(unsupported="elementwise is generic: its function is named, not defined")))


def _fill_infer(op, ins):
    shape = tuple(op.attrs["shape"])
    if any(d < 0 for d in shape):
        raise ShapeError(f"fill shape must not be negative, got {list(shape)}")
    dt = lookup(op.attrs.get("dtype", "fp32"))
    if dt is None:
        raise ShapeError(f"unknown dtype '{op.attrs.get('dtype')}'")
    return [(shape, dt)]


def allocates(op) -> bool:
    """Whether `op` only allocates its output (torch.empty): no bytes, no kernel of its own."""
    return op.kind == "fill" and op.attrs.get("fn") == "empty"


def _fill_cost(op, ins, outs):
    if allocates(op):
        return OpCost()
    return OpCost(vector_flops=outs[0].numel, writes=((0, outs[0].nbytes),))


register(OpKind(
    "fill", Role.POINTWISE, "pointwise", (0, 0),
    "A kernel that writes a new tensor of `shape` and `dtype` from no input (zeros, full, "
    "arange): writes it once, 1 FLOP per element. `fn: empty` is an allocation (torch.empty): "
    "nothing written, no FLOPs; with `launches: 0`, no kernel.",
    _fill_infer, _fill_cost,
    {"shape": Attr("ints", "the output shape", min=0, required=True),
     "dtype": Attr("dtype", "output dtype (default fp32)"),
     "fn": Attr("str", "what it writes (the ATen op name)")},
    lambda op, xs, c: c.torch.zeros(c.out_shape),
    TritonHook(unsupported="fill writes constants only: priced, not validated")))


def _expand_infer(op, ins):
    x = ins[0]
    shape = tuple(op.attrs["shape"])
    if len(shape) < len(x.shape) or broadcast(x.shape, shape) != shape:
        raise ShapeError(f"cannot expand {list(x.shape)} to {list(shape)}")
    return [(shape, x.dtype)]


def _expand_strides(op, x, strides):
    shape = tuple(op.attrs["shape"])
    lead = len(shape) - len(x.shape)
    # a new leading dimension, or one of size 1 widened, is read through a stride of zero
    return [(0,) * lead + tuple(0 if d == 1 and n != 1 else s
                                for d, n, s in zip(x.shape, shape[lead:], strides))]


register(OpKind(
    "expand", Role.VIEW, "view", (1, 1),
    "Broadcast to `shape` by zero strides. No bytes, no kernel; a reader of the view reads "
    "at most the bytes of the tensor it expands.",
    _expand_infer, lambda op, ins, outs: OpCost(),
    {"shape": Attr("ints", "the expanded shape", min=1, required=True)},
    lambda op, xs, c: c.raw[0].expand(c.out_shape), TritonHook(), strides=_expand_strides))
