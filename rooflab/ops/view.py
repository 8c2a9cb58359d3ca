"""View op kinds: reshape and permute. Metadata only: no bytes and no kernel; the next kernel
reads through strides."""

from __future__ import annotations

from rooflab.ops.base import (Attr, OpCost, OpKind, Role, ShapeError, TritonHook, numel, register,
                              row_major, same_layout)


def _permute_infer(op, ins):
    x = ins[0]
    dims = op.attrs.get("dims")
    if not isinstance(dims, list) or sorted(d % len(x.shape) for d in dims) != list(
            range(len(x.shape))):
        raise ShapeError(f"permute needs `dims:`, a permutation of 0..{len(x.shape) - 1}")
    return [(tuple(x.shape[d] for d in dims), x.dtype)]


def _reshape_infer(op, ins):
    x = ins[0]
    shape = list(op.attrs.get("shape") or [])
    if not shape:
        raise ShapeError("reshape needs `shape:`")
    if shape.count(-1) > 1:
        raise ShapeError("reshape allows at most one -1")
    if any(d == 0 or d < -1 for d in shape):
        raise ShapeError(f"reshape dimensions must be positive (or one -1), got {shape}")
    known = numel([d for d in shape if d != -1])
    if -1 in shape:
        if x.numel % known:
            raise ShapeError(f"cannot reshape {list(x.shape)} to {shape}")
        shape[shape.index(-1)] = x.numel // known
    if numel(shape) != x.numel:
        raise ShapeError(f"cannot reshape {list(x.shape)} ({x.numel} elements) to {shape}")
    return [(tuple(shape), x.dtype)]


def _reshape_strides(op, x, strides):
    # a reshape is a view only of a row-major tensor: of any other PyTorch makes a copy
    shape = _reshape_infer(op, [x])[0][0]
    return [row_major(shape) if same_layout(x.shape, strides, row_major(x.shape)) else None]


def _permute_strides(op, x, strides):
    return [tuple(strides[d] for d in op.attrs["dims"])]


def _no_cost(op, ins, outs):
    return OpCost()


# generated kernels look through views: their readers index the viewed tensor
_VIEW = TritonHook()
register(OpKind(
    "reshape", Role.VIEW, "view", (1, 1),
    "Reshape to `shape` (one -1 allowed). No bytes, no kernel.",
    _reshape_infer, _no_cost,
    {"shape": Attr("ints", "the new shape; one entry may be -1", min=-1, required=True)},
    lambda op, xs, c: c.raw[0].reshape(c.out_shape), _VIEW, strides=_reshape_strides))
register(OpKind(
    "permute", Role.VIEW, "view", (1, 1),
    "Permute dimensions by `dims`. No bytes, no kernel: the next kernel reads through strides.",
    _permute_infer, _no_cost,
    {"dims": Attr("ints", "a permutation of the dimensions (negative counts from the end)",
                  required=True)},
    lambda op, xs, c: c.raw[0].permute(*op.attrs["dims"]), _VIEW, strides=_permute_strides))
