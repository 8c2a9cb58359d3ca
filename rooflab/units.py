"""The only place numbers become text: decimal prefixes for bytes and rates (1 GB = 1e9 B)."""

from __future__ import annotations

import math


def _scaled(x: float, units: list[tuple[float, str]], digits: int = 3) -> str:
    """`x` in the largest of `units` (descending (scale, name) pairs) it reaches, to `digits`
    significant digits; a value that rounds up to 1000 moves to the next unit where that one
    is 1000 times larger (999.7e9 FLOP is "1 TFLOP", not "1e+03 GFLOP")."""
    if x == 0:
        return "0 " + units[-1][1]
    if math.isinf(x) or math.isnan(x):
        return str(x)
    i = next((i for i, (scale, _) in enumerate(units) if abs(x) >= scale), len(units) - 1)
    scale, name = units[i]
    v = x / scale
    if abs(float(f"{v:.{digits}g}")) >= 1000:
        if not (i and units[i - 1][0] == scale * 1000):
            return f"{v:.0f} {name}"
        scale, name = units[i - 1]
        v = x / scale
    return f"{v:.{digits}g} {name}"


def format_bytes(n: float) -> str:
    return _scaled(n, [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"), (1, "B")])


def format_flops(n: float) -> str:
    return _scaled(n, [(1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP"),
                       (1e3, "kFLOP"), (1, "FLOP")])


def format_rate(n: float, unit: str = "FLOP/s") -> str:
    return _scaled(n, [(1e15, "P" + unit), (1e12, "T" + unit), (1e9, "G" + unit),
                       (1e6, "M" + unit), (1, unit)])


def format_time(s: float) -> str:
    if s == 0:
        return "0"
    if abs(s) < 1e-12:          # a view's share of a launch: nothing a reader can act on
        return "<0.001 ns"
    if s < 0:                   # a fusion that costs time: "-2.76 µs", not "-2.76e+03 ns"
        return "-" + format_time(-s)
    return _scaled(s, [(1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")])


def format_intensity(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}" if x < 1000 else f"{x:.0f}"
