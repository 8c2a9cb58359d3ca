"""What every kernel builder shares: the runnable result (`Built`) and how a rooflab kernel's
tensors are seen from outside it (views resolved to the tensor they alias, the tensors it must
write, the tensors it must read). Plain Python: no torch or Triton.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rooflab.graph import Graph
from rooflab.ops import KINDS, Role, view_roots
from rooflab.schedule import Kernel


@dataclass
class Built:
    """A runnable kernel: reads `inputs` from an environment of tensors, returns `outputs`."""
    name: str
    kind: str                                  # pointwise | row | gemm | template
    inputs: list[str]
    outputs: list[str]
    run: Callable[[dict], dict]                # env -> {output name: tensor}
    source: str = ""
    meta: dict = field(default_factory=dict)


class Views:
    """Maps a tensor made by a view op (reshape, permute, ...) to the tensor whose memory it
    aliases, and records which tensors are permuted (not contiguous, or offset: a slice or a
    part of a split) views."""

    def __init__(self, graph: Graph):
        self.root = view_roots(graph)
        self.permuted: set[str] = set()
        for op in graph.ops:
            if KINDS[op.kind].role is Role.VIEW and (
                    op.kind in ("permute", "slice", "split") or op.inputs[0] in self.permuted):
                self.permuted.update(op.outputs)

    def __call__(self, t: str) -> str:
        return self.root.get(t, t)


def escaping(graph: Graph, kernel: Kernel, views: Views) -> list[str]:
    """Tensors the kernel makes that an op outside it reads, or the workload returns."""
    members = set(kernel.ops)
    outs = {views(t) for t in graph.outputs}
    readers: dict[str, set[int]] = {}
    for i, op in enumerate(graph.ops):
        if KINDS[op.kind].role is not Role.VIEW:
            for t in op.inputs:
                readers.setdefault(views(t), set()).add(i)
    made = [t for i in kernel.ops for t in graph.ops[i].outputs]
    return [t for t in made if t in outs or readers.get(t, set()) - members]


def external_inputs(graph: Graph, kernel: Kernel, views: Views) -> list[str]:
    """Tensors (view roots) the kernel reads that none of its ops makes, in first-read order."""
    made = {t for i in kernel.ops for t in graph.ops[i].outputs}
    seen: list[str] = []
    for i in kernel.ops:
        for t in graph.ops[i].inputs:
            r = views(t)
            if r not in made and r not in seen:
                seen.append(r)
    return seen
