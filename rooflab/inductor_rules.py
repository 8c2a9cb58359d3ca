"""What torch.compile's Inductor does that the `inductor` fusion policy reproduces
(rooflab.schedule applies these), each rule with where it was read off.
"""

from __future__ import annotations

from rooflab.graph import Graph, Op
from rooflab.hardware import Hardware
from rooflab.ops.attention import boolean_mask

# Inductor fuses no two nodes more than 64 apart in its order (Scheduler.are_long_distant_nodes,
# pytorch/pytorch#106996): rooflab counts ops, views aside
MAX_FUSION_DISTANCE = 64

# Inductor splits a reduction over the grid when its rows cannot fill the GPU: fewer rows than
# SMs, each longer than this many elements, or any reduction over an axis that is not the last
# of a tensor larger than SPLIT_COLUMN_NUMEL. Read off the kernels Inductor generated for the
# torch suite on the H200 (reports/validation/torch/h200-2026-12-04.json): sum over 16 M
# elements and over the columns of [8192, 4096], softmax over rows of 128,256 split; rows of
# 1,024 to 4,096 (16 to 8,192 rows) did not.
SPLIT_ROW_ELEMENTS = 8192
SPLIT_COLUMN_NUMEL = 1 << 20


def split_launches(graph: Graph, op, hw: Hardware) -> int:
    """Launches of Inductor's split form of reduction `op` (0 when it is not split): a partial
    and a final kernel per reduction; softmax's two reductions (max, then sum) and its
    normalising pass make five."""
    x = graph.tensors[op.inputs[0]]
    if not x.shape:
        return 0
    axis = op.attrs.get("axis", -1) % len(x.shape)
    row, rows = x.shape[axis], x.numel // max(1, x.shape[axis])
    last = axis == len(x.shape) - 1
    if (last and rows < hw.sm_count and row > SPLIT_ROW_ELEMENTS) or \
            (not last and x.numel > SPLIT_COLUMN_NUMEL):
        return 5 if op.kind == "softmax" else 2
    return 0


def mask_launches(graph: Graph, op: Op) -> int:
    """Triton kernels Inductor generates before an attention op's SDPA call: one where the op
    takes a boolean mask (the additive float mask, made for each call and computed from the
    mask's own ops: per layer in the Llama-3.2-1B and Qwen2.5-0.5B decode steps of
    lab/compiled_steps), else none."""
    return int(op.kind == "attention" and boolean_mask(op, graph.tensors))
