"""`rooflab validate --dry-run`: the Triton source of every kernel the suite would run, without
a GPU, torch or triton (the source is generated, not compiled)."""

from __future__ import annotations

from rooflab import api, workload
from rooflab.hardware import Hardware
from rooflab.validate.common import Unsupported
from rooflab.validate.kernels import route
from rooflab.validate.suite import Case

SCHEDULES = ("unfused", "fused")


def dry_run(cases: list[Case], hw: Hardware, write=print) -> None:
    """Print the Triton source of every kernel the suite would run (no GPU needed)."""
    for case in cases:
        graph = workload.load_dict(case.workload)
        for s in SCHEDULES:
            pred = api.predict_graph(graph, hw, s, "graph", "rooflab")
            for k in pred.schedule.kernels:
                try:
                    b = route.build(pred.schedule.graph, k)
                    src = b.source if b.kind != "template" else f"# template: {b.source} ({b.meta})\n"
                except Unsupported as e:
                    src = f"# skipped: {e}\n"
                write(f"# ---- {case.name} [{s}] kernel {k.name}\n{src}")
