"""A traced step as a function of its sizes: trace a few points, fit every size, check one more.

A trace records one call at fixed sizes. Serving questions need the same step at many batches
and context lengths, and tracing each would take seconds. Transformer steps are regular: every
tensor dimension and every integer attribute of the ops of a step is `a + b*x + c*y + d*x*y` in
its two sizes (batch and context for a decode step, batch and seq for a prefill), so the step is
traced at four points (x0, y0), (x1, y0), (x0, y1), (x1, y1), which determine a, b, c, d exactly,
and at a fifth point that is not used for the fit and must match it: a dimension that is not of
that form (or ops that differ between the traces) is an error, never a guess.

GEMM launch counts are the one thing that changes with size in steps rather than linearly (cuBLAS
splits K for skinny GEMMs): they are worked out again at every point from the GEMM's shape with
the same rule the tracer uses (`aten_map.gemm_launches`). A foreach copy's count steps with size
too (`kernel_families.foreach_copy_launches`); forward steps do not call one, so its count is
taken from the traces, which must agree.

The rebuilt graph takes plain integers or `rooflab.grid.Values`, so a whole sweep's grid is one
graph.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Callable

from rooflab.errors import RooflabError
from rooflab.graph import Graph, Op, Tensor
from rooflab.strides import dense_in_order, is_dense

# The probe points (x, y) for sizes (batch, length): the first four fit, the last checks. Small
# (traces are fast) and unlike one another, so that no two sizes coincide by accident.
FIT_POINTS = ((3, 67), (5, 67), (3, 101), (5, 101))
CHECK_POINT = (7, 131)


@dataclass(frozen=True)
class Fit:
    """v(x, y) = a + b*x + c*y + d*x*y."""
    a: float
    b: float
    c: float
    d: float

    def at(self, x, y):
        """The value at sizes x, y: an int for int sizes, Values over a grid's."""
        if not (self.b or self.c or self.d):
            return int(self.a)
        v = self.a
        if self.b:
            v = v + self.b * x
        if self.c:
            v = v + self.c * y
        if self.d:
            v = v + self.d * x * y
        return int(v) if isinstance(v, float) and v.is_integer() else v


def _fit(v00: int, v10: int, v01: int, v11: int, points=FIT_POINTS) -> Fit:
    (x0, y0), (x1, _), (_, y1), _ = points
    dx, dy = x1 - x0, y1 - y0
    d = (v11 - v10 - v01 + v00) / (dx * dy)
    b = (v10 - v00) / dx - d * y0
    c = (v01 - v00) / dy - d * x0
    return Fit(v00 - b * x0 - c * y0 - d * x0 * y0, b, c, d)


@dataclass(frozen=True)
class ParametricStep:
    """A traced step at any sizes: `graph(x, y)` is the step at sizes x and y (ints or Values).
    `axes` names the two sizes, e.g. ("batch", "context")."""
    axes: tuple[str, str]
    template: Graph
    shapes: dict[str, tuple[Fit, ...]]
    attrs: tuple[dict, ...]          # per op: attribute -> Fit, list of Fits, or the value
    gemm: tuple[bool, ...]           # per op: launches follow the cuBLAS split-K rule
    describe: Callable[[dict], str] | None = None

    def graph(self, x, y) -> Graph:
        from rooflab.trace.aten_map import gemm_launches
        # a step has few distinct dimensions (batch, 32 * batch, context + 1, ...): each is
        # worked out once, and the tensors sharing it share its value
        memo: dict[Fit, object] = {}

        def at(f: Fit):
            v = memo.get(f)
            if v is None:
                v = memo[f] = f.at(x, y)
            return v
        # the layers' tensors repeat: each distinct (template layout, fits) is sized once
        sized: dict[tuple, Tensor] = {}
        tensors = {}
        for n, fits in self.shapes.items():
            t = self.template.tensors[n]
            key = (fits, t.shape, t.strides, t.dtype.name)
            proto = sized.get(key)
            if proto is None:
                proto = sized[key] = _scaled(t, tuple(at(f) for f in fits))
            tensors[n] = proto.renamed(n)
        ops = []
        for op, attrs, gemm in zip(self.template.ops, self.attrs, self.gemm):
            new = {k: (at(v) if isinstance(v, Fit)
                       else [at(e) if isinstance(e, Fit) else e for e in v]
                       if isinstance(v, list) else v) for k, v in attrs.items()}
            launches = op.launches
            if gemm:
                (m, k), (_, n) = tensors[op.inputs[0]].shape, tensors[op.inputs[1]].shape
                launches = gemm_launches(m, n, k)
            ops.append(replace(op, attrs=new, launches=launches))
        params = {**self.template.params, self.axes[0]: x, self.axes[1]: y}
        return replace(self.template, tensors=tensors, ops=tuple(ops), params=params)


def _scaled(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Template tensor `t` at `shape`: a dense layout keeps its order of dimensions; any other
    (a view's) is left to rooflab.strides to derive through the view."""
    strides = dense_in_order(shape, t.strides) if is_dense(t.shape, t.strides) else None
    return Tensor(t.name, shape, t.dtype, strides)


def _same_structure(a: Graph, b: Graph, where: str) -> None:
    if len(a.ops) != len(b.ops) or set(a.tensors) != set(b.tensors):
        raise RooflabError(f"{where}: the traced step has {len(a.ops)} ops at one size and "
                           f"{len(b.ops)} at another: it cannot be priced over a range of sizes")
    for p, q in zip(a.ops, b.ops):
        if (p.name, p.kind, p.inputs, p.outputs) != (q.name, q.kind, q.inputs, q.outputs):
            raise RooflabError(f"{where}: op {p.name} ({p.kind}) at one size is {q.name} "
                               f"({q.kind}) at another: the step's ops depend on its sizes")


def _cublas_launches(g: Graph, op: Op) -> int:
    from rooflab.trace.aten_map import gemm_launches
    (m, k), (_, n) = g.tensors[op.inputs[0]].shape, g.tensors[op.inputs[1]].shape
    return gemm_launches(m, n, k)


def fit_step(trace: Callable[[int, int], Graph], axes: tuple[str, str], where: str,
             y_from: int = 0) -> ParametricStep:
    """The ParametricStep of `trace(x, y)` (a function tracing the step at sizes x, y), probed
    at y_from + the probe points' y (an extend step's cache is longer than its new tokens)."""
    points = tuple((x, y + y_from) for x, y in FIT_POINTS)
    check_point = (CHECK_POINT[0], CHECK_POINT[1] + y_from)
    graphs = [trace(x, y) for x, y in points]
    check = trace(*check_point)
    base = graphs[0]
    for g in graphs[1:] + [check]:
        _same_structure(base, g, where)

    def fit(values: list, what: str):
        f = _fit(*values[:4], points=points)
        if f.at(*check_point) != values[4]:
            raise RooflabError(f"{where}: {what} is not linear in {axes[0]} and {axes[1]} "
                               f"(traced {values}): this step cannot be priced over a range")
        return f

    everything = graphs + [check]
    shapes = {}
    for name, t in base.tensors.items():
        dims = [g.tensors[name].shape for g in everything]
        if len({len(d) for d in dims}) != 1:
            raise RooflabError(f"{where}: tensor {name} changes rank with the step's sizes")
        shapes[name] = tuple(fit([d[j] for d in dims], f"dimension {j} of tensor {name}")
                             for j in range(len(t.shape)))
    attrs, gemm = [], []
    for i, op in enumerate(base.ops):
        mine = {}
        for key, v in op.attrs.items():
            vals = [g.ops[i].attrs.get(key) for g in everything]
            what = f"attribute {key} of op {op.name}"
            if isinstance(v, bool) or not isinstance(v, (int, list)):
                if any(x != v for x in vals):
                    raise RooflabError(f"{where}: {what} changes with the step's sizes ({vals})")
                mine[key] = v
            elif isinstance(v, int):
                mine[key] = fit(vals, what)
            else:
                if len({len(x) for x in vals}) != 1:
                    raise RooflabError(f"{where}: {what} changes length with the step's sizes")
                mine[key] = [fit([x[j] for x in vals], f"{what}[{j}]")
                             if isinstance(e, int) and not isinstance(e, bool) else e
                             for j, e in enumerate(v)]
        attrs.append(mine)
        two_d = op.kind == "matmul" and all(len(base.tensors[t].shape) == 2 for t in op.inputs[:2])
        launch_counts = {g.ops[i].launches for g in everything}
        gemm.append(two_d and all(_cublas_launches(g, g.ops[i]) == g.ops[i].launches
                                  for g in everything))
        if not gemm[-1] and len(launch_counts) > 1:
            raise RooflabError(f"{where}: op {op.name} launches {sorted(launch_counts)} kernels "
                               "depending on the step's sizes")
    return ParametricStep(axes, base, shapes, tuple(attrs), tuple(gemm))


_HF_AXES = {"decode": ("batch", "context"), "prefill": ("batch", "seq"),
            "extend": ("batch", "context")}


@functools.lru_cache(maxsize=8)
def hf_step(name: str, phase: str, sets: tuple = ()) -> ParametricStep:
    """The ParametricStep of a Hugging Face model's `phase` step (decode: batch x context;
    prefill: batch x seq); `sets` fixes other --set values (sorted (key, value) pairs)."""
    from rooflab.trace.source import load
    axes = _HF_AXES.get(phase)
    if axes is None:
        raise RooflabError(f"--phase must be one of {', '.join(_HF_AXES)}, got '{phase}'")
    fixed = dict(sets)

    def trace(x: int, y: int) -> Graph:
        return load(f"hf:{name}", {**fixed, axes[0]: x, axes[1]: y}, phase)
    return fit_step(trace, axes, f"hf:{name}",
                    y_from=fixed.get("seq", 512) if phase == "extend" else 0)
