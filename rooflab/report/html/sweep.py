"""The sweep report: a `ServeTable` (what `rooflab serve` / `rooflab sweep` found) as the plots a
capacity planner expects: TPOT and TTFT against batch, throughput against request latency with
the Pareto front, memory against batch with the HBM line, and where each configuration stops
fitting; plus the best configuration per GPU. It reads the table and prices nothing.

A *series* is every row of one GPU that differs only in batch (same schedule, launch, variant,
input and output length): one line in the batch plots. When the series of a GPU differ only in
the GPU, one panel holds them all, coloured by GPU; otherwise each GPU has a panel (all on the
same axes), colour tells the input/output lengths apart and dash the schedule, launch and
variant. Configurations that do not fit have NaN times: they are never drawn as values but as
crosses along the bottom of the batch plots (hover for why).
"""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from rooflab.errors import RooflabError
from rooflab.report.html.kernels import esc
from rooflab.report.html.page import check_target, render_page, write_page
from rooflab.report.html.style import (OTHER_COLORS, SCHEDULE_COLORS, SCHEDULE_SYMBOLS,
                                       base_layout, log_axis, plain_tick, si, time_tick,
                                       to_rgba)
from rooflab.report.html.summary import html_table
from rooflab.sweep_table import ServeTable, pareto
from rooflab.units import format_bytes, format_time

DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
MEMORY_PARTS = (("weights_bytes", "weights", "#3b6fb6"), ("kv_cache_bytes", "KV cache", "#e8743b"),
                ("activation_bytes", "activations", "#19a979"),
                ("workspace_bytes", "workspace", "#a8adb4"))
HBM_COLOR = "#c0392b"
MAX_FRONT_LABELS = 12        # a front of more points is not labelled with its batches
MAX_MARKED = 24               # a series of more points is drawn without markers
MAX_STOP_ROWS = 40            # rows of the "where it stops fitting" table
MEMORY_CLIP = 3.0             # the memory axis ends at this many times the largest HBM
_KEY = ("schedule", "launch", "variant", "input_tokens", "output_tokens")


class _Series:
    """The rows of one GPU that differ only in batch, batch ascending, and how it is drawn."""

    def __init__(self, gpu: str, gi: int, key: tuple, k: int, rows: np.ndarray, label: str):
        self.gpu, self.gi, self.key, self.k, self.rows, self.label = gpu, gi, key, k, rows, label
        self.color, self.dash, self.symbol = "#1d2733", "solid", "circle"

    @property
    def name(self) -> str:
        """Escaped: the GPU and what sets this series apart ("h200 · in 2048")."""
        return esc(self.gpu) + (f" · {self.label}" if self.label else "")

    @property
    def group(self) -> str:
        """Its legend group: one entry per key across the GPU panels (per GPU if no key)."""
        return f"k{self.k}" if self.label else f"gpu{self.gi}"


def _gpus(table: ServeTable) -> list[str]:
    return list(dict.fromkeys(str(g) for g in table.columns["gpu"].tolist()))


def _on(table: ServeTable, gpu: str) -> np.ndarray:
    """Mask of the rows of `gpu` (compared as Python strings: numpy's == drops trailing NULs)."""
    return np.array([str(v) == gpu for v in table.columns["gpu"].tolist()], dtype=bool)


def _label_parts(table: ServeTable) -> list[str]:
    """The key columns that vary over the table (a label names only those)."""
    return [c for c in _KEY if len(set(table.columns[c].tolist())) > 1]


def _key_label(table: ServeTable, i: int, parts: list[str]) -> str:
    c = table.columns
    bits = []
    for p in parts:
        if p == "input_tokens":
            bits.append(f"in {int(c[p][i])}")
        elif p == "output_tokens":
            bits.append(f"out {int(c[p][i])}")
        else:
            bits.append(esc(c[p][i]) or "–")
    return " · ".join(bits)


def _series(table: ServeTable) -> list[_Series]:
    """Series by GPU (in the order GPUs first appear), then by key: schedule, launch and variant
    in the order they first appear, input and output lengths ascending. With one key the colour
    is the GPU's; with several the GPUs get a panel each, and the colour tells the lengths apart
    and the dash the schedule, launch and variant, alike in every panel."""
    c = table.columns
    parts = _label_parts(table)
    first: dict[str, dict] = {k: {} for k in ("schedule", "launch", "variant")}
    for k in first:
        for v in c[k].tolist():
            first[k].setdefault(v, len(first[k]))
    groups: dict[tuple, list[int]] = {}
    for i in range(len(table)):
        key = tuple(c[k][i].item() if hasattr(c[k][i], "item") else c[k][i] for k in _KEY)
        groups.setdefault((str(c["gpu"][i]),) + key, []).append(i)
    keys = sorted({g[1:] for g in groups}, key=lambda k: (first["schedule"][k[0]],
                                                          first["launch"][k[1]],
                                                          first["variant"][k[2]], k[3], k[4]))
    sizes = sorted({k[3:] for k in keys})
    kinds = list(dict.fromkeys(k[:3] for k in keys))
    palette = SCHEDULE_COLORS + OTHER_COLORS
    out = []
    for gi, gpu in enumerate(_gpus(table)):
        for ki, key in enumerate(keys):
            rows = groups.get((gpu,) + key)
            if rows is None:
                continue
            rows = np.array(sorted(rows, key=lambda i: c["batch"][i]), dtype=int)
            s = _Series(gpu, gi, key, ki, rows, _key_label(table, int(rows[0]), parts))
            if len(keys) == 1:
                s.color = palette[gi % len(palette)]
            else:
                ci, di = ((sizes.index(key[3:]), kinds.index(key[:3])) if len(sizes) > 1
                          else (kinds.index(key[:3]), 0))
                s.color = palette[ci % len(palette)]
                s.dash = DASHES[di % len(DASHES)]
                s.symbol = SCHEDULE_SYMBOLS[(ci // len(palette) + di) % len(SCHEDULE_SYMBOLS)]
            out.append(s)
    return out


def _num(v) -> float | None:
    """A value for plotly's JSON: None where not a number (a gap, never a zero), 4 digits."""
    v = float(v)
    return float(f"{v:.4g}") if math.isfinite(v) else None


def _finite(values) -> list[float]:
    return [float(v) for v in values if math.isfinite(float(v)) and float(v) > 0]


def _axis(title: str, values, fmt, suffix: str, pad: float = 1.5) -> dict:
    """A log axis (decade ticks) where the values span a decade or more, else a linear axis
    from zero; SI-prefixed ticks with `suffix` either way."""
    vals = _finite(values) or [1e-3, 1.0]
    lo, hi = min(vals), max(vals)
    if hi / lo >= 10:
        return log_axis(title, lo / pad, hi * pad, fmt)
    return dict(type="linear", title=dict(text=title, standoff=8), range=[0, hi * 1.1],
                tickformat="~s", ticksuffix=suffix, showline=True, linecolor="#5f6b7a",
                mirror=True, ticks="outside", gridcolor="#e6e9ee", zeroline=False)


def _batch_axis(table: ServeTable) -> dict:
    batches = sorted(set(int(b) for b in table.columns["batch"].tolist()))
    ax = _axis("batch (requests served together)", batches, plain_tick, "", pad=1.3)
    if len(batches) <= 12:                      # few batches: tick exactly the swept ones
        ax.update(tickmode="array", tickvals=batches, ticktext=[str(b) for b in batches])
    if ax["type"] == "linear":
        ax["range"] = [0, max(batches) * 1.08]
    return ax


def _legend() -> dict:
    return dict(x=1.01, xanchor="left", y=1.0, yanchor="top", bgcolor="rgba(255,255,255,0)",
                groupclick="togglegroup", traceorder="grouped", font=dict(size=12),
                tracegroupgap=10)


def _custom(table: ServeTable, rows: np.ndarray) -> list[list]:
    """Per row, what every hover shows: TTFT, TPOT, latency (s), tokens/s of the GPU and per
    request, memory and HBM (B)."""
    c = table.columns
    cols = ("ttft_s", "tpot_s", "latency_s", "tokens_per_s", "tokens_per_s_per_request",
            "memory_bytes", "hbm_bytes")
    return [[_num(c[k][i]) for k in cols] for i in rows]


_HOVER = ("TTFT %{customdata[0]:.3s}s · TPOT %{customdata[1]:.3s}s · latency "
          "%{customdata[2]:.3s}s<br>%{customdata[3]:,.0f} tokens/s "
          "(%{customdata[4]:,.1f} per request)<br>memory %{customdata[5]:.3s}B of "
          "%{customdata[6]:.3s}B")


class _Panels:
    """A figure of one panel per GPU (`facet`) or one panel for all, three to a row, on one
    pair of axes; which panel and axes each GPU draws on."""

    def __init__(self, gpus: list[str], facet: bool, panel_px: int, titles=None):
        self.gpus, self.facet = gpus, facet
        self.n = len(gpus) if facet else 1
        self.ncols = min(self.n, 3)
        self.nrows = -(-self.n // self.ncols)
        self.height = 110 + panel_px * self.nrows
        self.fig = make_subplots(
            rows=self.nrows, cols=self.ncols, shared_xaxes="all", shared_yaxes="all",
            subplot_titles=(titles or [esc(g) for g in gpus]) if facet else None,
            horizontal_spacing=0.035, vertical_spacing=min(0.2, 90 / self.height))

    def cell(self, gi: int) -> dict:
        p = gi if self.facet else 0
        return dict(row=p // self.ncols + 1, col=p % self.ncols + 1)

    def suffix(self, gi: int) -> str:
        """"" for the first panel's axes (x, y), "2" for the second's (x2, y2), ..."""
        p = gi if self.facet else 0
        return "" if p == 0 else str(p + 1)

    def axes(self, x: dict, y: dict) -> None:
        """Every panel's axes as `x` and `y`; titles on the bottom row and the left column."""
        x, y = dict(x), dict(y)
        x_title, y_title = x.pop("title"), y.pop("title")
        self.fig.update_xaxes(**x)
        self.fig.update_yaxes(**y)
        for col in range(1, self.ncols + 1):
            self.fig.update_xaxes(title=x_title, row=self.nrows, col=col)
        for row in range(1, self.nrows + 1):
            self.fig.update_yaxes(title=y_title, row=row, col=1)

    def layout(self, title: str, right: int) -> None:
        self.fig.update_layout(**base_layout(
            self.height, title, legend=_legend(), hovermode="closest",
            margin=dict(l=80, r=right, t=95 if self.facet else 60, b=70)))
        for ann in self.fig.layout.annotations:          # panel titles: smaller
            ann.update(font=dict(size=13))


def _does_not_fit(table: ServeTable, series: list[_Series], panels: _Panels) -> None:
    """Crosses along the bottom of each panel at every batch where some series of its GPU does
    not fit; hover lists which and why. They live on hidden 0-to-1 axes laid over the panels,
    so they never read as a value. With one panel for all GPUs, a row of crosses per GPU."""
    c = table.columns
    shown = False
    for gi, gpu in enumerate(panels.gpus):
        at: dict[int, list[str]] = {}
        for s in series:
            if s.gpu == gpu:
                for i in s.rows:
                    if not c["fits"][i]:
                        at.setdefault(int(c["batch"][i]), []).append(
                            f"{s.label or esc(gpu)}: {esc(c['why'][i]) or 'does not fit'}")
        if not at:
            continue
        xs = sorted(at)
        texts = [f"<b>{esc(gpu)} · batch {b}: does not fit</b><br>"
                 + "<br>".join(at[b][:6] + ([f"… {len(at[b]) - 6} more"] if len(at[b]) > 6
                                            else [])) for b in xs]
        sx = panels.suffix(gi)
        over = str(panels.n + (gi if panels.facet else 0) + 1)
        panels.fig.update_layout({f"yaxis{over}": dict(
            overlaying=f"y{sx}", anchor=f"x{sx}", range=[0, 1], visible=False,
            fixedrange=True)})
        color = "#5f6b7a" if panels.facet else SCHEDULE_COLORS[gi % len(SCHEDULE_COLORS)]
        panels.fig.add_trace(go.Scatter(
            x=xs, y=[0.03 + (0 if panels.facet else 0.045 * gi)] * len(xs), xaxis=f"x{sx}",
            yaxis=f"y{over}", mode="markers",
            name=("does not fit (hover for why)" if panels.facet
                  else f"{esc(gpu)}: does not fit (hover for why)"),
            legendgroup="nofit", showlegend=not (panels.facet and shown),
            marker=dict(symbol="x-thin", size=11, line=dict(color=color, width=2.2)),
            hovertext=texts, hovertemplate="%{hovertext}<extra></extra>"))
        shown = True


def _line_mode(s: _Series) -> str:
    """Markers on a line of a few points; a dense line is only a line (hover still finds it)."""
    return "lines+markers" if len(s.rows) <= MAX_MARKED else "lines"


def batch_figure(table: ServeTable, column: str, title: str, y_title: str) -> go.Figure:
    """`column` (a time in seconds) against batch: a line per series, gaps where a
    configuration does not fit, crosses along the bottom for those configurations; one panel
    per GPU when the series differ in more than the GPU, every panel on the same axes."""
    c = table.columns
    series = _series(table)
    panels = _Panels(_gpus(table), any(s.label for s in series), 420)
    shown: set[str] = set()
    for s in series:
        panels.fig.add_trace(go.Scatter(
            x=[int(c["batch"][i]) for i in s.rows], y=[_num(c[column][i]) for i in s.rows],
            mode=_line_mode(s), connectgaps=False, name=s.label or esc(s.gpu),
            legendgroup=s.group, showlegend=s.group not in shown,
            line=dict(color=s.color, dash=s.dash, width=2),
            marker=dict(symbol=s.symbol, size=8, color=s.color),
            customdata=_custom(table, s.rows),
            hovertemplate=f"<b>{s.name}</b><br>batch %{{x}}<br>{_HOVER}<extra></extra>"),
            **panels.cell(s.gi))
        shown.add(s.group)
    y = _axis(y_title, c[column], time_tick, "s")
    if y["type"] == "log":        # room under the lowest point for the crosses
        y["range"][0] -= 0.35
    panels.axes(_batch_axis(table), y)
    _does_not_fit(table, series, panels)
    panels.layout(title, 230)
    return panels.fig


def throughput_figure(table: ServeTable) -> go.Figure:
    """Output tokens/s of the GPU against request latency, every configuration that fits as a
    point; each GPU's Pareto front (no other configuration of that GPU has both lower latency
    and more tokens/s) as a line."""
    c = table.columns
    gpus = _gpus(table)
    parts = _label_parts(table)
    fig = go.Figure()
    for gi, gpu in enumerate(gpus):
        color = SCHEDULE_COLORS[gi % len(SCHEDULE_COLORS)]
        mine = np.flatnonzero(_on(table, gpu))
        ok = mine[np.isfinite(c["latency_s"][mine]) & np.isfinite(c["tokens_per_s"][mine])]
        fig.add_trace(go.Scatter(
            x=[_num(c["latency_s"][i]) for i in ok], y=[_num(c["tokens_per_s"][i]) for i in ok],
            mode="markers", name="configurations", legendgroup=f"gpu{gi}",
            legendgrouptitle_text=esc(gpu),
            marker=dict(size=7, color=to_rgba(color, 0.45), line=dict(color=color, width=1)),
            customdata=_point_data(table, ok, gpu, parts),
            hovertemplate="<b>%{customdata[0]}</b><br>batch %{customdata[1]}<br>"
                          + _shift(_HOVER, 2) + "<extra></extra>"))
        front = mine[pareto(c["latency_s"][mine], c["tokens_per_s"][mine])]
        front = front[np.argsort(c["latency_s"][front], kind="stable")]
        fig.add_trace(go.Scatter(
            x=[_num(c["latency_s"][i]) for i in front],
            y=[_num(c["tokens_per_s"][i]) for i in front],
            mode="lines+markers+text" if len(front) <= MAX_FRONT_LABELS else "lines+markers",
            text=[f"b{int(c['batch'][i])}" for i in front], textposition="top left",
            textfont=dict(size=10, color=color), name="Pareto front", legendgroup=f"gpu{gi}",
            line=dict(color=color, width=2.4, shape="hv"),
            marker=dict(size=10, color=color, symbol="diamond", line=dict(color="white", width=1)),
            customdata=_point_data(table, front, gpu, parts),
            hovertemplate="<b>Pareto: %{customdata[0]}</b><br>batch %{customdata[1]}<br>"
                          + _shift(_HOVER, 2) + "<extra></extra>"))
    fig.update_layout(**base_layout(
        560, "Throughput against request latency (configurations that fit)",
        xaxis=_axis("request latency = TTFT + (output − 1) × TPOT", c["latency_s"], time_tick,
                    "s"),
        yaxis=_axis("output tokens/s of the GPU (batch × output ÷ latency)", c["tokens_per_s"],
                    si, ""),
        legend=_legend(), hovermode="closest", margin=dict(l=80, r=200, t=60, b=70)))
    return fig


def _point_data(table: ServeTable, rows: np.ndarray, gpu: str, parts: list[str]) -> list[list]:
    """Per row: its label (GPU and what varies), its batch, then `_custom`'s columns."""
    return [[esc(gpu) + (f" · {_key_label(table, int(i), parts)}" if parts else ""),
             int(table.columns["batch"][i])] + row for i, row in zip(rows, _custom(table, rows))]


def _shift(template: str, n: int) -> str:
    """The hover template with every customdata index moved up by `n` (the label and batch
    come first)."""
    return re.sub(r"customdata\[(\d+)\]", lambda m: f"customdata[{int(m.group(1)) + n}]",
                  template)


def _largest_fit(table: ServeTable, s: _Series) -> int | None:
    """Index (into the table) of the largest batch of `s` that fits; None if none does."""
    fit = [int(i) for i in s.rows if table.columns["fits"][i]]
    return fit[-1] if fit else None


def memory_figure(table: ServeTable) -> go.Figure:
    """A panel per GPU of memory against batch: stacked weights, KV cache, activations and
    workspace of the GPU's series needing the most memory, the total of every series as a line,
    the GPU's HBM as a dashed line, and a star at the largest batch of each series that fits.
    All panels share one memory axis, cut at MEMORY_CLIP × the largest HBM."""
    c = table.columns
    series = _series(table)
    gpus = _gpus(table)
    hbm = {g: float(c["hbm_bytes"][_on(table, g)].max()) for g in gpus}
    bigs = {}
    for g in gpus:
        mine = [s for s in series if s.gpu == g]
        bigs[g] = max(mine, key=lambda s: float(c["memory_bytes"][s.rows].max()))
    titles = [f"{esc(g)} · {format_bytes(hbm[g])} allocatable"
              + (f" · stacked: {bigs[g].label}" if bigs[g].label else "") for g in gpus]
    panels = _Panels(gpus, True, 400, titles)
    fig = panels.fig
    batches = [int(b) for b in c["batch"]]
    b_lo, b_hi = min(batches), max(batches)
    y_top = min(float(c["memory_bytes"].max()), MEMORY_CLIP * max(hbm.values())) * 1.08
    y_top = max(y_top, max(hbm.values()) * 1.15)
    shown: set[str] = set()
    notes = []
    for gi, gpu in enumerate(gpus):
        cell = panels.cell(gi)
        big = bigs[gpu]
        xs = [int(c["batch"][i]) for i in big.rows]
        for k, name, color in MEMORY_PARTS:
            fig.add_trace(go.Scatter(
                x=xs, y=[int(c[k][i]) for i in big.rows], mode="lines", stackgroup=f"m{gi}",
                name=name, legendgroup=k, showlegend=gi == 0,
                legendgrouptitle_text="stacked (see each panel's title)"
                if k == MEMORY_PARTS[0][0] else None,
                line=dict(color=color, width=1), fillcolor=to_rgba(color, 0.5),
                hovertemplate=f"<b>{big.name}</b><br>batch %{{x}}: {name} %{{y:.3s}}B"
                              "<extra></extra>"), **cell)
        for s in (s for s in series if s.gpu == gpu):
            fig.add_trace(go.Scatter(
                x=[int(c["batch"][i]) for i in s.rows],
                y=[int(c["memory_bytes"][i]) for i in s.rows], mode=_line_mode(s),
                name=f"total · {s.label}" if s.label else f"total · {esc(gpu)}",
                legendgroup=s.group, showlegend=s.group not in shown,
                line=dict(color=s.color, dash=s.dash, width=2.6 if s is big else 1.6),
                marker=dict(size=5, symbol=s.symbol, color=s.color),
                customdata=[[esc(c["why"][i]) or "fits"] for i in s.rows],
                hovertemplate=f"<b>{s.name}</b><br>batch %{{x}}: total %{{y:.3s}}B<br>"
                              "%{customdata[0]}<extra></extra>"), **cell)
            shown.add(s.group)
        fig.add_trace(go.Scatter(
            x=[b_lo, b_hi], y=[hbm[gpu]] * 2, mode="lines", name="allocatable memory",
            legendgroup="hbm", showlegend=gi == 0,
            line=dict(color=HBM_COLOR, width=2, dash="dash"),
            hovertemplate=f"{esc(gpu)} allocatable {format_bytes(hbm[gpu])}<extra></extra>"),
            **cell)
        stars = [(s, _largest_fit(table, s)) for s in series if s.gpu == gpu]
        stars = [(s, i) for s, i in stars if i is not None]
        if stars:
            fig.add_trace(go.Scatter(
                x=[int(c["batch"][i]) for _, i in stars],
                y=[int(c["memory_bytes"][i]) for _, i in stars], mode="markers",
                name="largest batch that fits", legendgroup="largest", showlegend=gi == 0,
                marker=dict(symbol="star", size=14, color="#f2c14e",
                            line=dict(color="#1d2733", width=1)),
                hovertext=[f"<b>{s.name}</b><br>largest batch that fits: {int(c['batch'][i])} "
                           f"({format_bytes(c['memory_bytes'][i])} of "
                           f"{format_bytes(c['hbm_bytes'][i])})" for s, i in stars],
                hovertemplate="%{hovertext}<extra></extra>"), **cell)
        i_big = _largest_fit(table, big)
        sx = panels.suffix(gi)
        if i_big is None:
            notes.append(dict(xref=f"x{sx} domain", yref=f"y{sx}", x=0.02, y=hbm[gpu],
                              xanchor="left", yanchor="bottom", showarrow=False,
                              font=dict(size=11, color=HBM_COLOR), text="nothing fits"))
        else:                   # an arrow to the star, its text toward the middle of the panel
            x = _axis_pos(int(c["batch"][i_big]), b_lo, b_hi)
            left_half = x <= (_axis_pos(b_lo, b_lo, b_hi) + _axis_pos(b_hi, b_lo, b_hi)) / 2
            notes.append(dict(xref=f"x{sx}", yref=f"y{sx}", x=x,
                              y=int(c["memory_bytes"][i_big]), showarrow=True, arrowhead=2,
                              arrowwidth=1.2, arrowcolor="#5f6b7a", ax=45 if left_half else -45,
                              ay=-40, xanchor="left" if left_half else "right",
                              font=dict(size=11, color="#1d2733"),
                              bgcolor="rgba(255,255,255,0.8)",
                              text=f"fits up to batch {int(c['batch'][i_big])}"))
    y = dict(title=dict(text="memory on one GPU (bytes)", standoff=8), range=[0, y_top],
             tickformat="~s", ticksuffix="B", gridcolor="#e6e9ee", showline=True,
             linecolor="#5f6b7a", mirror=True, ticks="outside", zeroline=False)
    panels.axes(_batch_axis(table), y)
    panels.layout("Memory against batch: weights, KV cache, activations, workspace and the "
                  "HBM line", 230)
    for n in notes:
        fig.add_annotation(**n)
    return fig


def _axis_pos(b: int, lo: int, hi: int) -> float:
    """Where batch `b` sits on the batch axis (annotations on a log axis take log10)."""
    return math.log10(b) if hi / lo >= 10 else b


def sweep_figures(table: ServeTable) -> list[go.Figure]:
    """TPOT against batch, TTFT against batch, throughput against latency, memory against batch."""
    model = esc(table.meta.get("model", "model"))
    return [batch_figure(table, "tpot_s", f"TPOT against batch · {model}",
                         "TPOT: time per output token (mean decode step)"),
            batch_figure(table, "ttft_s", f"TTFT against batch · {model}",
                         "TTFT: time to first token (prefill of the batch)"),
            throughput_figure(table), memory_figure(table)]


def _config_text(table: ServeTable, i: int, parts: list[str]) -> str:
    c = table.columns
    bits = [f"batch <b>{int(c['batch'][i])}</b>", f"in {int(c['input_tokens'][i])}",
            f"out {int(c['output_tokens'][i])}"]
    bits += [esc(c[p][i]) for p in ("schedule", "launch", "variant") if p in parts and c[p][i]]
    return " · ".join(bits)


def best_html(table: ServeTable) -> str:
    """Per GPU, the configuration with the most output tokens/s among those that fit (ties:
    the first in the table); a GPU where nothing fits says why for its smallest configuration."""
    c = table.columns
    parts = _label_parts(table)
    rows = []
    for gpu in _gpus(table):
        mine = np.flatnonzero(_on(table, gpu))
        ok = mine[c["fits"][mine] & np.isfinite(c["tokens_per_s"][mine])]
        if len(ok) == 0:
            i = int(mine[np.argmin(c["memory_bytes"][mine])])
            rows.append([f"<b>{esc(gpu)}</b>", "nothing fits", "–", "–", "–", "–", "–",
                         f"<span class=dim>{esc(c['why'][i])}</span>"])
            continue
        i = int(ok[np.argmax(c["tokens_per_s"][ok])])
        rows.append([f"<b>{esc(gpu)}</b>", _config_text(table, i, parts),
                     f"<b>{c['tokens_per_s'][i]:,.0f}</b>",
                     f"{c['tokens_per_s_per_request'][i]:,.1f}", format_time(c["ttft_s"][i]),
                     format_time(c["tpot_s"][i]), format_time(c["latency_s"][i]),
                     f"{format_bytes(c['memory_bytes'][i])} of {format_bytes(c['hbm_bytes'][i])}"])
    head = ["GPU", "best configuration", "output tokens/s", "tokens/s per request", "TTFT",
            "TPOT", "request latency", "memory"]
    return "<div class=scroll>" + html_table(head, rows, "summary") + "</div>"


def stops_html(table: ServeTable) -> str:
    """Per series: the largest batch swept that fits, the first that does not, and why."""
    c = table.columns
    rows = []
    series = _series(table)
    for s in series[:MAX_STOP_ROWS]:
        i_fit = _largest_fit(table, s)
        after = [int(i) for i in s.rows if not c["fits"][i]
                 and (i_fit is None or c["batch"][i] > c["batch"][i_fit])]
        rows.append([f"<b>{esc(s.gpu)}</b>", s.label or "–",
                     "none" if i_fit is None else str(int(c["batch"][i_fit])),
                     str(int(c["batch"][after[0]])) if after else "all fit",
                     f"<span class=dim>{esc(c['why'][after[0]])}</span>" if after else ""])
    more = len(series) - MAX_STOP_ROWS
    tail = (f"<p class=dim>… and {more} more series: the CSV and JSON output list every "
            "configuration.</p>" if more > 0 else "")
    return ("<div class=scroll>" + html_table(["GPU", "configuration", "largest batch that fits",
                                                "first batch that does not", "why"], rows,
                                               "summary") + "</div>" + tail)


def _range(values) -> str:
    vals = sorted(set(int(v) for v in values))
    return str(vals[0]) if len(vals) == 1 else (", ".join(map(str, vals)) if len(vals) <= 6
                                                else f"{vals[0]}–{vals[-1]} ({len(vals)} values)")


def sweep_parts(table: ServeTable) -> list[str | tuple[str, go.Figure]]:
    """The sections of the sweep report, in order."""
    if len(table) == 0:
        raise RooflabError("nothing to report: the sweep has no configurations")
    c = table.columns
    tpot, ttft, thr, mem = sweep_figures(table)
    model = table.meta.get("model", "model")
    n_fit = int(np.count_nonzero(c["fits"]))
    gpus = ", ".join(esc(g) for g in _gpus(table))
    meta = " · ".join(f"{esc(k)} {esc(v)}" for k, v in table.meta.items()
                      if k != "model" and isinstance(v, (str, int, float)))
    head = [f"<h1>Serving sweep · {esc(model)}</h1>",
            f"<p class=sub>{len(table)} configurations ({n_fit} fit) on {gpus} · batch "
            f"{_range(c['batch'])} · input {_range(c['input_tokens'])} tokens · output "
            f"{_range(c['output_tokens'])} tokens" + (f" · {meta}" if meta else "") +
            " · rooflab predictions (a model, not a measurement)</p>",
            "<p class=dim>TTFT is the prefill of the batch's prompts; TPOT the mean decode step "
            "over the output as the KV cache grows; request latency TTFT + (output − 1) × TPOT; "
            "throughput the GPU's output tokens per second, batch × output ÷ latency. A "
            "configuration that does not fit in HBM has no time: the batch plots draw it as a "
            "cross along the bottom (hover for why), never as a value.</p>",
            "<h2>Best configuration per GPU</h2>",
            "<p class=dim>The most output tokens/s among the configurations that fit.</p>",
            best_html(table),
            "<h2>Latency against batch</h2>",
            ("rooflab-sweep-tpot", tpot), ("rooflab-sweep-ttft", ttft),
            "<h2>Throughput against latency</h2>",
            "<p class=dim>Each point is a configuration that fits; the line joins each GPU's "
            "Pareto front, the configurations no other of that GPU beats on both request "
            "latency and tokens/s.</p>",
            ("rooflab-sweep-throughput", thr),
            "<h2>Memory and where each configuration stops fitting</h2>",
            "<p class=dim>Per GPU, the memory of the series that needs the most, stacked "
            "(weights, KV cache at its dtype, activations, workspace), the total of every other "
            "series as a line, and the GPU's HBM; stars mark the largest batch that fits. The "
            f"axis stops at {MEMORY_CLIP:g}× HBM.</p>",
            ("rooflab-sweep-memory", mem),
            "<h3>Where each configuration stops fitting</h3>", stops_html(table)]
    return head


def render_sweep(table: ServeTable) -> str:
    """The sweep report as one self-contained HTML page (plotly.js embedded: opens offline)."""
    return render_page(f"rooflab sweep · {table.meta.get('model', 'model')}", sweep_parts(table))


def write_sweep(path, table: ServeTable, force: bool = False) -> None:
    """Write the sweep report to `path` (never over an existing file unless `force`)."""
    check_target(path, force)
    write_page(path, render_sweep(table), force)
