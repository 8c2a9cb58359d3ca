"""What one schedule's fusions buy over another: the difference, attributed to each fusion.

Kernels of the two schedules are matched by the ops they hold: a set of baseline kernels whose
ops make up exactly one candidate kernel is one fusion. Its savings are the baseline kernels'
totals minus the fused kernel's (HBM bytes, launches, time including launch costs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rooflab.cost import Prediction
from rooflab.terminal import printable
from rooflab.units import format_bytes, format_time

_IDX = re.compile(r"\[\d+\]")


@dataclass(frozen=True)
class Fusion:
    kernel: str                 # the candidate's kernel name, block index folded to [*]
    ops: tuple[str, ...]        # op kinds, in order
    fusion: str
    count: int
    hbm_bytes_saved: int
    launches_saved: int
    time_saved_s: float
    stopped_by: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    baseline: Prediction
    candidate: Prediction
    fusions: tuple[Fusion, ...]      # sorted by time saved, largest first

    @property
    def time_saved_s(self) -> float:
        return self.baseline.totals.time_s - self.candidate.totals.time_s

    @property
    def speedup(self) -> float:
        return self.baseline.totals.time_s / self.candidate.totals.time_s

    @property
    def hbm_bytes_saved(self) -> int:
        return self.baseline.totals.hbm_bytes - self.candidate.totals.hbm_bytes

    @property
    def launches_saved(self) -> int:
        return self.baseline.totals.kernels - self.candidate.totals.kernels


def compare(baseline: Prediction, candidate: Prediction) -> Comparison:
    """Attribute candidate-vs-baseline differences to the candidate's fused kernels."""
    if baseline.workload != candidate.workload or baseline.hardware.name != candidate.hardware.name:
        raise ValueError("compare two predictions of one workload on one GPU")
    kernel_of = {op: i for i, k in enumerate(baseline.kernels) for op in k.ops}
    groups: dict[str, list] = {}
    for k in candidate.kernels:
        base = sorted({kernel_of[o] for o in k.ops if o in kernel_of})
        base_k = [baseline.kernels[i] for i in base]
        if len(base_k) == 1 and set(base_k[0].ops) == set(k.ops):
            continue                      # same kernel in both schedules
        if {o for b in base_k for o in b.ops} != set(k.ops):
            continue                      # not a pure merge of baseline kernels (regrouping)
        key = _IDX.sub("[*]", k.name)
        entry = groups.setdefault(key, [k, 0, 0, 0, 0.0, set()])
        entry[1] += 1
        entry[2] += sum(b.hbm_bytes for b in base_k) - k.hbm_bytes
        entry[3] += len(base_k) - 1
        entry[4] += sum(b.time_s for b in base_k) - k.time_s
        entry[5].update(_IDX.sub("[*]", s) for s in k.stopped_by)
    fusions = [Fusion(key, k.kinds, k.fusion, n, hbm, launches, t, tuple(sorted(stop)))
               for key, (k, n, hbm, launches, t, stop) in groups.items()]
    fusions.sort(key=lambda f: -f.time_saved_s)
    return Comparison(baseline, candidate, tuple(fusions))


def _summary(c: Comparison) -> str:
    a, b = c.baseline, c.candidate
    return (f"{b.policy} vs {a.policy} on {a.hardware.name} ({a.launch} launch): "
            f"{format_time(a.totals.time_s)} → {format_time(b.totals.time_s)} "
            f"({c.speedup:.2f}× faster, saves {format_time(c.time_saved_s)}); "
            f"HBM {format_bytes(a.totals.hbm_bytes)} → {format_bytes(b.totals.hbm_bytes)}; "
            f"kernels {a.totals.kernels} → {b.totals.kernels}")


def render(c: Comparison, top: int = 30) -> str:
    """The --compare section: summary line, then one row per fusion."""
    from rooflab.report.table import grid
    rows = []
    for f in c.fusions[:top]:
        rows.append([f.kernel + (f" ×{f.count}" if f.count > 1 else ""), "→".join(f.ops),
                     f.fusion, format_bytes(f.hbm_bytes_saved), str(f.launches_saved),
                     format_time(f.time_saved_s),
                     (f.stopped_by[0] + (f" (+{len(f.stopped_by) - 1} more)" if len(f.stopped_by) > 1 else ""))
                     if f.stopped_by else ""])
    out = [_summary(c)]
    if rows:
        out += ["", *grid(["fused kernel", "ops", "fusion", "HBM saved", "launches saved",
                           "time saved", "stopped growing because"], rows,
                          left={0, 1, 2, 6}).split("\n")]
        if len(c.fusions) > top:
            out.append(f"… {len(c.fusions) - top} more fusions (--json lists all)")
    else:
        out.append("no fusions: the two schedules group the ops the same way")
    return "\n".join(printable(line) for line in out)


def render_ranking(c: Comparison, top: int = 20) -> str:
    """`rooflab fusions`: one sentence per opportunity, largest time saved first."""
    hw = c.baseline.hardware.name
    lines = [_summary(c), ""]
    for i, f in enumerate(c.fusions[:top], 1):
        times = f" (×{f.count}: {f.kernel})" if f.count > 1 else f" ({f.kernel})"
        lines.append(f"{i:2d}. {' → '.join(f.ops)}: {f.fusion} fusion saves "
                     f"{format_time(f.time_saved_s)} and {format_bytes(f.hbm_bytes_saved)} "
                     f"on {hw}{times}")
        for s in f.stopped_by[:2]:
            lines.append(f"      stopped: {s}")
    if not c.fusions:
        lines.append("no fusion opportunities under this schedule")
    return "\n".join(printable(line) for line in lines)


def comparison_json(c: Comparison):
    from rooflab.report.jsonout import ComparisonJSON, FusionJSON
    return ComparisonJSON(
        baseline=c.baseline.policy, candidate=c.candidate.policy, launch=c.baseline.launch,
        time_saved_s=c.time_saved_s, speedup=c.speedup, hbm_bytes_saved=c.hbm_bytes_saved,
        launches_saved=c.launches_saved,
        fusions=[FusionJSON(kernel=f.kernel, ops=list(f.ops), fusion=f.fusion, count=f.count,
                            hbm_bytes_saved=f.hbm_bytes_saved, launches_saved=f.launches_saved,
                            time_saved_s=f.time_saved_s, stopped_by=list(f.stopped_by))
                 for f in c.fusions])
