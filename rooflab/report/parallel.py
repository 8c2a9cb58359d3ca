"""The terminal table of a pipelined step: per stage, what one GPU of it does; then the step."""

from __future__ import annotations

from rooflab.cost import Prediction
from rooflab.report.table import grid
from rooflab.terminal import printable
from rooflab.units import format_bytes, format_time


def render(preds: list[Prediction], timing, tp: int = 1) -> str:
    """One row per pipeline stage (compute, memory, link and launch time of one micro-batch on
    one of its GPUs), then the step: stages one after the other for the first micro-batch, the
    rest at the slowest stage's pace, the bubble, and the links' share."""
    p0 = preds[0]
    head = (f"{p0.workload.rsplit('.stage', 1)[0]} on {p0.hardware.name} | {len(preds)} pipeline "
            f"stages x {tp} tensor-parallel GPUs | schedule {p0.policy}, launch {p0.launch} | "
            f"{timing.microbatches} micro-batch{'es' * (timing.microbatches > 1)}")
    body = []
    for i, p in enumerate(preds):
        t = p.totals
        body.append([f"stage {i}", str(t.kernels), format_time(t.compute_s),
                     format_time(t.memory_s), format_time(t.link_s), format_bytes(t.link_bytes),
                     format_time(t.launch_s), t.bound, format_time(t.time_s)])
    link = sum(p.totals.link_s for p in preds)
    lines = [printable(head), "",
             grid(["stage", "kernels", "compute", "memory", "link", "link bytes", "launch",
                   "bound", "time"], body),
             printable(f"step: {format_time(timing.time_s)} (the stages one after the other, "
                       f"then {timing.microbatches - 1} more micro-batches at the slowest "
                       f"stage's pace); bubble {timing.bubble:.0%}; links "
                       f"{format_time(link)}, {link / sum(timing.stage_s):.0%} of the stages' "
                       "time")]
    return "\n".join(lines)
