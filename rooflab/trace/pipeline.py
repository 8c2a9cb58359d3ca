"""Pipeline parallelism of a traced step: its decoder layers cut into stages, one per GPU group.

Stage s of `pp` holds layers [s*L/pp, (s+1)*L/pp) (found by the module paths transformers gives
them, `layers.N.`); the ops before the first layer (embedding, rotary tables, the mask) run on
the first stage, and every later stage that reads their small outputs recomputes them, as
serving engines do; the ops after the last layer (final norm, lm_head) run on the last stage.
A tensor a stage reads from an earlier stage's layers (the residual stream) arrives through a
`send_recv` op at the start of the stage. How long a pipelined step takes is `pipeline_time`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from rooflab.errors import RooflabError
from rooflab.graph import Graph, Op

_LAYER = re.compile(r"\blayers\.(\d+)\.")


def stages(graph: Graph, pp: int, across_nodes: tuple[bool, ...] | None = None) -> list[Graph]:
    """The `pp` stage graphs of `graph`. `across_nodes[s]`: stage s receives over the network
    (its GPUs are on another node than stage s - 1's). RooflabError when the layers do not
    divide into `pp` stages."""
    layer_of = [int(m.group(1)) if (m := _LAYER.search(op.name)) else None for op in graph.ops]
    layers = max((n for n in layer_of if n is not None), default=-1) + 1
    if layers == 0:
        raise RooflabError(f"{graph.name}: no decoder layers (layers.N) found to cut into "
                           "pipeline stages")
    if pp < 1 or layers % pp:
        raise RooflabError(f"--pp {pp}: {layers} layers do not divide into {pp} stages")
    if pp == 1:
        return [graph]
    first = layer_of.index(next(n for n in layer_of if n is not None))
    stage_of = []
    last_stage = 0
    for i, n in enumerate(layer_of):
        if n is not None:
            last_stage = n * pp // layers
        stage_of.append(-1 if i < first else last_stage)     # -1: the preamble
    producer = {t: i for i, op in enumerate(graph.ops) for t in op.outputs}
    out = []
    for s in range(pp):
        mine = [i for i, st in enumerate(stage_of) if st == s]
        reads = {t for i in mine for t in graph.ops[i].inputs}
        pre = _preamble_needed(graph, producer, stage_of, reads) if s else \
            [i for i, st in enumerate(stage_of) if st == -1]
        received = sorted(t for t in reads if t in producer and stage_of[producer[t]] not in (-1, s))
        ops: list[Op] = [graph.ops[i] for i in pre]
        tensors = {}
        renamed = {}
        for t in received:
            new = f"{t}.recv"
            renamed[t] = new
            across = bool(across_nodes and across_nodes[s])
            ops.append(Op(f"stage{s}.recv.{t}", "send_recv", (t,), (new,),
                          {"world_size": 2, "across_nodes": across}, block=""))
            tensors[new] = replace(graph.tensors[t], name=new)
        for i in mine:
            op = graph.ops[i]
            ins = tuple(renamed.get(t, t) for t in op.inputs)
            ops.append(replace(op, inputs=ins) if ins != op.inputs else op)
        for op in ops:
            for t in op.inputs + op.outputs:
                if t not in tensors:
                    tensors[t] = graph.tensors[t]
        made = {t for op in ops for t in op.outputs}
        later = {t for i, st in enumerate(stage_of) if st > s for t in graph.ops[i].inputs}
        outputs = frozenset(t for t in made if t in graph.outputs or t in later)
        # what the stage's call is passed: the step's own inputs it reads, what it receives
        received = {op.outputs[0] for op in ops if op.kind == "send_recv"}
        out.append(replace(graph, name=f"{graph.name}.stage{s}", tensors=tensors,
                           ops=tuple(ops), outputs=outputs or frozenset([ops[-1].outputs[0]]),
                           description=graph.description + f"; pipeline stage {s} of {pp}",
                           call_inputs=frozenset(graph.call_inputs & tensors.keys()) | received))
    return out


def _preamble_needed(graph: Graph, producer: dict, stage_of: list, reads: set) -> list[int]:
    """The preamble ops whose outputs (directly or through other preamble ops) this stage reads."""
    need, todo = set(), [t for t in reads if t in producer and stage_of[producer[t]] == -1]
    while todo:
        i = producer[todo.pop()]
        if i in need:
            continue
        need.add(i)
        todo += [t for t in graph.ops[i].inputs if t in producer and stage_of[producer[t]] == -1]
    return sorted(need)


@dataclass(frozen=True, slots=True)
class PipelineTime:
    """A pipelined step: `microbatches` pass through the stages one after the other."""
    stage_s: tuple[float, ...]       # one micro-batch through each stage
    microbatches: int

    @property
    def time_s(self) -> float:
        """(m - 1) micro-batches behind the first, at the pace of the slowest stage, after the
        first has gone through every stage: sum(stages) + (m - 1) * max(stage)."""
        return sum(self.stage_s) + (self.microbatches - 1) * max(self.stage_s)

    @property
    def bubble(self) -> float:
        """Share of the GPUs' time idle: 1 - sum(stages) * m / (pp * time)."""
        return 1 - sum(self.stage_s) * self.microbatches / (len(self.stage_s) * self.time_s)
