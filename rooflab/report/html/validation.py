"""The validation report: accuracy per op class, predicted against measured kernel times
(log-log, ±10% / ±25% bands) and a histogram of the signed errors."""

from __future__ import annotations

import math
import statistics

import plotly.graph_objects as go

from rooflab.report.html.kernels import esc, wrap_hover
from rooflab.report.html.page import check_target, render_page, write_page
from rooflab.report.html.style import OP_CLASS_COLORS, OTHER_COLORS, base_layout, log_axis, time_tick
from rooflab.report.html.summary import html_table
from rooflab.units import format_bytes, format_flops, format_time


def op_color(cls: str, seen: list[str]) -> str:
    if cls in OP_CLASS_COLORS:
        return OP_CLASS_COLORS[cls]
    if cls not in seen:
        seen.append(cls)
    return OTHER_COLORS[seen.index(cls) % len(OTHER_COLORS)]


def validation_figures(vf) -> list[go.Figure]:
    """Predicted against measured kernel times (log-log, y = x with ±10% and ±25% bands,
    coloured by op class), and a histogram of the signed errors."""
    rows = [(case, sched, k) for case in vf.cases for sched, ks in case.kernels.items()
            for k in ks if k.measured_s > 0 and k.predicted_s > 0]
    classes = sorted({k.op_class for _, _, k in rows},
                     key=lambda c: (list(OP_CLASS_COLORS).index(c) if c in OP_CLASS_COLORS
                                    else 99, c))
    seen: list[str] = []
    scheds = [(case, s) for case in vf.cases for s in case.schedules
              if s.measured_s > 0 and s.predicted_s > 0]
    vals = [v for _, _, k in rows for v in (k.predicted_s, k.measured_s)]
    vals += [v for _, s in scheds for v in (s.predicted_s, s.measured_s)]
    lo, hi = (min(vals) / 2.5, max(vals) * 2.5) if vals else (1e-6, 1e-3)

    sc = go.Figure()
    for band, alpha, name in ((0.25, 0.12, "±25%"), (0.10, 0.22, "±10%")):
        sc.add_trace(go.Scatter(x=[lo, hi], y=[lo * (1 + band), hi * (1 + band)], mode="lines",
                                line=dict(width=0), hoverinfo="skip", showlegend=False,
                                legendgroup=name))
        sc.add_trace(go.Scatter(x=[lo, hi], y=[lo * (1 - band), hi * (1 - band)], mode="lines",
                                line=dict(width=0), fill="tonexty",
                                fillcolor=f"rgba(25,169,121,{alpha})", name=f"within {name}",
                                legendgroup=name, hoverinfo="skip"))
    sc.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="predicted = measured",
                            line=dict(color="#1d2733", width=1.3, dash="dash"), hoverinfo="skip"))
    for cls in classes:
        pts = [(c, s, k) for c, s, k in rows if k.op_class == cls]
        sc.add_trace(go.Scatter(
            x=[k.measured_s for *_, k in pts], y=[k.predicted_s for *_, k in pts],
            mode="markers", name=esc(cls), legendgroup="cls", legendgrouptitle_text="kernels by op class",
            marker=dict(size=9, color=op_color(cls, seen), opacity=0.85,
                        line=dict(color="white", width=1)),
            error_x=dict(type="data", symmetric=False, thickness=1, width=0,
                         array=[k.measured_p80_s - k.measured_s for *_, k in pts],
                         arrayminus=[k.measured_s - k.measured_p20_s for *_, k in pts],
                         color="rgba(60,70,80,0.35)"),
            hovertext=[_validation_hover(c, s, k) for c, s, k in pts],
            hovertemplate="%{hovertext}<extra></extra>"))
    if scheds:
        sc.add_trace(go.Scatter(
            x=[s.measured_s for _, s in scheds], y=[s.predicted_s for _, s in scheds],
            mode="markers", name="whole schedule", legendgroup="sched",
            legendgrouptitle_text="end to end",
            marker=dict(symbol="star", size=13, color="#f2c14e",
                        line=dict(color="#1d2733", width=1)),
            hovertext=[f"<b>{esc(c.case)}</b><br>schedule {esc(s.schedule)} "
                       f"({esc(s.launch)} launch)<br>predicted {format_time(s.predicted_s)} · measured "
                       f"{format_time(s.measured_s)}<br>error "
                       f"{(s.predicted_s - s.measured_s) / s.measured_s:+.1%}"
                       for c, s in scheds],
            hovertemplate="%{hovertext}<extra></extra>"))
    sc.update_layout(**base_layout(
        700, "Predicted against measured kernel time",
        xaxis=log_axis("measured time (median; whiskers: p20–p80)", lo, hi, time_tick),
        yaxis=log_axis("predicted time", lo, hi, time_tick),
        legend=dict(x=1.02, xanchor="left", y=1.0, yanchor="top", traceorder="grouped",
                    tracegroupgap=12, font=dict(size=12)),
        hovermode="closest", margin=dict(l=80, r=170, t=60, b=70)))

    hist = go.Figure()
    errs_all = [100 * k.error for *_, k in rows]
    if errs_all:
        lo_e = max(-100.0, min(errs_all))
        hi_e = min(400.0, max(errs_all))
        span = max(hi_e - lo_e, 1.0)
        size = 2.5 if span <= 60 else 5 if span <= 150 else 10 if span <= 300 else 25
    else:
        lo_e, hi_e, size = -50.0, 50.0, 5
    start = math.floor(lo_e / size) * size
    nbins = int(math.ceil((hi_e - start) / size)) + 1
    for cls in classes:           # binned here: bars need only the basic plotly.js bundle
        counts = [0] * nbins
        for _, _, k in rows:
            if k.op_class == cls:
                v = min(max(100 * k.error, -100.0), 400.0)
                counts[min(nbins - 1, max(0, int((v - start) // size)))] += 1
        edges = [start + i * size for i in range(nbins)]
        hist.add_trace(go.Bar(
            x=[e + size / 2 for e in edges], y=counts, width=[size * 0.94] * nbins, name=esc(cls),
            marker_color=op_color(cls, seen), marker_line_width=0,
            hovertext=[f"{esc(cls)}: {n} kernel{'s' if n != 1 else ''} with error "
                       f"{e:+g}% to {e + size:+g}%" for e, n in zip(edges, counts)],
            hovertemplate="%{hovertext}<extra></extra>"))
    shapes = []
    for v, dash in ((-25, "dot"), (-10, "dash"), (0, "solid"), (10, "dash"), (25, "dot")):
        shapes.append(dict(type="line", xref="x", yref="paper", x0=v, x1=v, y0=0, y1=1,
                           line=dict(color="#5f6b7a", width=1 if v else 1.5, dash=dash)))
    x_lo_h = min(-30.0, math.floor(lo_e / size) * size - size)
    x_hi_h = max(30.0, math.ceil(hi_e / size) * size + size)
    labels = [dict(x=v, y=1.0, xref="x", yref="paper", yanchor="bottom", showarrow=False,
                   text=f"{v:+d}%", font=dict(size=10, color="#5f6b7a"))
              for v in (-25, -10, 10, 25) if x_lo_h < v < x_hi_h]
    hist.update_layout(**base_layout(
        700, "Prediction error of every kernel",
        barmode="stack", shapes=shapes, annotations=labels,
        xaxis=dict(title="error = (predicted − measured) ÷ measured", ticksuffix="%",
                   range=[x_lo_h, x_hi_h], showline=True, linecolor="#5f6b7a",
                   gridcolor="#e6e9ee", zeroline=False),
        yaxis=dict(title="kernels", gridcolor="#e6e9ee"),
        legend=dict(orientation="h", x=0, xanchor="left", y=-0.14, yanchor="top",
                    traceorder="normal", font=dict(size=12)),
        margin=dict(l=70, r=20, t=60, b=130)))
    return [sc, hist]


def _validation_hover(case, sched: str, k) -> str:
    return "<br>".join([
        f"<b>{esc(k.kernel)}</b>",
        f"case: {esc(case.case)} · schedule {esc(sched)}",
        f"ops: {wrap_hover(k.ops, ' → ')}",
        f"predicted {format_time(k.predicted_s)} · measured {format_time(k.measured_s)} "
        f"(p20–p80 {format_time(k.measured_p20_s)}–{format_time(k.measured_p80_s)})",
        f"error: <b>{k.error:+.1%}</b> · predicted bound {esc(k.bound)}",
        f"{format_flops(k.flops)}, {format_bytes(k.hbm_bytes)} HBM"])


def validation_summary_html(vf) -> str:
    e = esc
    pv = vf.provenance
    ks = [k for case in vf.cases for ks in case.kernels.values() for k in ks if k.measured_s > 0]
    parts = [f"<h1>Validation · {e(pv.gpu)}</h1>",
             f"<p class=sub>spec <code>{e(pv.hardware_spec)}</code> · {pv.sm_count} SMs · driver "
             f"{e(pv.driver)} · CUDA {e(pv.cuda)} · torch {e(pv.torch)} · triton {e(pv.triton)} · "
             f"{e(pv.date)}" + (f" · git {e(pv.git_sha[:10])}" if pv.git_sha else "") + "</p>",
             f"<p class=sub><code>{e(pv.command)}</code></p>", "<h2>Summary</h2>"]

    def stats(sel) -> list[str]:
        errs = [abs(k.error) for k in sel]
        if not errs:
            return ["0", "–", "–", "–", "–"]
        return [str(len(errs)), f"{statistics.median(errs):.1%}",
                f"{sum(x <= 0.10 for x in errs) / len(errs):.0%}",
                f"{sum(x <= 0.25 for x in errs) / len(errs):.0%}", f"{max(errs):.0%}"]

    classes = sorted({k.op_class for k in ks})
    rows = [["<b>all kernels</b>"] + stats(ks)]
    rows += [[e(c)] + stats([k for k in ks if k.op_class == c]) for c in classes]
    parts.append(html_table(["op class", "kernels", "median |error|", "within ±10%",
                         "within ±25%", "worst |error|"], rows, "summary"))
    parts.append(f"<p class=dim>{len(vf.cases)} cases. Error = (predicted − measured) ÷ "
                 "measured; measured is the median of repeated runs.</p>")
    return "\n".join(parts)


def validation_html(vf) -> str:
    sc, hist = validation_figures(vf)
    parts: list[str | tuple[str, go.Figure]] = [
        validation_summary_html(vf), "<h2>Predicted against measured</h2>",
        '<div class="row">', ("rooflab-validation-scatter", sc),
        ("rooflab-validation-errors", hist), "</div>"]
    return render_page(f"rooflab validation · {vf.provenance.gpu}", parts)


def write_validation(path, validation_file, force: bool = False) -> None:
    """Write the validation report (predicted vs measured, error histogram) to `path`."""
    check_target(path, force)
    write_page(path, validation_html(validation_file), force)
