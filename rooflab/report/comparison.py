"""Terminal text of a `Comparison`: the `predict --compare` section and the `rooflab fusions`
ranking (rooflab.compare computes them)."""

from __future__ import annotations

from rooflab.compare import Comparison
from rooflab.report.table import grid
from rooflab.terminal import printable
from rooflab.units import format_bytes, format_time


def short_kernel(name: str, width: int = 56) -> str:
    """A fused kernel's name for a table: its ops' names joined by '+' are cut to the first
    op's and a count once they are wider than `width` characters (--json keeps them all)."""
    parts = name.split("+")
    if len(name) <= width or len(parts) == 1:
        return name
    return f"{parts[0]} (+{len(parts) - 1} ops)"


def faster(c: Comparison) -> str:
    """"1.20× faster, saves 5 µs", or where the candidate is slower "2.17× slower, costs …"."""
    if c.time_saved_s >= 0:
        return f"{c.speedup:.2f}× faster, saves {format_time(c.time_saved_s)}"
    return f"{1 / c.speedup:.2f}× slower, costs {format_time(-c.time_saved_s)}"


def _summary(c: Comparison) -> str:
    a, b = c.baseline, c.candidate
    return (f"{b.policy} vs {a.policy} on {a.hardware.name} ({a.launch} launch): "
            f"{format_time(a.totals.time_s)} → {format_time(b.totals.time_s)} "
            f"({faster(c)}); "
            f"HBM {format_bytes(a.totals.hbm_bytes)} → {format_bytes(b.totals.hbm_bytes)}; "
            f"kernels {a.totals.kernels} → {b.totals.kernels}")


def elsewhere(c: Comparison, top: int = 3) -> str | None:
    """The sentence saying what of the difference no fusion holds (kernels the two schedules
    group otherwise, and the kernels both run, priced or issued differently), or None where
    that is at most a microsecond or 5 % of the difference."""
    rest = c.time_saved_elsewhere_s
    if abs(rest) <= max(1e-6, 0.05 * abs(c.time_saved_s)):
        return None
    sign = "gains" if rest > 0 else "loses"
    parts = []
    if c.regrouped_kernels:
        parts.append(f"{c.regrouped_kernels} of its kernels group ops otherwise than "
                     f"{c.baseline.policy}'s")
    if c.repriced:
        shown = [f"{short_kernel(r.kernel)}{f' ×{r.count}' if r.count > 1 else ''} "
                 f"{format_time(r.baseline_s)} → {format_time(r.candidate_s)}"
                 for r in c.repriced[:top]]
        parts.append(f"kernels both schedules run, priced or issued differently "
                     f"({'; '.join(shown)}{'; …' if len(c.repriced) > top else ''})")
    where = f": {'; '.join(parts)}" if parts else ""
    return f"besides the fusions, {c.candidate.policy} {sign} {format_time(abs(rest))}{where}"


def _elsewhere_lines(c: Comparison) -> list[str]:
    line = elsewhere(c)
    return ["", line] if line else []


def render(c: Comparison, top: int = 30) -> str:
    """The --compare section: summary line, then one row per fusion."""
    rows = []
    for f in c.fusions[:top]:
        rows.append([short_kernel(f.kernel) + (f" ×{f.count}" if f.count > 1 else ""),
                     "→".join(f.ops),
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
        out.append("no fusions: the two schedules group the ops the same way"
                   if not c.regrouped_kernels
                   else f"no fusions: no kernel of {c.candidate.policy} merges kernels of "
                        f"{c.baseline.policy}")
    out += _elsewhere_lines(c)
    return "\n".join(printable(line) for line in out)


def render_ranking(c: Comparison, top: int = 20) -> str:
    """`rooflab fusions`: one sentence per opportunity, largest time saved first."""
    hw = c.baseline.hardware.name
    lines = [_summary(c), ""]
    for i, f in enumerate(c.fusions[:top], 1):
        kernel = short_kernel(f.kernel)
        times = f" (×{f.count}: {kernel})" if f.count > 1 else f" ({kernel})"
        # a fused kernel priced above the kernels it merges (its GEMM as rooflab's tile where
        # the baseline's is cuBLAS) costs time though it saves bytes
        saves = f"saves {format_time(f.time_saved_s)} and" if f.time_saved_s >= 0 else \
            f"costs {format_time(-f.time_saved_s)}, saves"
        lines.append(f"{i:2d}. {' → '.join(f.ops)}: {f.fusion} fusion {saves} "
                     f"{format_bytes(f.hbm_bytes_saved)} on {hw}{times}")
        for s in f.stopped_by[:2]:
            lines.append(f"      stopped: {s}")
    if not c.fusions:
        lines.append("no fusion opportunities under this schedule")
    lines += _elsewhere_lines(c)
    return "\n".join(printable(line) for line in lines)
