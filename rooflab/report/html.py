"""Interactive HTML reports: plotly figures joined into one self-contained file (docs/reports.md).

The figure builders are pure: they read `Prediction`, `KernelCost`, `Comparison` and
`ValidationFile` objects and return `go.Figure`s or HTML text; nothing here prices anything.
`write_predictions` and `write_validation` join them into one file with plotly.js embedded once
(no CDN: it opens offline) and never overwrite an existing file unless `force`.

Repeated-block kernels (names that differ only in `[i]`) fold into one point or bar with a
count, as the terminal table folds them, so an 80-layer model stays small and readable.
"""

from __future__ import annotations

import html as _html
import math
import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

from rooflab import __version__
from rooflab.compare import Comparison
from rooflab.cost import KernelCost, Prediction
from rooflab.errors import RooflabError
from rooflab.hardware import Hardware
from rooflab.report.table import unit_label
from rooflab.units import format_bytes, format_flops, format_intensity, format_rate, format_time

_BLOCK_INDEX = re.compile(r"\[\d+\]")

FONT = "Inter, 'Segoe UI', 'Helvetica Neue', Arial, 'Liberation Sans', sans-serif"
SCHEDULE_COLORS = ["#3b6fb6", "#e8743b", "#19a979", "#945ecf", "#d64550", "#13a4b4"]
SCHEDULE_SYMBOLS = ["circle", "diamond", "square", "triangle-up", "star", "hexagon"]
PART_NAMES = {"compute": "compute-bound", "memory": "memory-bound", "link": "link-bound",
              "launch": "launch overhead"}
BOUND_COLORS = {"compute": "#3b6fb6", "memory": "#e8743b", "link": "#945ecf",
                "launch": "#a8adb4"}
OP_CLASS_COLORS = {"gemm": "#3b6fb6", "attention": "#945ecf", "pointwise": "#e8743b",
                   "reduction": "#19a979", "quantized": "#d64550", "gather": "#13a4b4"}
_OTHER_COLORS = ["#8c6d31", "#6b6ecf", "#bd9e39", "#7f7f7f"]
ROOF_COLORS = {"hbm": "#c0392b", "l2": "#d68910", "tensor": "#1f4e79", "vector": "#117864"}
PLOTLY_CONFIG = {"displaylogo": False, "responsive": True,
                 "modeBarButtonsToRemove": ["lasso2d", "select2d"],
                 "toImageButtonOptions": {"format": "png", "scale": 2}}
VENDOR = Path(__file__).resolve().parent / "vendor"
BASIC_BUNDLE_VERSION = "4.1.1"       # vendor/plotly-basic.min.js (see vendor/README.md)
MAX_BREAKDOWN_ROWS = 30
TOP_ARROWS = 12


# ------------------------------------------------------------------------------ folding
@dataclass
class Group:
    """The kernels of one schedule that differ only in block index, summed."""
    name: str
    kernels: list[KernelCost] = field(default_factory=list)

    @property
    def first(self) -> KernelCost:
        return self.kernels[0]

    @property
    def count(self) -> int:
        return len(self.kernels)

    @property
    def label(self) -> str:
        return self.name + (f" ×{self.count}" if self.count > 1 else "")

    def total(self, attr: str) -> float:
        return sum(getattr(k, attr) for k in self.kernels)

    @property
    def flops(self) -> int:
        return sum(k.flops for k in self.kernels)

    @property
    def hbm_bytes(self) -> int:
        return sum(k.hbm_bytes for k in self.kernels)

    @property
    def time_s(self) -> float:
        return sum(k.time_s for k in self.kernels)

    def busy_by_bound(self) -> dict[str, float]:
        """Busy time (max of compute, memory, link), filed under whichever is largest."""
        out = {"compute": 0.0, "memory": 0.0, "link": 0.0}
        for k in self.kernels:
            out[_busy_bound(k)] += max(k.compute_s, k.memory_s, k.link_s)
        return out

    @property
    def bound(self) -> str:
        by: dict[str, float] = {}
        for k in self.kernels:
            by[k.bound] = by.get(k.bound, 0.0) + k.time_s
        return max(by, key=by.get)


def _busy_bound(k: KernelCost) -> str:
    parts = {"compute": k.compute_s, "memory": k.memory_s, "link": k.link_s}
    return max(parts, key=parts.get)


def fold(kernels: Sequence[KernelCost]) -> list[Group]:
    """Groups in execution order; kernels whose names differ only in `[i]` share one."""
    groups: dict[str, Group] = {}
    for k in kernels:
        key = _BLOCK_INDEX.sub("[*]", k.name)
        groups.setdefault(key, Group(key)).kernels.append(k)
    return list(groups.values())


def _label(p: Prediction, preds: Sequence[Prediction]) -> str:
    """A prediction's name among its neighbours: the schedule, plus the launch mode if they vary."""
    launches = {q.launch for q in preds}
    return p.policy + (f" · {p.launch}" if len(launches) > 1 else "")


def _by_gpu(preds: Sequence[Prediction]) -> dict[str, list[Prediction]]:
    out: dict[str, list[Prediction]] = {}
    for p in preds:
        out.setdefault(p.hardware.name, []).append(p)
    return out


def _slug(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-") or "x"


def _wrap(items: Sequence[str], sep: str, width: int = 70, max_items: int = 24) -> str:
    """Join items into <br>-separated lines of at most `width` characters (hover text)."""
    items = list(items)
    extra = len(items) - max_items
    if extra > 0:
        items = items[:max_items] + [f"… +{extra} more"]
    lines, cur = [], ""
    for it in items:
        piece = it if not cur else sep + it
        if cur and len(cur) + len(piece) > width:
            lines.append(cur + sep.rstrip())
            cur = it
        else:
            cur += piece
    lines.append(cur)
    return "<br>   ".join(_html.escape(line) for line in lines)


def _short(name: str, n: int = 44) -> str:
    return name if len(name) <= n else name[: n - 12] + "…" + name[-11:]


def _ops_text(k: KernelCost) -> str:
    return _wrap(list(k.kinds), " → ")


# ------------------------------------------------------------------------------ axes
def _decade_ticks(lo: float, hi: float, fmt) -> dict:
    """Ticks at every decade (every other one past 10 decades; 1-2-5 under 4 decades)."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    step = 1 if b - a <= 10 else 2
    mantissas = (1, 2, 5) if math.log10(hi / lo) < 4 else (1,)
    vals = [m * 10.0 ** e for e in range(a, b + 1, step) for m in mantissas]
    vals = [v for v in vals if lo <= v <= hi]
    return dict(tickmode="array", tickvals=vals, ticktext=[fmt(v) for v in vals])


def _si(v: float, unit: str = "") -> str:
    """1e12 -> '1T', 3e-6 -> '3µ' (axis ticks: short, no spaces)."""
    if v == 0:
        return "0" + unit
    for scale, p in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"),
                     (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")):
        if abs(v) >= scale * 0.9999:
            x = v / scale
            return f"{x:.3g}{p}{unit}"
    return f"{v:.1e}{unit}"


def _plain(v: float) -> str:
    """Intensity ticks: 0.01, 0.1, 1, 10, 100, 1k, 10k."""
    if v >= 1000:
        return _si(v)
    return f"{v:g}"


def time_unit(max_s: float) -> tuple[float, str]:
    """(scale, unit) that shows times up to `max_s` without long decimals: 1e3, 'ms'."""
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if max_s * scale >= 1:
            return scale, unit
    return 1e9, "ns"


def _time_tick(v: float) -> str:
    return _si(v, "s")


def _base_layout(height: int, title: str | None = None, **kw) -> dict:
    lay = dict(
        height=height, template="plotly_white",
        font=dict(family=FONT, size=13, color="#1d2733"),
        margin=dict(l=80, r=30, t=70 if title else 40, b=70),
        hoverlabel=dict(align="left", namelength=-1,
                        font=dict(family=FONT, size=12, color="#1d2733"),
                        bgcolor="rgba(255,255,255,0.97)", bordercolor="#8a94a3"),
        paper_bgcolor="white", plot_bgcolor="white",
    )
    if title:
        lay["title"] = dict(text=title, x=0.0, xanchor="left", font=dict(size=16))
    lay.update(kw)
    return lay


def _log_axis(title: str, lo: float, hi: float, fmt) -> dict:
    return dict(type="log", title=dict(text=title, standoff=8),
                range=[math.log10(lo), math.log10(hi)], showline=True, linecolor="#5f6b7a",
                mirror=True, ticks="outside", gridcolor="#e6e9ee", zeroline=False,
                **_decade_ticks(lo, hi, fmt))


# ------------------------------------------------------------------------------ roofline
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
    lines = [f"<b>{_html.escape(g.label)}</b>  ·  {pred.policy}, {pred.launch} launch",
             f"ops: {_ops_text(k)}",
             f"FLOPs{each}: {format_flops(flops / n)} on {unit_label(k)}",
             f"HBM{each}: {format_bytes(g.total('hbm_read_bytes') / n)} read, "
             f"{format_bytes(g.total('hbm_write_bytes') / n)} written",
             f"intensity: {format_intensity(inten)} FLOP/B  ·  achieved {format_rate(rate)}",
             f"time{each}: <b>{format_time(t / n)}</b> = max(compute "
             f"{format_time(g.total('compute_s') / n)}, memory "
             f"{format_time(g.total('memory_s') / n)}"
             + (f", link {format_time(g.total('link_s') / n)}" if k.link_bytes else "")
             + f") + launch {format_time(g.total('launch_s') / n)}",
             f"bound: <b>{g.bound}</b>"
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
        names = []
        for op in g.first.ops:
            b = kernel_of.get(op)
            if b is not None:
                key = _BLOCK_INDEX.sub("[*]", b)
                if key not in names:
                    names.append(key)
        out[g.name] = (names, *saved[g.name])
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
    for c in comparisons:
        for name, info in _fusion_sources(c).items():
            fusion_info[(id(c.candidate), name)] = info

    points: dict[tuple[int, str], tuple[float, float]] = {}
    radius: dict[tuple[int, str], float] = {}
    skipped: list[str] = []
    xs_all, ys_all = [], []
    for i, p in enumerate(preds):
        xs, ys, sizes, texts = [], [], [], []
        for g in fold(p.kernels):
            flops, hbm, t = g.flops, g.hbm_bytes, g.time_s
            if not flops or not hbm or not t:
                if g.label not in skipped:
                    skipped.append(g.label)
                continue
            x, y = flops / hbm, flops / t
            points[(id(p), g.name)] = (x, y)
            extra = ""
            info = fusion_info.get((id(p), g.name))
            if info:
                names, saved, n = info
                extra = (f"fuses: {_wrap(names, ', ', max_items=8)}<br>"
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
            x=xs, y=ys, mode="markers", name=f"{_label(p, preds)} kernels",
            legendgroup="kernels", legendgrouptitle_text="kernels (area ∝ share of time)",
            marker=dict(symbol=SCHEDULE_SYMBOLS[i % len(SCHEDULE_SYMBOLS)], size=sizes,
                        color=_rgba(color, 0.28 if i == 0 else 0.85),
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
        ranked = sorted(_fusion_sources(c).items(), key=lambda kv: -kv[1][1])[:per_cmp]
        for name, (sources, _saved, _n) in ranked:
            head = points.get((id(c.candidate), name))
            if head is None:
                continue
            tails = [points[(id(c.baseline), s)] for s in sources
                     if (id(c.baseline), s) in points]
            if len(tails) < 2:      # the other kernels have no point: the arrow would mislead
                continue
            for tail in tails:
                if _close(tail, head):
                    continue
                annotations.append(dict(
                    x=math.log10(head[0]), y=math.log10(head[1]), xref="x", yref="y",
                    ax=math.log10(tail[0]), ay=math.log10(tail[1]), axref="x", ayref="y",
                    showarrow=True, arrowhead=2, arrowsize=1.1, arrowwidth=1.3,
                    arrowcolor="rgba(70,80,95,0.55)", text="",
                    standoff=radius[(id(c.candidate), name)] + 1, startstandoff=3))
    if annotations:
        c0 = comparisons[0]
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines",
                                 name=f"fusion ({c0.baseline.policy} → {c0.candidate.policy})",
                                 line=dict(color="rgba(70,80,95,0.7)", width=1.5),
                                 legendgroup="kernels", hoverinfo="skip"))
    notes = []
    if skipped:
        notes.append(f"Not plotted (no FLOPs or no HBM traffic, so no point on a log-log "
                     f"roofline; see the time breakdown): {_short(', '.join(skipped), 150)}")
    lay = _base_layout(
        620, f"Roofline · {_html.escape(hw.display_name)} ({hw.name})",
        xaxis=_log_axis("arithmetic intensity (FLOP per HBM byte)", x_lo, x_hi, _plain),
        yaxis=_log_axis("achieved FLOP/s (FLOPs ÷ predicted time)", y_lo, y_hi,
                        lambda v: _si(v)),
        legend=dict(x=1.01, xanchor="left", y=1.0, yanchor="top", bgcolor="rgba(255,255,255,0)",
                    groupclick="toggleitem", font=dict(size=12), tracegroupgap=14),
        hovermode="closest", showlegend=True)
    lay["margin"] = dict(l=80, r=250, t=60, b=90 if notes else 60)
    fig.update_layout(**lay)
    for a in annotations:
        fig.add_annotation(**a)
    if notes:
        fig.add_annotation(text=_html.escape(notes[0]), xref="paper", yref="paper", x=0,
                           y=-0.13, xanchor="left", yanchor="top", showarrow=False,
                           font=dict(size=11, color="#5f6b7a"))
    fig.layout.meta = {"skipped": skipped, "arrows": len(annotations)}
    return fig


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[j:j + 2], 16) for j in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


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
            hovertemplate=f"{_html.escape(r.label)} peak<br>intensity %{{x:.3g}} FLOP/B → "
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
            hovertemplate=f"{_html.escape(r.label)} peak<extra></extra>"))
        if r.achievable:
            ridge_a = r.achievable / hbm.achievable if hbm.achievable else ridge
            fig.add_trace(go.Scatter(
                x=[ridge_a, x_hi], y=[r.achievable, r.achievable], mode="lines",
                name=f"{r.label.rsplit(' ', 1)[0].rsplit(' ', 1)[0]} achievable "
                     f"{format_rate(r.achievable)}",
                legendgroup="roofs", line=dict(color=color, width=2.4),
                hovertemplate=f"{_html.escape(r.label)}: achievable "
                              f"{format_rate(r.achievable)}<extra></extra>"))


# ------------------------------------------------------------------------------ breakdown
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
        out.append((_short(g.label), seg, g, g.count))
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
    titles = [f"{_label(p, preds)} · {format_time(p.totals.time_s)}, {p.totals.kernels} kernels"
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
                head = f"<b>{_html.escape(g.label if g else lab)}</b>"
                detail = ""
                if g is not None:
                    detail = (f"<br>ops: {_ops_text(g.first)}<br>compute "
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
    fig.update_layout(**_base_layout(
        height, f"Time per kernel · {_html.escape(hw.display_name)} ({hw.name})",
        barmode="stack", bargap=0.25,
        legend=dict(orientation="h", x=1.0, xanchor="right", y=0.995, yanchor="top",
                    yref="container", traceorder="normal", font=dict(size=12)),
        margin=dict(l=20, r=30, t=110, b=60)))
    for ann in fig.layout.annotations:          # subplot titles: left-aligned, smaller
        ann.update(font=dict(size=13), yshift=6)
    return fig


def totals_figure(preds: Sequence[Prediction]) -> go.Figure:
    """Every GPU and schedule side by side: total predicted time, split by what bounds it."""
    xs = [[p.hardware.name for p in preds],
          [_label(p, [q for q in preds if q.hardware.name == p.hardware.name]).replace(" · ", "<br>")
           for p in preds]]
    parts: dict[str, list[float]] = {b: [] for b in ("compute", "memory", "link", "launch")}
    for p in preds:
        seg = {"compute": 0.0, "memory": 0.0, "link": 0.0}
        for k in p.kernels:
            seg[_busy_bound(k)] += max(k.compute_s, k.memory_s, k.link_s)
        for b in ("compute", "memory", "link"):
            parts[b].append(seg[b])
        parts["launch"].append(p.totals.launch_s)
    scale, unit = time_unit(max(p.totals.time_s for p in preds))
    fig = go.Figure()
    for b, vals in parts.items():
        if not any(vals):
            continue
        hover = [f"<b>{p.hardware.name} · {p.policy} ({p.launch} launch)</b><br>{b}: "
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
    fig.update_layout(**_base_layout(
        400, "Total predicted time per GPU and schedule", barmode="stack", bargap=0.35,
        yaxis=dict(title=f"predicted time ({unit})", range=[0, ymax], gridcolor="#e6e9ee"),
        xaxis=dict(showline=True, linecolor="#5f6b7a", tickangle=0),
        legend=dict(orientation="h", x=1.0, xanchor="right", y=1.0, yanchor="bottom",
                    traceorder="normal"),
        margin=dict(l=80, r=30, t=80, b=70)))
    return fig


# ------------------------------------------------------------------------------ summary
def _table(head: list[str], rows: list[list[str]], cls: str = "") -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def summary_html(preds: Sequence[Prediction], comparisons: Sequence[Comparison],
                 top: int = 8) -> str:
    """The top of the report: total time per schedule and GPU, what bounds it, the speedup
    from fusion, and the top fusion opportunities."""
    e = _html.escape
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
                       f"<b>{c.speedup:.2f}×</b><br><span class=dim>saves "
                       f"{format_time(c.time_saved_s)}, {format_bytes(c.hbm_bytes_saved)} HBM, "
                       f"{c.launches_saved} launches</span>")
        rows.append(row)
    p0 = preds[0]
    params = " ".join(f"{k}={v}" for k, v in p0.params.items())
    parts = [f"<h1>{e(p0.workload)}</h1>",
             f"<p class=sub>{e(params)}" + (" · " if params else "") +
             f"rooflab {__version__} predictions (a model, not a measurement)</p>",
             "<h2>Summary</h2>", _table(head, rows, "summary")]
    if comparisons:
        parts.append(_fusion_table(comparisons, top))
    notes = []
    for p in preds:
        for n in p.notes:
            line = f"{p.hardware.name}: {n}"
            if line not in notes:
                notes.append(line)
    if notes:
        parts.append("<ul class=notes>" + "".join(f"<li>{e(n)}</li>" for n in notes[:12])
                     + "</ul>")
    return "\n".join(parts)


def _fusion_table(comparisons: Sequence[Comparison], top: int) -> str:
    """The fusions that save the most time, one column of time saved per GPU/launch."""
    e = _html.escape
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
    if not ranked:
        return "<p class=dim>No fusion opportunities: the schedules group the ops the same way.</p>"
    rows = []
    for i, key in enumerate(ranked, 1):
        f = next(fs[key] for _, fs in cols if key in fs)
        row = [str(i), f"<code>{e(_short(key, 48))}</code>" + (f" ×{f.count}" if f.count > 1 else ""),
               e(" → ".join(f.ops)), e(f.fusion), format_bytes(f.hbm_bytes_saved)]
        for _, fs in cols:
            g = fs.get(key)
            row.append(format_time(g.time_saved_s) if g else "–")
        stop = f.stopped_by[0] if f.stopped_by else ""
        row.append(f"<span class=dim>{e(_short(stop, 90))}</span>")
        rows.append(row)
    c0 = comparisons[0]
    head = ["#", "fused kernel" if c0.candidate.policy == "fused"
            else f"kernel in {e(c0.candidate.policy)}", "ops", "fusion", "HBM saved"]
    head += [f"time saved<br>{e(label)}" for label, _ in cols]
    head.append("stopped growing because")
    return (f"<h3>Top fusion opportunities ({e(last)} vs {e(comparisons[0].baseline.policy)})"
            "</h3><div class=scroll>" + _table(head, rows, "fusions") + "</div>")


# ------------------------------------------------------------------------------ validation
def _op_color(cls: str, seen: list[str]) -> str:
    if cls in OP_CLASS_COLORS:
        return OP_CLASS_COLORS[cls]
    if cls not in seen:
        seen.append(cls)
    return _OTHER_COLORS[seen.index(cls) % len(_OTHER_COLORS)]


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
            mode="markers", name=cls, legendgroup="cls", legendgrouptitle_text="kernels by op class",
            marker=dict(size=9, color=_op_color(cls, seen), opacity=0.85,
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
            hovertext=[f"<b>{_html.escape(c.case)}</b><br>schedule {_html.escape(s.schedule)} "
                       f"({s.launch} launch)<br>predicted {format_time(s.predicted_s)} · measured "
                       f"{format_time(s.measured_s)}<br>error "
                       f"{(s.predicted_s - s.measured_s) / s.measured_s:+.1%}"
                       for c, s in scheds],
            hovertemplate="%{hovertext}<extra></extra>"))
    sc.update_layout(**_base_layout(
        700, "Predicted against measured kernel time",
        xaxis=_log_axis("measured time (median; whiskers: p20–p80)", lo, hi, _time_tick),
        yaxis=_log_axis("predicted time", lo, hi, _time_tick),
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
            x=[e + size / 2 for e in edges], y=counts, width=[size * 0.94] * nbins, name=cls,
            marker_color=_op_color(cls, seen), marker_line_width=0,
            hovertext=[f"{cls}: {n} kernel{'s' if n != 1 else ''} with error "
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
    hist.update_layout(**_base_layout(
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
        f"<b>{_html.escape(k.kernel)}</b>",
        f"case: {_html.escape(case.case)} · schedule {_html.escape(sched)}",
        f"ops: {_wrap(k.ops, ' → ')}",
        f"predicted {format_time(k.predicted_s)} · measured {format_time(k.measured_s)} "
        f"(p20–p80 {format_time(k.measured_p20_s)}–{format_time(k.measured_p80_s)})",
        f"error: <b>{k.error:+.1%}</b> · predicted bound {k.bound}",
        f"{format_flops(k.flops)}, {format_bytes(k.hbm_bytes)} HBM"])


def validation_summary_html(vf) -> str:
    e = _html.escape
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
    parts.append(_table(["op class", "kernels", "median |error|", "within ±10%",
                         "within ±25%", "worst |error|"], rows, "summary"))
    parts.append(f"<p class=dim>{len(vf.cases)} cases. Error = (predicted − measured) ÷ "
                 "measured; measured is the median of repeated runs.</p>")
    return "\n".join(parts)


# ------------------------------------------------------------------------------ writing
_CSS = """
:root { color-scheme: light; }
body { font-family: %(font)s; color: #1d2733; background: #f5f6f8; margin: 0; }
main { max-width: 1480px; margin: 0 auto; padding: 24px 32px 48px; }
h1 { font-size: 26px; margin: 4px 0 2px; }
h2 { font-size: 19px; margin: 30px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #d5dae1; }
h3 { font-size: 15px; margin: 20px 0 8px; }
p.sub { color: #5f6b7a; margin: 2px 0; }
.dim { color: #6b7685; font-size: 12px; }
.card { background: white; border: 1px solid #dde2e8; border-radius: 8px; padding: 8px 10px;
        margin: 14px 0; box-shadow: 0 1px 2px rgba(0,0,0,0.04); }
table { border-collapse: collapse; background: white; font-size: 13.5px; margin: 6px 0;
        border: 1px solid #dde2e8; border-radius: 6px; }
th, td { padding: 7px 12px; border-bottom: 1px solid #eceff3; text-align: left; vertical-align: top; }
th { background: #eef1f5; font-weight: 600; font-size: 12.5px; }
table.fusions td:nth-child(n+5), table.fusions th { white-space: nowrap; }
table.fusions td:last-child { white-space: normal; max-width: 340px; }
code { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 12.5px; }
.bound { font-size: 11.5px; padding: 1px 6px; border-radius: 9px; color: white; }
.b-compute { background: #3b6fb6; } .b-memory { background: #e8743b; }
.b-link { background: #945ecf; } .b-launch { background: #7d858f; }
ul.notes { color: #5f6b7a; font-size: 13px; }
.scroll { overflow-x: auto; }
.row { display: grid; grid-template-columns: 3fr 2fr; gap: 14px; }
.row > .card { min-width: 0; margin: 0; }
footer { color: #8a94a3; font-size: 12px; margin-top: 24px; }
""" % {"font": FONT}


def plotlyjs_bundle() -> str | None:
    """The vendored basic plotly.js bundle (scatter and bar: all the reports draw), when it is
    the version plotly.py writes figures for; None means: embed plotly.py's full bundle."""
    from plotly.offline import get_plotlyjs_version
    path = VENDOR / "plotly-basic.min.js"
    if get_plotlyjs_version() != BASIC_BUNDLE_VERSION or not path.is_file():
        return None
    return path.read_text(encoding="utf-8")


def _figure_html(fig: go.Figure, div_id: str, first: bool) -> str:
    return pio.to_html(fig, full_html=False, include_plotlyjs=bool(first), div_id=div_id,
                       config=PLOTLY_CONFIG, default_width="100%",
                       default_height=f"{int(fig.layout.height or 500)}px", validate=False)


def render_page(title: str, parts: Sequence[str | tuple[str, go.Figure]]) -> str:
    """One self-contained page: HTML strings and (div id, figure) pairs, in order; plotly.js
    is embedded once, just before the first figure (no CDN: the page opens offline)."""
    body, first, ids = [], True, set()
    bundle = plotlyjs_bundle() if any(not isinstance(p, str) for p in parts) else None
    for part in parts:
        if isinstance(part, str):
            body.append(part)
            continue
        div_id, fig = part
        base, i = div_id, 2
        while div_id in ids:
            div_id, i = f"{base}-{i}", i + 1
        ids.add(div_id)
        if first and bundle is not None:
            body.append("<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
                        f"<script charset=\"utf-8\">{bundle}</script>")
        body.append(f'<div class="card">{_figure_html(fig, div_id, first and bundle is None)}'
                    "</div>")
        first = False
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_html.escape(title)}</title><style>{_CSS}</style></head>\n<body><main>\n"
            + "\n".join(body)
            + f"\n<footer>Generated by rooflab {__version__}. Hover for details; drag to zoom, "
              "double-click to reset; click legend entries to hide them.</footer>"
              "\n</main></body></html>\n")


def check_target(path: str | os.PathLike, force: bool = False) -> None:
    """Refuse a target that exists (unless `force`), is a folder, or has no folder to go in."""
    p = Path(path)
    if p.is_dir():
        raise RooflabError(f"{p} is a folder; give a file name such as report.html")
    if p.exists() and not force:
        raise RooflabError(f"{p} exists; pass --force to overwrite")
    if not p.parent.exists():
        raise RooflabError(f"{p}: folder {p.parent} does not exist")


def _write(path: str | os.PathLike, text: str, force: bool) -> None:
    p = Path(path)
    check_target(p, force)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        if not force and p.exists():       # appeared while we rendered
            raise RooflabError(f"{p} exists; pass --force to overwrite")
        os.replace(tmp, p)
    except OSError as err:
        raise RooflabError(f"{p}: cannot write the report ({err.strerror or err})") from None
    finally:
        tmp.unlink(missing_ok=True)


def prediction_parts(preds: Sequence[Prediction], comparisons: Sequence[Comparison] = ()
                     ) -> list[str | tuple[str, go.Figure]]:
    """The sections of a predictions report, in order."""
    if not preds:
        raise RooflabError("nothing to report: no predictions")
    gpus = _by_gpu(preds)
    parts: list[str | tuple[str, go.Figure]] = [summary_html(preds, comparisons)]
    parts.append("<h2>Roofline</h2><p class=dim>Each point is a kernel (the kernels of repeated "
                 "blocks fold into one point with a count). x: FLOPs per HBM byte; y: FLOPs ÷ "
                 "predicted time, launch included."
                 + (" Arrows run from the kernels a fusion replaces to the fused kernel."
                    if comparisons else "") + "</p>")
    for name, ps in gpus.items():
        parts.append((f"rooflab-roofline-{_slug(name)}", roofline_figure(ps, comparisons)))
    parts.append("<h2>Time breakdown</h2><p class=dim>Busy time is max(compute, memory, link) "
                 "and is coloured by the largest; launch is the per-kernel launch cost and any "
                 "wait for the CPU.</p>")
    if len(preds) > 1:
        parts.append(("rooflab-totals", totals_figure(preds)))
    for name, ps in gpus.items():
        parts.append((f"rooflab-breakdown-{_slug(name)}", breakdown_figure(ps)))
    return parts


def predictions_html(preds: Sequence[Prediction], comparisons: Sequence[Comparison] = ()) -> str:
    p0 = preds[0] if preds else None
    title = f"rooflab · {p0.workload}" if p0 else "rooflab"
    return render_page(title, prediction_parts(preds, comparisons))


def write_predictions(path, preds, comparisons, force: bool = False) -> None:
    """Write the predictions report (summary, roofline per GPU, time breakdowns) to `path`."""
    check_target(path, force)
    _write(path, predictions_html(list(preds), list(comparisons)), force)


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
    _write(path, validation_html(validation_file), force)
