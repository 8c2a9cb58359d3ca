"""One prediction over many parameter points at once: the cost model run on numpy arrays.

A sweep asks the same question at thousands of points (batch x context x ...). Rather than a
second, vectorised copy of the cost model, the one model runs with its swept parameters bound
to `Values`: numpy arrays, one element per point, laid out along their own grid axis so that
`batch * context` broadcasts to the whole grid. Shapes, FLOPs, bytes and times then come out as
arrays that hold every point's answer, from the same shape and cost rules a single prediction
uses.

The model also branches on sizes (does a row fit in shared memory, which GEMM tile, is a shape
check met). A branch on a `Values` comparison is taken at once when every point agrees; when
points disagree, `bool()` raises `Split` with the points' answers, and `evaluate` runs the
question again on each part of the grid. A part is cut along one axis when the answer depends
on that axis alone (the parts stay grids), else it becomes a flat list of points. A single
point never disagrees with itself, so this ends.

Numbers are float64: exact for every integer below 2**53, and a product of large sizes
(prefill attention FLOPs over a big grid) does not wrap around as int64 would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

# Most parts a grid is cut into before `evaluate` gives up: a model branching on every point
# is not vectorised any more, and saying so beats running for minutes.
MAX_PARTS = 4096


class Split(Exception):
    """A branch that the points of a grid answer differently; `mask` holds their answers."""

    def __init__(self, mask: np.ndarray):
        super().__init__("grid points disagree on a branch")
        self.mask = mask


class Values(np.ndarray):
    """A parameter's (or a derived size's) value at every point of a grid. Arithmetic is numpy's;
    truth is the points' common answer, or `Split` when they differ. Hashable by content, so
    shapes holding them can key caches."""

    def __bool__(self) -> bool:
        a = self.view(np.ndarray)
        if a.all():
            return True
        if not a.any():
            return False
        raise Split(a.astype(bool))

    def __hash__(self) -> int:          # type: ignore[override]
        a = self.view(np.ndarray)
        return hash((a.shape, a.tobytes()))

    # `n *= d` must make a new array, as it does for ints: in place it would write into a shape
    # that other tensors share (and fail to broadcast)
    def __iadd__(self, other):
        return self + other

    def __isub__(self, other):
        return self - other

    def __imul__(self, other):
        return self * other

    def __ifloordiv__(self, other):
        return self // other

    def __itruediv__(self, other):
        return self / other

    # messages name sizes (a fusion refusal says how many elements); over a grid a size is a
    # range, and printing thousands of numbers would cost more than the pricing
    def __str__(self) -> str:
        a = self.view(np.ndarray)
        lo, hi = a.min(), a.max()
        return f"{lo:g}" if lo == hi else f"{lo:g}..{hi:g}"

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        return str(self)

    def __index__(self) -> int:
        raise TypeError("a size that varies over a sweep's grid cannot be used as an index")

    def __int__(self) -> int:
        raise TypeError("a size that varies over a sweep's grid is not one integer")


def values(a) -> Values:
    return np.asarray(a, dtype=np.float64).view(Values)


def vmax(a, b):
    """max(a, b) for numbers and Values alike, without branching on their order."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.maximum(a, b)
    return a if a >= b else b


def vmin(a, b):
    """min(a, b) for numbers and Values alike."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.minimum(a, b)
    return a if a <= b else b


def vargmax(values: tuple):
    """Index of the largest value (the first on ties); per point when the values are arrays."""
    if not any(isinstance(v, np.ndarray) for v in values):
        return max(range(len(values)), key=values.__getitem__)
    best_i, best = np.int8(0), values[0]
    for i, v in enumerate(values[1:], 1):
        best_i, best = np.where(v > best, np.int8(i), best_i), np.maximum(v, best)
    return best_i


def vwhere(cond, a, b):
    """`a if cond else b` for numbers and Values alike (per point over a grid)."""
    if isinstance(cond, np.ndarray):
        return np.where(cond, a, b).view(Values)
    return a if cond else b


@dataclass(frozen=True)
class Part:
    """A piece of a grid: `index` holds the flat positions (into the whole grid) of its points,
    and each parameter's values broadcast to `index`'s shape."""
    index: np.ndarray
    params: dict[str, Values]


def grid(axes: dict[str, list[int] | np.ndarray]) -> Part:
    """The whole grid over `axes` (name -> values along that axis, in order): parameter i varies
    along array axis i. Its points are numbered in C order (the last axis fastest)."""
    shape = tuple(len(v) for v in axes.values())
    if not shape or min(shape) < 1:
        raise ValueError("a grid needs at least one value on every axis")
    params = {}
    for i, (name, v) in enumerate(axes.items()):
        lay = [1] * len(shape)
        lay[i] = shape[i]
        params[name] = values(np.asarray(v).reshape(lay))
    return Part(np.arange(int(np.prod(shape))).reshape(shape), params)


def _cut(part: Part, mask: np.ndarray) -> tuple[Part, Part]:
    """The points of `part` where `mask` holds, and the rest."""
    full = np.broadcast_to(mask, part.index.shape)
    ndim = part.index.ndim
    varying = [ax for ax in range(ndim)
               if full.shape[ax] > 1 and not (full == full.take([0], axis=ax)).all()]
    if len(varying) == 1:
        ax = varying[0]
        at = [0] * ndim
        at[ax] = slice(None)
        line = np.asarray(full[tuple(at)]).reshape(-1)

        def take(keep):
            sel = np.flatnonzero(keep)
            return Part(part.index.take(sel, axis=ax),
                        {k: (v.take(sel, axis=ax) if v.shape[ax] > 1 else v).view(Values)
                         for k, v in part.params.items()})
        return take(line), take(~line)

    def flat(keep):
        return Part(part.index[keep],
                    {k: np.broadcast_to(v, part.index.shape)[keep].view(Values)
                     for k, v in part.params.items()})
    return flat(full), flat(~full)


def evaluate(part: Part, question: Callable[[dict[str, Values]], Any]) -> list[tuple[Part, Any]]:
    """`question(params)` answered over every point of `part`: a list of (part, answer) that
    covers the points once each. An answer's arrays broadcast to its part's `index`."""
    todo, done = [part], []
    while todo:
        p = todo.pop()
        try:
            done.append((p, question(dict(p.params))))
        except Split as s:
            if len(done) + len(todo) + 2 > MAX_PARTS:
                raise ValueError(f"the model branches differently at too many points of the grid "
                                 f"(more than {MAX_PARTS} parts)") from None
            todo.extend(_cut(p, s.mask))
    return done


def gather(parts: list[tuple[Part, Any]], size: int, field: Callable[[Any], Any]) -> np.ndarray:
    """One flat float array over the grid's `size` points of `field(answer)`."""
    out = np.full(size, np.nan)
    for p, answer in parts:
        out[p.index.reshape(-1)] = np.broadcast_to(np.asarray(field(answer), dtype=float),
                                                   p.index.shape).reshape(-1)
    return out
