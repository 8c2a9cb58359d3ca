"""Measured collectives (a rooflab.collective-run/1 document, rooflab.validate.nccl_bench) against
the collective model (rooflab.collectives), and the latency-bandwidth path a measured sweep fits.

`compare(doc, hw)` prices every measured row with the spec's paths for the run's GPU count and
returns the error of each; `summary` gives the median |error| per kind over 64 KB .. 1 GB (the
sizes issue 17's target names). NVLink multicast is off on the machines the runs come from, so
an all_reduce there cannot take an NVLS path: `compare` drops the spec's switch paths when the
run says multicast was off.

`fit_path(sizes, times, kind, n)` is the one ring path (a latency per step and a bus bandwidth)
whose times come closest to a sweep in relative error: time = steps x latency + bus bytes / busbw
is linear in (latency, 1 / busbw), so weighted least squares (weights 1 / time) solves it.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rooflab.collectives import KINDS, bus_factor, collective_time, steps, without_switch
from rooflab.errors import RooflabError
from rooflab.hardware import Hardware

SCHEMA = "rooflab.collective-run/1"
TARGET_RANGE = (64 * 1024, 1024 ** 3)


@dataclass(frozen=True)
class CollectiveComparison:
    """One measured collective against the model; times in µs."""
    kind: str
    world: int
    size: int
    measured_us: float
    predicted_us: float
    path: str

    @property
    def error(self) -> float:
        return self.predicted_us / self.measured_us - 1


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check(doc: dict, where: str = "run") -> dict:
    """`doc` if it is a collective run document; RooflabError naming what is wrong."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise RooflabError(f"{where}: not a collective run ({SCHEMA})")
    prov = doc.get("provenance")
    world = prov.get("world") if isinstance(prov, dict) else None
    if not isinstance(world, int) or isinstance(world, bool) or world < 1:
        raise RooflabError(f"{where}: provenance.world must be a GPU count")
    rows = doc.get("rows")
    if not isinstance(rows, dict):
        raise RooflabError(f"{where}: rows must map each collective to its rows")
    for kind, kind_rows in rows.items():
        if kind not in KINDS:
            raise RooflabError(f"{where}: rows.{kind}: unknown collective")
        if not isinstance(kind_rows, list) or not kind_rows or not all(
                isinstance(r, list) and len(r) == 4 and all(map(_number, r))
                and r[0] > 0 and r[1] > 0 for r in kind_rows):
            raise RooflabError(f"{where}: rows.{kind}: one or more rows, each "
                               "[size, time_us, algbw, busbw] with a positive size and time")
    return doc


def compare(doc: dict, hw: Hardware) -> list[CollectiveComparison]:
    """Every measured row of `doc` priced on `hw`'s collective paths for the run's GPU count
    (without switch paths where the run had multicast off)."""
    check(doc)
    world = doc["provenance"]["world"]
    paths = hw.collective_paths
    if doc["provenance"].get("multicast_off"):
        paths = without_switch(paths)
    out = []
    for kind, rows in doc["rows"].items():
        for size, t_us, _, _ in rows:
            pred_s, name = collective_time(paths, kind, world, size)
            out.append(CollectiveComparison(kind, world, int(size), float(t_us),
                                            pred_s * 1e6, name))
    return out


def summary(rows: list[CollectiveComparison], lo: int = TARGET_RANGE[0],
            hi: int = TARGET_RANGE[1]) -> dict[str, float]:
    """Median |error| per kind over sizes lo..hi, and over all kinds ("all")."""
    inside = [r for r in rows if lo <= r.size <= hi]
    out = {kind: statistics.median(abs(r.error) for r in inside if r.kind == kind)
           for kind in sorted({r.kind for r in inside})}
    if inside:
        out["all"] = statistics.median(abs(r.error) for r in inside)
    return out


def fit_path(sizes, times_s, kind: str, n: int) -> tuple[float, float]:
    """(latency per step in seconds, busbw in bytes/s) of the ring path closest to the measured
    `times_s` at `sizes` in relative error (weighted least squares; latency at least 0)."""
    sizes = np.asarray(sizes, dtype=float)
    t = np.asarray(times_s, dtype=float)
    a = np.stack([np.full_like(sizes, steps("ring", kind, n)), bus_factor(kind, n) * sizes], 1)
    w = 1.0 / t
    (lat, inv_bw), *_ = np.linalg.lstsq(a * w[:, None], t * w, rcond=None)
    if lat < 0:                         # a pure bandwidth line through the sweep
        lat = 0.0
        inv_bw = float(np.sum(a[:, 1] * w * w * t) / np.sum((a[:, 1] * w) ** 2))
    return float(lat), float(1.0 / inv_bw)


def render(rows: list[CollectiveComparison]) -> str:
    """A table of the measured rows against the model, and the medians by kind."""
    lines = [f"{'collective':<15}{'GPUs':>5}{'size':>12}{'measured us':>14}"
             f"{'model us':>12}{'error':>9}  path"]
    for r in rows:
        lines.append(f"{r.kind:<15}{r.world:>5}{r.size:>12}{r.measured_us:>14.1f}"
                     f"{r.predicted_us:>12.1f}{r.error:>+9.1%}  {r.path}")
    med = summary(rows)
    lines.append("median |error| 64 KB..1 GB: " + ", ".join(f"{k} {v:.1%}"
                                                           for k, v in med.items()))
    return "\n".join(lines)


def committed_runs(root: Path) -> list[tuple[Path, str, dict]]:
    """The collective runs committed under `root`/reports/validation/collectives, as (file,
    GPU spec name, document): a file <gpu>x<count>-<date>.json names the datasheet spec its
    run is gated against and the GPU count its provenance must have; RooflabError naming the
    file where they disagree."""
    out = []
    for path in sorted((root / "reports" / "validation" / "collectives").glob("*.json")):
        m = re.fullmatch(r"(?P<gpu>.+)x(?P<n>\d+)-\d{4}-\d\d-\d\d(-\d+)?", path.stem)
        if not m:
            raise RooflabError("a collective run's file name is <gpu>x<GPU count>-<date>.json",
                               file=str(path))
        doc = check(json.loads(path.read_text()), str(path))
        if doc["provenance"]["world"] != int(m["n"]):
            raise RooflabError(f"provenance.world is {doc['provenance']['world']}; the file "
                               f"name says {m['n']} GPUs", file=str(path))
        out.append((path, m["gpu"], doc))
    return out
