"""The only place numbers become text: decimal prefixes for bytes and rates (1 GB = 1e9 B)."""

from __future__ import annotations

import math


def _scaled(x: float, units: list[tuple[float, str]], digits: int = 3) -> str:
    if x == 0:
        return "0 " + units[-1][1]
    if math.isinf(x):
        return "inf"
    for scale, name in units:
        if abs(x) >= scale:
            v = x / scale
            return f"{v:.{digits}g} {name}" if v < 1000 else f"{v:.0f} {name}"
    scale, name = units[-1]
    return f"{x / scale:.{digits}g} {name}"


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
    if s < 0:                   # a fusion that costs time: "-2.76 µs", not "-2.76e+03 ns"
        return "-" + format_time(-s)
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def format_intensity(x: float) -> str:
    if math.isinf(x):
        return "inf"
    return f"{x:.3g}" if x < 1000 else f"{x:.0f}"
