"""Slicing op kinds: slice and split are views of part of a tensor (no bytes, no kernel: the
next kernel reads just that part through strides and an offset); concat copies its inputs
side by side into a new tensor.

A view of part of a tensor names a region of its root's bytes (`view_regions` in base.py):
a kernel that reads two different slices of one tensor reads both, and a kernel that reads
one slice reads only its bytes.
"""

from __future__ import annotations

import numpy as np

from rooflab.grid import vmax, vmin, vwhere
from rooflab.ops.base import (Attr, OpCost, OpKind, Role, ShapeError, TritonHook, axis_of,
                              read_write_once, register)

_AXIS = Attr("int", "the dimension cut (negative counts from the end)", required=True)


def _axis(op, x):
    if "axis" not in op.attrs:
        raise ShapeError(f"{op.kind} needs `axis:`")
    return axis_of(op, x)


# ----------------------------------------------------------------------------- slice
def _range(op, shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """(axis, start, stop, step) of the slice of a tensor of `shape`, clipped to the
    dimension as Python does."""
    if "axis" not in op.attrs:
        raise ShapeError("slice needs `axis:`")
    ax = op.attrs["axis"]
    if not -len(shape) <= ax < len(shape):
        raise ShapeError(f"axis {ax} out of range for a {len(shape)}-D tensor")
    ax %= len(shape)
    start, stop, step = op.attrs.get("start", 0), op.attrs.get("end"), op.attrs.get("step", 1)
    if not any(isinstance(v, np.ndarray) for v in (shape[ax], start, stop)):
        return (ax, *slice(start, stop, step).indices(shape[ax]))
    # a size that varies over a sweep's grid: Python's clipping, per point
    step = 1 if step is None else step
    if step < 1:
        raise ShapeError("a slice of a size that varies over a sweep's grid needs a positive "
                         "step")
    dim = shape[ax]

    def clip(i):
        return vmin(vmax(vwhere(i < 0, i + dim, i), 0), dim)
    return ax, clip(start), dim if stop is None else clip(stop), step


def _length(start, stop, step):
    """len(range(start, stop, step)) for a positive step, of numbers or grid Values."""
    return vmax(-((start - stop) // step), 0)


def _slice_infer(op, ins):
    x = ins[0]
    ax, start, stop, step = _range(op, x.shape)
    n = _length(start, stop, step)
    if n == 0:
        raise ShapeError(f"slice [{op.attrs.get('start', 0)}:{op.attrs.get('end', '')}] of "
                         f"dimension {ax} (size {x.shape[ax]}) is empty")
    return [(x.shape[:ax] + (n,) + x.shape[ax + 1:], x.dtype)]


def _slice_regions(op, x):
    ax, start, stop, step = _range(op, x.shape)
    return [(x.shape, ax, start, stop, step)]


def _slice_strides(op, x, strides):
    ax, _, _, step = _range(op, x.shape)
    return [strides[:ax] + (strides[ax] * step,) + strides[ax + 1:]]


def _slice_ref(op, xs, c):
    x = c.raw[0]
    ax, start, stop, step = _range(op, tuple(x.shape))
    return x[(slice(None),) * ax + (slice(start, stop, step),)]


# ----------------------------------------------------------------------------- split
def _sizes(op, x) -> tuple[int, list[int]]:
    ax = _axis(op, x)
    sizes = op.attrs.get("sizes")
    if not sizes:
        raise ShapeError("split needs `sizes:`, a list of positive sizes")
    if sum(sizes) != x.shape[ax]:
        raise ShapeError(f"split sizes {sizes} sum to {sum(sizes)}, but dimension {ax} of "
                         f"{list(x.shape)} is {x.shape[ax]}")
    return ax, sizes


def _split_infer(op, ins):
    x = ins[0]
    ax, sizes = _sizes(op, x)
    return [(x.shape[:ax] + (n,) + x.shape[ax + 1:], x.dtype) for n in sizes]


def _split_regions(op, x):
    ax, sizes = _sizes(op, x)
    out, at = [], 0
    for n in sizes:
        out.append((x.shape, ax, at, at + n, 1))
        at += n
    return out


def _split_strides(op, x, strides):
    return [strides] * len(_sizes(op, x)[1])


def _split_ref(op, xs, c):
    x = c.raw[0]
    return list(c.torch.split(x, op.attrs["sizes"], dim=op.attrs["axis"] % x.dim()))


def _no_cost(op, ins, outs):
    return OpCost()


# the generated kernels do not read offset views (validate/kernels/built.py marks them)
_VIEW = TritonHook()
register(OpKind(
    "slice", Role.VIEW, "view", (1, 1),
    "x[start:end:step] along `axis` (start default 0, end default the whole dimension, both "
    "clipped to it and negative counting from the end as in Python). No bytes, no kernel: "
    "the next kernel reads only the slice.",
    _slice_infer, _no_cost,
    {"axis": _AXIS, "start": Attr("int", "first position (default 0)"),
     "end": Attr("int", "one past the last position (default: the dimension's size)"),
     "step": Attr("int", "stride between positions (default 1)", min=1)},
    _slice_ref, _VIEW, regions=_slice_regions, strides=_slice_strides))
register(OpKind(
    "split", Role.VIEW, "view", (1, 1),
    "torch.split(x, sizes, axis): one output per size, the sizes summing to the dimension. "
    "No bytes, no kernel: each reader reads only its part.",
    _split_infer, _no_cost,
    {"axis": _AXIS, "sizes": Attr("ints", "the size of each part, in order", min=1,
                                  required=True)},
    _split_ref, _VIEW, regions=_split_regions, strides=_split_strides))


# ----------------------------------------------------------------------------- concat
def _concat_infer(op, ins):
    x = ins[0]
    ax = _axis(op, x)
    for t in ins[1:]:
        if len(t.shape) != len(x.shape) or t.dtype != x.dtype or any(
                a != b for d, (a, b) in enumerate(zip(t.shape, x.shape)) if d != ax):
            raise ShapeError(f"concat along axis {ax}: {t.name} {list(t.shape)} {t.dtype.name} "
                             f"does not match {x.name} {list(x.shape)} {x.dtype.name} off the "
                             "axis")
    return [(x.shape[:ax] + (sum(t.shape[ax] for t in ins),) + x.shape[ax + 1:], x.dtype)]


def _concat_cost(op, ins, outs):
    reads, writes = read_write_once(ins, outs)
    return OpCost(reads=reads, writes=writes)


# A gather by role: each output element is copied from one of several inputs by its position,
# so the kernel is not elementwise over one shape (its inputs are smaller than its output).
register(OpKind(
    "concat", Role.GATHER, "gather", (1, 256),
    "torch.cat(inputs, axis): 1 to 256 tensors of one dtype, equal off `axis`. A copy "
    "kernel: reads every input, writes the output; no FLOPs.",
    _concat_infer, _concat_cost, {"axis": _AXIS},
    lambda op, xs, c: c.torch.cat(xs, dim=op.attrs["axis"] % xs[0].dim()),
    TritonHook(unsupported="no generated Triton kernel for concat: its PyTorch reference is "
                           "checked, the kernel is not timed")))
