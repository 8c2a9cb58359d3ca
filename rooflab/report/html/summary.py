"""The report's HTML head: total time per GPU, launch mode and schedule, the speedups, and the
table of the fusions that save the most time."""

from __future__ import annotations

from collections.abc import Sequence

from rooflab import __version__
from rooflab.compare import Comparison
from rooflab.cost import Prediction
from rooflab.report.comparison import elsewhere, faster
from rooflab.report.html.kernels import esc, shorten
from rooflab.units import format_bytes, format_time


def html_table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def summary_html(preds: Sequence[Prediction], comparisons: Sequence[Comparison],
                 top: int = 8) -> str:
    """The top of the report: total time per schedule and GPU, what bounds it, the speedup
    from fusion, and the top fusion opportunities."""
    e = esc
    schedules: list[str] = []
    for p in preds:
        if p.policy not in schedules:
            schedules.append(p.policy)
    by_row: dict[tuple[str, str], dict[str, Prediction]] = {}
    for p in preds:
        by_row.setdefault((p.hardware.name, p.launch), {})[p.policy] = p
    cmp_of = {(c.baseline.hardware.name, c.baseline.launch): [] for c in comparisons}
    for c in comparisons:
        cmp_of[(c.baseline.hardware.name, c.baseline.launch)].append(c)
    head = ["GPU", "launch"] + [f"{e(s)}" for s in schedules]
    cmp_names = []
    for c in comparisons:
        name = f"{c.candidate.policy} vs {c.baseline.policy}"
        if name not in cmp_names:
            cmp_names.append(name)
    head += [f"speedup: {e(n)}" for n in cmp_names]
    rows = []
    for (gpu, launch), ps in by_row.items():
        any_p = next(iter(ps.values()))
        row = [f"<b>{e(any_p.hardware.display_name)}</b> <span class=dim>{e(gpu)}</span>",
               e(launch)]
        for s in schedules:
            p = ps.get(s)
            row.append("" if p is None else
                       f"<b>{format_time(p.totals.time_s)}</b> "
                       f"<span class='bound b-{p.totals.bound}'>{p.totals.bound}</span>"
                       f"<br><span class=dim>{p.totals.kernels} kernels · "
                       f"{format_bytes(p.totals.hbm_bytes)} HBM</span>")
        for n in cmp_names:
            c = next((c for c in cmp_of.get((gpu, launch), [])
                      if f"{c.candidate.policy} vs {c.baseline.policy}" == n), None)
            row.append("" if c is None else
                       f"<b>{c.speedup:.2f}×</b><br><span class=dim>{e(faster(c))}, "
                       f"{format_bytes(c.hbm_bytes_saved)} HBM, "
                       f"{c.launches_saved} launches</span>")
        rows.append(row)
    p0 = preds[0]
    params = " ".join(f"{k}={v}" for k, v in p0.params.items())
    parts = [f"<h1>{e(p0.workload)}</h1>",
             f"<p class=sub>{e(params)}" + (" · " if params else "") +
             f"rooflab {__version__} predictions (a model, not a measurement)</p>",
             "<h2>Summary</h2>", html_table(head, rows, "summary")]
    if comparisons:
        parts.append(_fusion_table(comparisons, top))
    # a note names its GPU where it is about the GPU; the others are given theirs
    notes = list(dict.fromkeys(n if n.startswith(f"{p.hardware.name}: ")
                               else f"{p.hardware.name}: {n}" for p in preds for n in p.notes))
    if notes:
        parts.append("<ul class=notes>" + "".join(f"<li>{e(n)}</li>" for n in notes[:12])
                     + "</ul>")
    return "\n".join(parts)


def _fusion_table(comparisons: Sequence[Comparison], top: int) -> str:
    """The fusions that save the most time, one column of time saved per GPU/launch."""
    e = esc
    cols = []
    last = comparisons[-1].candidate.policy           # the most fused schedule asked for
    comparisons = [c for c in comparisons if c.candidate.policy == last]
    for c in comparisons:
        label = c.baseline.hardware.name + (f" · {c.baseline.launch}"
                                            if len({x.baseline.launch for x in comparisons}) > 1
                                            else "")
        cols.append((label, {f.kernel: f for f in c.fusions}))
    best: dict[str, float] = {}
    for _, fs in cols:
        for k, f in fs.items():
            best[k] = max(best.get(k, 0.0), f.time_saved_s)
    ranked = sorted(best, key=lambda k: -best[k])[:top]
    rest = [f"<li>{e(label)}: {e(line)}</li>" for (label, _), c in zip(cols, comparisons)
            if (line := elsewhere(c))]
    notes = f"<ul class=notes>{''.join(rest)}</ul>" if rest else ""
    if not ranked:
        return ("<p class=dim>No fusion opportunities: no kernel of the later schedule merges "
                "kernels of the earlier one.</p>" + notes)
    rows = []
    for i, key in enumerate(ranked, 1):
        f = next(fs[key] for _, fs in cols if key in fs)
        row = [str(i), f"<code>{e(shorten(key, 48))}</code>" + (f" ×{f.count}" if f.count > 1 else ""),
               e(" → ".join(f.ops)), e(f.fusion), format_bytes(f.hbm_bytes_saved)]
        for _, fs in cols:
            g = fs.get(key)
            row.append(format_time(g.time_saved_s) if g else "–")
        stop = f.stopped_by[0] if f.stopped_by else ""
        row.append(f"<span class=dim>{e(shorten(stop, 90))}</span>")
        rows.append(row)
    c0 = comparisons[0]
    head = ["#", "fused kernel" if c0.candidate.policy == "fused"
            else f"kernel in {e(c0.candidate.policy)}", "ops", "fusion", "HBM saved"]
    head += [f"time saved<br>{e(label)}" for label, _ in cols]
    head.append("stopped growing because")
    return (f"<h3>Top fusion opportunities ({e(last)} vs {e(comparisons[0].baseline.policy)})"
            "</h3><div class=scroll>" + html_table(head, rows, "fusions") + "</div>" + notes)
