"""The reports' look: fonts and colours, plotly layout defaults, log axes and their ticks."""

from __future__ import annotations

import math

FONT = "Inter, 'Segoe UI', 'Helvetica Neue', Arial, 'Liberation Sans', sans-serif"
SCHEDULE_COLORS = ["#3b6fb6", "#e8743b", "#19a979", "#945ecf", "#d64550", "#13a4b4"]
SCHEDULE_SYMBOLS = ["circle", "diamond", "square", "triangle-up", "star", "hexagon"]
PART_NAMES = {"compute": "compute-bound", "memory": "memory-bound", "link": "link-bound",
              "launch": "launch overhead"}
BOUND_COLORS = {"compute": "#3b6fb6", "memory": "#e8743b", "link": "#945ecf",
                "launch": "#a8adb4"}
OP_CLASS_COLORS = {"gemm": "#3b6fb6", "attention": "#945ecf", "pointwise": "#e8743b",
                   "reduction": "#19a979", "quantized": "#d64550", "gather": "#13a4b4"}
OTHER_COLORS = ["#8c6d31", "#6b6ecf", "#bd9e39", "#7f7f7f"]
ROOF_COLORS = {"hbm": "#c0392b", "l2": "#d68910", "tensor": "#1f4e79", "vector": "#117864"}


def _decade_ticks(lo: float, hi: float, fmt) -> dict:
    """Ticks at every decade (every other one past 10 decades; 1-2-5 under 4 decades)."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    step = 1 if b - a <= 10 else 2
    mantissas = (1, 2, 5) if math.log10(hi / lo) < 4 else (1,)
    vals = [m * 10.0 ** e for e in range(a, b + 1, step) for m in mantissas]
    vals = [v for v in vals if lo <= v <= hi]
    return dict(tickmode="array", tickvals=vals, ticktext=[fmt(v) for v in vals])


def si(v: float, unit: str = "") -> str:
    """1e12 -> '1T', 3e-6 -> '3µ' (axis ticks: short, no spaces)."""
    if v == 0:
        return "0" + unit
    for scale, p in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"),
                     (1e3, "k"), (1, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")):
        if abs(v) >= scale * 0.9999:
            x = v / scale
            return f"{x:.3g}{p}{unit}"
    return f"{v:.1e}{unit}"


def plain_tick(v: float) -> str:
    """Intensity ticks: 0.01, 0.1, 1, 10, 100, 1k, 10k."""
    if v >= 1000:
        return si(v)
    return f"{v:g}"


def time_unit(max_s: float) -> tuple[float, str]:
    """(scale, unit) that shows times up to `max_s` without long decimals: 1e3, 'ms'."""
    for scale, unit in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
        if max_s * scale >= 1:
            return scale, unit
    return 1e9, "ns"


def time_tick(v: float) -> str:
    return si(v, "s")


def base_layout(height: int, title: str | None = None, **kw) -> dict:
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


def log_axis(title: str, lo: float, hi: float, fmt) -> dict:
    return dict(type="log", title=dict(text=title, standoff=8),
                range=[math.log10(lo), math.log10(hi)], showline=True, linecolor="#5f6b7a",
                mirror=True, ticks="outside", gridcolor="#e6e9ee", zeroline=False,
                **_decade_ticks(lo, hi, fmt))


def to_rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    r, g, b = (int(h[j:j + 2], 16) for j in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"
