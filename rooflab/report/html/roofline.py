"""The roofline figure: one GPU's kernels on log-log intensity / achieved-FLOP/s axes, its
memory and compute roofs, and arrows from the kernels a fusion replaces to the fused kernel."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from rooflab.compare import Comparison
from rooflab.cost import Prediction
from rooflab.graph import folded_name
from rooflab.hardware import Hardware
from rooflab.report.html.kernels import (Group, esc, fold, ops_text, pred_label,
                                         shorten, wrap_hover)
from rooflab.report.html.style import (ROOF_COLORS, SCHEDULE_COLORS, SCHEDULE_SYMBOLS,
                                       base_layout, log_axis, plain_tick, si, to_rgba)
from rooflab.report.table import unit_label
from rooflab.units import format_bytes, format_flops, format_intensity, format_rate, format_time

TOP_ARROWS = 12


@dataclass(frozen=True)
class Roof:
    label: str
    kind: str            # hbm | l2 | tensor | vector
    peak: float          # bytes/s for memory roofs, FLOP/s for compute roofs
    achievable: float | None


def roofs(hw: Hardware, preds: Sequence[Prediction]) -> tuple[list[Roof], list[Roof]]:
    """(memory roofs, compute roofs) for the dtypes the kernels of `preds` use on `hw`."""
    mem = [Roof(f"HBM {format_rate(hw.hbm_bytes_per_s, 'B/s')}", "hbm", hw.hbm_bytes_per_s,
                hw.hbm_rate)]
    if hw.l2_bytes_per_s:
        mem.append(Roof(f"L2 {format_rate(hw.l2_bytes_per_s, 'B/s')}", "l2", hw.l2_bytes_per_s,
                        None))
    dtypes = sorted({d for p in preds for k in p.kernels for d in k.tensor_dtypes
                     if d in hw.tensor_flops_per_s}, key=lambda d: -hw.tensor_flops_per_s[d])
    comp = [Roof(f"{d} tensor {format_rate(hw.tensor_flops_per_s[d])}", "tensor",
                 hw.tensor_flops_per_s[d], hw.tensor_rate(d)) for d in dtypes]
    comp.append(Roof(f"fp32 vector {format_rate(hw.vector_flops_per_s['fp32'])}", "vector",
                     hw.vector_flops_per_s["fp32"], hw.vector_rate))
    return mem, comp


def _group_hover(g: Group, pred: Prediction, extra: str = "") -> str:
    k, n = g.first, g.count
    flops, hbm, t = g.flops, g.hbm_bytes, g.time_s
    inten = flops / hbm if hbm else float("inf")
    rate = flops / t if t else 0.0
    each = " each" if n > 1 else ""
    lines = [f"<b>{esc(g.label)}</b>  ·  {esc(pred.policy)}, {esc(pred.launch)} launch",
             f"ops: {ops_text(k)}",
             f"FLOPs{each}: {format_flops(flops / n)} on {unit_label(k)}",
             f"HBM{each}: {format_bytes(g.total('hbm_read_bytes') / n)} read, "
             f"{format_bytes(g.total('hbm_write_bytes') / n)} written",
             f"intensity: {format_intensity(inten)} FLOP/B  ·  achieved {format_rate(rate)}",
             f"time{each}: <b>{format_time(t / n)}</b> = max(compute "
             f"{format_time(g.total('compute_s') / n)}, memory "
             f"{format_time(g.total('memory_s') / n)}"
             + (f", link {format_time(g.total('link_s') / n)}" if k.link_bytes else "")
             + f") + launch {format_time(g.total('launch_s') / n)}",
             f"bound: <b>{esc(g.bound)}</b>"
             + (f"  ·  all {n}: {format_time(t)}, {format_flops(flops)}, "
                f"{format_bytes(hbm)}" if n > 1 else "")]
    if extra:
        lines.append(extra)
    return "<br>".join(lines)


def _fusion_sources(c: Comparison) -> dict[str, tuple[list[str], float, int]]:
    """Candidate group name -> (baseline group names it replaces, time saved, count)."""
    kernel_of = {op: k.name for k in c.baseline.kernels for op in k.ops}
    saved = {f.kernel: (f.time_saved_s, f.count) for f in c.fusions}
    out = {}
    for g in fold(c.candidate.kernels):
        if g.name not in saved:
            continue
        names: dict[str, None] = {}          # ordered and O(1) to test: a fused chain has many
        for op in g.first.ops:
            b = kernel_of.get(op)
            if b is not None:
                names.setdefault(folded_name(b))
        out[g.name] = (list(names), *saved[g.name])
    return out


def roofline_figure(preds: Sequence[Prediction], comparisons: Sequence[Comparison] = (),
                    top_arrows: int = TOP_ARROWS) -> go.Figure:
    """Log-log roofline of one GPU: every (folded) kernel of every schedule is a point at
    (FLOP per HBM byte, FLOPs / predicted time); arrows run from the unfused kernels to the
    fused kernel that replaces them (the `top_arrows` fusions that save the most time)."""
    if not preds:
        raise ValueError("roofline_figure needs at least one prediction")
    hw = preds[0].hardware
    if any(p.hardware.name != hw.name for p in preds):
        raise ValueError("roofline_figure draws one GPU; split predictions by hardware first")
    comparisons = [c for c in comparisons if c.baseline.hardware.name == hw.name]
    fig = go.Figure()
    total_time = max(p.totals.time_s for p in preds) or 1.0

    # fused-kernel hover lines and arrows come from the comparisons
    fusion_info: dict[tuple[int, str], tuple[list[str], float, int]] = {}
    sources_of = {id(c): _fusion_sources(c) for c in comparisons}
    for c in comparisons:
        for name, info in sources_of[id(c)].items():
            fusion_info[(id(c.candidate), name)] = info

    points: dict[tuple[int, str], tuple[float, float]] = {}
    radius: dict[tuple[int, str], float] = {}
    skipped: dict[str, None] = {}            # labels in order, each once
    xs_all, ys_all = [], []
    for i, p in enumerate(preds):
        xs, ys, sizes, texts = [], [], [], []
        for g in fold(p.kernels):
            flops, hbm, t = g.flops, g.hbm_bytes, g.time_s
            if not flops or not hbm or not t:
                skipped.setdefault(g.label)
                continue
            x, y = flops / hbm, flops / t
            points[(id(p), g.name)] = (x, y)
            extra = ""
            info = fusion_info.get((id(p), g.name))
            if info:
                names, saved, n = info
                extra = (f"fuses: {wrap_hover(names, ', ', max_items=8)}<br>"
                         f"saves {format_time(saved)} in all"
                         + (f" ({format_time(saved / n)} × {n})" if n > 1 else ""))
            xs.append(x)
            ys.append(y)
            sizes.append(7 + 26 * math.sqrt(t / total_time))
            radius[(id(p), g.name)] = sizes[-1] / 2
            texts.append(_group_hover(g, p, extra))
        xs_all += xs
        ys_all += ys
        color = SCHEDULE_COLORS[i % len(SCHEDULE_COLORS)]
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers", name=f"{pred_label(p, preds)} kernels",
            legendgroup="kernels", legendgrouptitle_text="kernels (area ∝ share of time)",
            marker=dict(symbol=SCHEDULE_SYMBOLS[i % len(SCHEDULE_SYMBOLS)], size=sizes,
                        color=to_rgba(color, 0.28 if i == 0 else 0.85),
                        line=dict(color=color if i == 0 else "white", width=1.6 if i == 0 else 1)),
            hovertext=texts, hovertemplate="%{hovertext}<extra></extra>"))

    mem, comp = roofs(hw, preds)
    top = max(r.peak for r in comp)
    if not xs_all:
        xs_all, ys_all = [1.0], [top / 1e3]
    x_lo = min(min(xs_all), 0.1) / 3
    x_hi = max(max(xs_all), top / hw.hbm_bytes_per_s) * 8
    y_lo = min(ys_all) / 4
    y_hi = top * 2.5
    x_lo = max(x_lo, y_lo / hw.hbm_bytes_per_s / 10)
    _draw_roofs(fig, mem, comp, (x_lo, x_hi), y_lo)

    # arrows: baseline kernels -> the fused kernel, the fusions that save most first
    annotations = []
    per_cmp = max(3, top_arrows // max(1, len(comparisons)))
    for c in comparisons:
        ranked = sorted(sources_of[id(c)].items(), key=lambda kv: -kv[1][1])[:per_cmp]
        for name, (sources, _saved, _n) in ranked:
            head = points.get((id(c.candidate), name))
            if head is None:
                continue
            tails = [points[(id(c.baseline), s)] for s in sources
                     if (id(c.baseline), s) in points]
            if len(tails) < 2:      # the other kernels have no point: the arrow would mislead
                continue
            drawn = set()           # tails in one 0.02-decade cell draw one arrow, not thousands
            for tail in tails:
                cell = (round(math.log10(tail[0]) / 0.02), round(math.log10(tail[1]) / 0.02))
                if _close(tail, head) or cell in drawn:
                    continue
                drawn.add(cell)
                annotations.append(dict(
                    x=math.log10(head[0]), y=math.log10(head[1]), xref="x", yref="y",
                    ax=math.log10(tail[0]), ay=math.log10(tail[1]), axref="x", ayref="y",
                    showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=1.3,
                    arrowcolor="rgba(70,80,95,0.55)", text="",
                    standoff=radius[(id(c.candidate), name)] + 1, startstandoff=3))
    if annotations:
        c0 = comparisons[0]
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines",
                                 name=f"fusion ({esc(c0.baseline.policy)} → "
                                      f"{esc(c0.candidate.policy)})",
                                 line=dict(color="rgba(70,80,95,0.7)", width=1.5),
                                 legendgroup="kernels", hoverinfo="skip"))
    notes = []
    if skipped:
        notes.append(f"Not plotted (no FLOPs or no HBM traffic, so no point on a log-log "
                     f"roofline; see the time breakdown): {shorten(', '.join(skipped), 150)}")
    lay = base_layout(
        620, f"Roofline · {esc(hw.display_name)} ({esc(hw.name)})",
        xaxis=log_axis("arithmetic intensity (FLOP per HBM byte)", x_lo, x_hi, plain_tick),
        yaxis=log_axis("achieved FLOP/s (FLOPs ÷ predicted time)", y_lo, y_hi,
                        lambda v: si(v)),
        legend=dict(x=1.01, xanchor="left", y=1.0, yanchor="top", bgcolor="rgba(255,255,255,0)",
                    groupclick="toggleitem", font=dict(size=12), tracegroupgap=14),
        hovermode="closest", showlegend=True)
    lay["margin"] = dict(l=80, r=250, t=60, b=90 if notes else 60)
    if notes:
        annotations.append(dict(text=esc(notes[0]), xref="paper", yref="paper", x=0,
                                y=-0.13, xanchor="left", yanchor="top", showarrow=False,
                                font=dict(size=11, color="#5f6b7a")))
    # one layout update: add_annotation per arrow re-validates all earlier ones (quadratic)
    fig.update_layout(**lay, annotations=annotations)
    fig.layout.meta = {"skipped": list(skipped),
                       "arrows": len(annotations) - (1 if notes else 0)}
    return fig


def _close(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return (abs(math.log10(a[0] / b[0])) < 0.02 and abs(math.log10(a[1] / b[1])) < 0.02)


def _draw_roofs(fig: go.Figure, mem: list[Roof], comp: list[Roof], xr: tuple[float, float],
                y_lo: float) -> None:
    """Memory roofs are slopes (bytes/s × intensity), compute roofs ceilings from the ridge."""
    x_lo, x_hi = xr
    top = max(r.peak for r in comp)
    top_a = max(r.achievable or r.peak for r in comp)
    hbm = mem[0]
    for r in mem:
        color = ROOF_COLORS[r.kind]
        ridge = top / r.peak
        x0 = max(x_lo, y_lo / r.peak)
        fig.add_trace(go.Scatter(
            x=[x0, ridge], y=[r.peak * x0, top], mode="lines", name=r.label,
            legendgroup="roofs", legendgrouptitle_text="roofs (dashed: peak; solid: achievable)",
            line=dict(color=color, width=1.6, dash="dash"),
            hovertemplate=f"{esc(r.label)} peak<br>intensity %{{x:.3g}} FLOP/B → "
                          f"%{{y:.3s}}FLOP/s<extra></extra>"))
        if r.achievable:
            ridge_a = top_a / r.achievable
            x0a = max(x_lo, y_lo / r.achievable)
            fig.add_trace(go.Scatter(
                x=[x0a, ridge_a], y=[r.achievable * x0a, top_a], mode="lines",
                name=f"{r.label.split()[0]} achievable {format_rate(r.achievable, 'B/s')}",
                legendgroup="roofs", showlegend=True,
                line=dict(color=color, width=2.4),
                hovertemplate=f"{r.label.split()[0]} achievable "
                              f"({format_rate(r.achievable, 'B/s')})<br>intensity %{{x:.3g}} "
                              f"FLOP/B → %{{y:.3s}}FLOP/s<extra></extra>"))
    for r in comp:
        color = ROOF_COLORS[r.kind]
        ridge = r.peak / hbm.peak
        fig.add_trace(go.Scatter(
            x=[ridge, x_hi], y=[r.peak, r.peak], mode="lines", name=r.label,
            legendgroup="roofs", line=dict(color=color, width=1.6, dash="dash"),
            opacity=1.0 if r.kind == "tensor" else 0.9,
            hovertemplate=f"{esc(r.label)} peak<extra></extra>"))
        if r.achievable:
            ridge_a = r.achievable / hbm.achievable if hbm.achievable else ridge
            fig.add_trace(go.Scatter(
                x=[ridge_a, x_hi], y=[r.achievable, r.achievable], mode="lines",
                name=f"{r.label.rsplit(' ', 1)[0].rsplit(' ', 1)[0]} achievable "
                     f"{format_rate(r.achievable)}",
                legendgroup="roofs", line=dict(color=color, width=2.4),
                hovertemplate=f"{esc(r.label)}: achievable "
                              f"{format_rate(r.achievable)}<extra></extra>"))
