"""Compute-communication overlap: how much of a step's link time the schedule lets it hide.

A collective can run (on its own stream, as NCCL's kernels do) while the GPU computes whatever
does not depend on it and it does not depend on. The model, per decoder layer (`layers.N.` in
the kernel's name; the ops outside every layer are one more group):

    link      = Σ link time of the layer's collective kernels
    hideable  = Σ busy time (compute or memory, launches aside) of the layer's other kernels
                that are neither ancestors nor descendants of one of those collectives in the
                schedule's dataflow (each counted once)
    exposed   = min(link, max(Σ one step latency per collective, link - hideable))
    hidden    = link - exposed

A collective always exposes one step of its path's latency (the synchronisation nothing can
hide). The step is shorter by the hidden link time, at most by what the link added to each
collective kernel's own busy time (link - max(compute, memory)), and by nothing when the step
is launch-bound (the CPU's dispatch sets its pace). Not modelled: overlap across layers or
micro-batches, collective matmuls that split a GEMM to pipeline it with its own collective
(the GEMM depends on the collective, so it hides nothing here), and the SMs the collective's
kernels take from the compute they overlap.

Pure functions over a Prediction (it must carry its schedule: rooflab.api.predict_graph's do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rooflab.collectives import collective_time
from rooflab.cost import KernelCost, Prediction
from rooflab.ops import KINDS, Role

_LAYER = re.compile(r"\blayers\.(\d+)\.")


@dataclass(frozen=True, slots=True)
class LayerOverlap:
    """One group of kernels (a decoder layer, or `rest`): its link time and what hides it."""
    group: str
    collectives: int
    link_s: float
    hideable_s: float
    latency_floor_s: float
    exposed_s: float
    saved_s: float          # how much shorter the step gets

    @property
    def hidden_s(self) -> float:
        return self.link_s - self.exposed_s


@dataclass(frozen=True, slots=True)
class Overlap:
    """A step with its collectives overlapped: per group, and the step's totals."""
    groups: tuple[LayerOverlap, ...]
    step_s: float           # the step without overlap (Prediction.totals.time_s)
    launch_bound: bool

    @property
    def link_s(self) -> float:
        return sum(g.link_s for g in self.groups)

    @property
    def hidden_s(self) -> float:
        return sum(g.hidden_s for g in self.groups)

    @property
    def exposed_s(self) -> float:
        return sum(g.exposed_s for g in self.groups)

    @property
    def time_s(self) -> float:
        """The step with overlap."""
        return self.step_s - (0.0 if self.launch_bound else sum(g.saved_s for g in self.groups))


def group(name: str) -> str:
    """`layers.N` for a kernel inside decoder layer N, else `rest`."""
    m = _LAYER.search(name)
    return f"layers.{m.group(1)}" if m else "rest"


def busy_s(k: KernelCost) -> float:
    """A compute kernel's GPU time that a collective can run beside: compute or memory."""
    return max(k.compute_s, k.memory_s)


def exposed(link_s: float, hideable_s: float, floor_s: float) -> float:
    """Link time left on the critical path: min(link, max(floor, link - hideable))."""
    return min(link_s, max(floor_s, link_s - hideable_s))


def step_latency_s(pred: Prediction, kernel_index: int) -> float:
    """One step latency of the fastest path each collective of the kernel takes, summed."""
    sched, hw = pred.schedule, pred.hardware
    g = sched.graph
    total = 0.0
    for i in sched.kernels[kernel_index].ops:
        op = g.ops[i]
        if KINDS[op.kind].role is not Role.COLLECTIVE:
            continue
        c = KINDS[op.kind].cost(op, [g.tensors[t] for t in op.inputs],
                                [g.tensors[t] for t in op.outputs])
        kind, size, world, across = c.collective
        if world <= 1:
            continue
        paths = hw.network_paths if (across or world > hw.gpus_per_node) \
            and hw.network_paths else hw.collective_paths
        _, name = collective_time(paths, kind, world, size)
        total += next(p.step_latency_s for p in paths if p.name == name and kind in p.kinds)
    return total


def _dependencies(pred: Prediction) -> list[set[int]]:
    """Per kernel, the kernels it reads from directly."""
    sched = pred.schedule
    g = sched.graph
    kernel_of = {i: k for k, kern in enumerate(sched.kernels) for i in kern.ops}
    producer: dict[str, int] = {}
    for i, op in enumerate(g.ops):
        for t in op.outputs:
            producer[t] = i
    deps: list[set[int]] = [set() for _ in sched.kernels]
    # a view belongs to no kernel: follow it to what made its input
    def source(t: str) -> set[int]:
        i = producer.get(t)
        if i is None:
            return set()
        if i in kernel_of:
            return {kernel_of[i]}
        out = set()
        for u in g.ops[i].inputs:
            out |= source(u)
        return out
    cache: dict[str, set[int]] = {}
    for k, kern in enumerate(sched.kernels):
        for i in kern.ops:
            for t in g.ops[i].inputs:
                if t not in cache:
                    cache[t] = source(t)
                deps[k] |= cache[t] - {k}
    return deps


def overlap(pred: Prediction) -> Overlap:
    """The Overlap of `pred`'s step (see the module docstring)."""
    if pred.schedule is None:
        raise ValueError("overlap needs a Prediction that carries its schedule")
    kernels = pred.kernels
    deps = _dependencies(pred)
    users: list[set[int]] = [set() for _ in kernels]
    for k, d in enumerate(deps):
        for j in d:
            users[j].add(k)
    groups: dict[str, list[int]] = {}
    for k, kc in enumerate(kernels):
        groups.setdefault(group(kc.name), []).append(k)

    def reach(start: int, edges: list[set[int]]) -> set[int]:
        seen, todo = set(), [start]
        while todo:
            for j in edges[todo.pop()]:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        return seen

    out = []
    for name, members in groups.items():
        coll = [k for k in members if kernels[k].link_s]
        if not coll:
            continue
        free: set[int] = set()
        for c in coll:
            related = reach(c, deps) | reach(c, users) | {c}
            free |= {k for k in members if k not in related and not kernels[k].link_s}
        link = sum(kernels[c].link_s for c in coll)
        hideable = sum(busy_s(kernels[k]) for k in free)
        floor = sum(step_latency_s(pred, c) for c in coll)
        exp = exposed(link, hideable, floor)
        room = sum(max(0.0, kernels[c].link_s - busy_s(kernels[c])) for c in coll)
        out.append(LayerOverlap(name, len(coll), link, hideable, floor, exp,
                                min(link - exp, room)))
    return Overlap(tuple(out), pred.totals.time_s, pred.totals.bound == "launch")


def summary(ov: Overlap) -> str:
    """The line the CLI prints: "overlap: on, X of Y link time hidden; step A -> B"."""
    from rooflab.units import format_time
    if not ov.link_s:
        return "overlap: the step has no collectives, so nothing to hide"
    line = (f"overlap: on, {format_time(ov.hidden_s)} of {format_time(ov.link_s)} link time "
            f"hidden behind compute that does not depend on it; step "
            f"{format_time(ov.step_s)} -> {format_time(ov.time_s)}")
    if ov.launch_bound and ov.hidden_s:
        line += " (launch-bound: the CPU's dispatch sets the pace, hiding link time saves none)"
    return line
