"""Where the time goes: per (folded) kernel, busy time coloured by its bound plus launch, one
panel per schedule; and every GPU and schedule's total side by side."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rooflab.cost import Prediction
from rooflab.report.html.kernels import Group, busy_bound, esc, fold, ops_text, pred_label, shorten
from rooflab.report.html.style import BOUND_COLORS, PART_NAMES, base_layout, time_unit
from rooflab.units import format_time

MAX_BREAKDOWN_ROWS = 30


def _segments(groups: list[Group]) -> list[tuple[str, dict[str, float], Group | None, int]]:
    """(label, {compute, memory, link, launch} seconds, group, count) per bar; the smallest
    groups beyond MAX_BREAKDOWN_ROWS merge into one 'other' bar."""
    if len(groups) > MAX_BREAKDOWN_ROWS:
        keep = set(map(id, sorted(groups, key=lambda g: -g.time_s)[:MAX_BREAKDOWN_ROWS - 1]))
        shown = [g for g in groups if id(g) in keep]
        rest = [g for g in groups if id(g) not in keep]
    else:
        shown, rest = groups, []
    out = []
    for g in shown:
        seg = g.busy_by_bound()
        seg["launch"] = g.total("launch_s")
        out.append((esc(shorten(g.label)), seg, g, g.count))
    if rest:
        seg = {"compute": 0.0, "memory": 0.0, "link": 0.0, "launch": 0.0}
        n = 0
        for g in rest:
            for b, v in g.busy_by_bound().items():
                seg[b] += v
            seg["launch"] += g.total("launch_s")
            n += g.count
        out.append((f"other: {len(rest)} smaller kernels", seg, None, n))
    return out


def breakdown_figure(preds: Sequence[Prediction]) -> go.Figure:
    """One GPU: per (folded) kernel, its predicted time split into busy time (coloured by what
    bounds it: compute, memory or link) and launch; one panel per schedule, two side by side
    (more wrap to the next row), all on one time axis."""
    if not preds:
        raise ValueError("breakdown_figure needs at least one prediction")
    hw = preds[0].hardware
    n = len(preds)
    ncols = min(n, 2)
    nrows = -(-n // ncols)
    titles = [f"{pred_label(p, preds)} · {format_time(p.totals.time_s)}, {p.totals.kernels} kernels"
              for p in preds]
    shown_legend: set[str] = set()
    all_segs = [_segments(fold(p.kernels)) for p in preds]
    bars = max(len(segs) for segs in all_segs)
    panel_px = 22 * bars + 90
    height = max(280, 90 + nrows * panel_px)
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=titles,
                        horizontal_spacing=0.3 if ncols > 1 else 0.0,
                        vertical_spacing=min(0.3, 90 / height) if nrows > 1 else 0.0)
    scale, unit = time_unit(max((sum(s[1].values()) for segs in all_segs for s in segs),
                                default=1.0))
    for i, (p, segs) in enumerate(zip(preds, all_segs)):
        row, col = i // ncols + 1, i % ncols + 1
        labels = [s[0] for s in segs]
        for part in ("compute", "memory", "link", "launch"):
            vals = [s[1][part] * scale for s in segs]
            if not any(s[1][part] for segs_ in all_segs for s in segs_):
                continue
            hover = []
            for lab, seg, g, cnt in segs:
                tot = sum(seg.values())
                head = f"<b>{esc(g.label) if g else lab}</b>"
                detail = ""
                if g is not None:
                    detail = (f"<br>ops: {ops_text(g.first)}<br>compute "
                              f"{format_time(g.total('compute_s'))}, memory "
                              f"{format_time(g.total('memory_s'))}, launch "
                              f"{format_time(g.total('launch_s'))}"
                              + (f" (all {cnt})" if cnt > 1 else "") +
                              f"<br>bound: {g.bound}")
                hover.append(f"{head}<br>{part}: {format_time(seg[part])} of "
                             f"{format_time(tot)}{detail}")
            fig.add_trace(go.Bar(
                y=labels, x=vals, orientation="h", name=PART_NAMES[part], legendgroup=part,
                showlegend=part not in shown_legend, marker_color=BOUND_COLORS[part],
                marker_line_width=0, hovertext=hover,
                hovertemplate="%{hovertext}<extra></extra>"), row=row, col=col)
            shown_legend.add(part)
        fig.update_yaxes(autorange="reversed", automargin=True, tickfont=dict(size=11),
                         row=row, col=col)
        fig.update_xaxes(title_text=f"predicted time ({unit})", gridcolor="#e6e9ee",
                         showline=True, linecolor="#5f6b7a", rangemode="tozero",
                         title_standoff=6, row=row, col=col)
    for i in range(1, n):
        fig.update_xaxes(matches="x", row=i // ncols + 1, col=i % ncols + 1)
    fig.update_layout(**base_layout(
        height, f"Time per kernel · {esc(hw.display_name)} ({esc(hw.name)})",
        barmode="stack", bargap=0.25,
        legend=dict(orientation="h", x=1.0, xanchor="right", y=0.995, yanchor="top",
                    yref="container", traceorder="normal", font=dict(size=12)),
        margin=dict(l=20, r=30, t=110, b=60)))
    for ann in fig.layout.annotations:          # subplot titles: left-aligned, smaller
        ann.update(font=dict(size=13), yshift=6)
    return fig


def totals_figure(preds: Sequence[Prediction]) -> go.Figure:
    """Every GPU and schedule side by side: total predicted time, split by what bounds it."""
    xs = [[esc(p.hardware.name) for p in preds],
          [pred_label(p, [q for q in preds if q.hardware.name == p.hardware.name]).replace(" · ", "<br>")
           for p in preds]]
    parts: dict[str, list[float]] = {b: [] for b in ("compute", "memory", "link", "launch")}
    for p in preds:
        seg = {"compute": 0.0, "memory": 0.0, "link": 0.0}
        for k in p.kernels:
            seg[busy_bound(k)] += max(k.compute_s, k.memory_s, k.link_s)
        for b in ("compute", "memory", "link"):
            parts[b].append(seg[b])
        parts["launch"].append(p.totals.launch_s)
    scale, unit = time_unit(max(p.totals.time_s for p in preds))
    fig = go.Figure()
    for b, vals in parts.items():
        if not any(vals):
            continue
        hover = [f"<b>{esc(p.hardware.name)} · {esc(p.policy)} ({esc(p.launch)} launch)</b><br>{b}: "
                 f"{format_time(v)} of {format_time(p.totals.time_s)}" for p, v in zip(preds, vals)]
        fig.add_trace(go.Bar(x=xs, y=[v * scale for v in vals], name=PART_NAMES[b],
                             marker_color=BOUND_COLORS[b],
                             marker_line_width=0, hovertext=hover,
                             hovertemplate="%{hovertext}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=xs, y=[p.totals.time_s * scale for p in preds], mode="text", showlegend=False,
        text=[f"{format_time(p.totals.time_s)}<br>{p.totals.bound}" for p in preds],
        textposition="top center", textfont=dict(size=11, color="#1d2733"), hoverinfo="skip"))
    ymax = max(p.totals.time_s for p in preds) * scale * 1.25
    fig.update_layout(**base_layout(
        400, "Total predicted time per GPU and schedule", barmode="stack", bargap=0.35,
        yaxis=dict(title=f"predicted time ({unit})", range=[0, ymax], gridcolor="#e6e9ee"),
        xaxis=dict(showline=True, linecolor="#5f6b7a", tickangle=0),
        legend=dict(orientation="h", x=1.0, xanchor="right", y=1.0, yanchor="bottom",
                    traceorder="normal"),
        margin=dict(l=80, r=30, t=80, b=70)))
    return fig
