"""Collectives priced by a latency-bandwidth (alpha-beta) model, per algorithm, as NCCL's tuner does.

NCCL picks, per call, the algorithm and protocol (ring or tree or the NVLink-switch reduction,
each with its low-latency and bulk protocols) that its model says is fastest: a latency per
step plus the bytes each GPU moves over a bus bandwidth. rooflab does the same with the paths a
hardware spec lists (`interconnect.collectives`, and `interconnect.network` across nodes): each
path is a latency per step, how its steps grow with the GPU count, and a bus bandwidth, measured
or published for that system. A collective takes the fastest path that can run it:

    time = steps(path, kind, n) * step_latency(path) + bus_bytes(kind, n, size) / busbw(path)

`size` is the collective's buffer in nccl-tests' convention (all_reduce: the tensor; all_gather:
the gathered output; reduce_scatter: the input; all_to_all: the buffer each GPU sends and
receives; send/recv: the message). Bus bytes are nccl-tests' "busbw" factors (doc/PERFORMANCE.md
there): all_reduce 2(n-1)/n, all_gather, reduce_scatter and all_to_all (n-1)/n, send/recv 1,
so that a path's busbw is what nccl-tests reports for it at large sizes. Steps: a ring takes
2(n-1) for all_reduce and n-1 for the others; a tree 2*ceil(log2 n) for all_reduce and
ceil(log2 n) for the others; a switch (NVLS: the reduction done in the NVLink switch) one; a
send/recv is one step on every path. A path may be limited to a range of GPU counts (NVLS is
used from 5 GPUs on H100/H200, so those specs list it with `min_gpus: 5`).

Which paths compete for one collective on n GPUs:
- a path fitted to a measured sweep of that kind on exactly n GPUs (`measured_gpus`) is the
  measurement itself, so where one exists the measured paths price it, with the switch paths
  beside them (the sweeps run with NVLink multicast off, so they never measured NVLS);
- a path that `yields_to_switch` is left out wherever a switch path runs the collective: NCCL's
  tuner runs all_reduce on NVLS from 5 GPUs, and the published curve there is NVLS's, so the
  Ring/Simple figures are offered only below that count, or where multicast is off and the
  switch paths are gone (`without_switch`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


SCALINGS = ("ring", "tree", "switch")


@dataclass(frozen=True, slots=True)
class Path:
    """One way the system runs collectives: a name ("ring", "nvls", "ll"...), the kinds it can
    run, its latency per step (seconds), how its steps grow with GPUs (SCALINGS) and its bus
    bandwidth (bytes/s), and the GPU counts it is used at."""
    name: str
    kinds: frozenset[str]
    step_latency_s: float
    busbw_bytes_per_s: float
    scaling: str = "ring"
    min_gpus: int = 2                 # NCCL's tuner offers NVLS only from 5 or 6 GPUs
    max_gpus: int | None = None
    yields_to_switch: bool = False    # not offered where a switch path runs the collective
    measured_gpus: int | None = None  # fitted to a sweep on this many GPUs: runs only there

    def runs(self, kind: str, n: int) -> bool:
        """Whether this path can run one `kind` on `n` GPUs."""
        if self.measured_gpus is not None and n != self.measured_gpus:
            return False
        return kind in self.kinds and self.min_gpus <= n <= (self.max_gpus or n)


def competing(paths: tuple[Path, ...], kind: str, n: int) -> list[Path]:
    """The paths that compete for one `kind` on `n` GPUs (the module docstring's rules)."""
    usable = [p for p in paths if p.runs(kind, n)]
    measured = [p for p in usable if p.measured_gpus is not None]
    switch = [p for p in usable if p.scaling == "switch"]
    if measured:                # measured with multicast off: a switch path still competes
        return measured + switch
    if switch:
        usable = [p for p in usable if not p.yields_to_switch]
    return usable


def without_switch(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """`paths` on a system with NVLink multicast off: no switch path."""
    return tuple(p for p in paths if p.scaling != "switch")


def bus_factor(kind: str, n: int) -> float:
    """nccl-tests' busbw / algbw for `kind` on `n` GPUs."""
    if kind == "all_reduce":
        return 2 * (n - 1) / n
    if kind == "send_recv":
        return 1.0
    return (n - 1) / n


def steps(scaling: str, kind: str, n: int) -> int:
    """Latency steps of one `kind` on `n` GPUs along a path of `scaling`."""
    if kind == "send_recv" or scaling == "switch":
        return 1
    per = n - 1 if scaling == "ring" else math.ceil(math.log2(n))
    return 2 * per if kind == "all_reduce" else per


def path_time(path: Path, kind: str, n: int, size_bytes):
    """Seconds `path` takes for one `kind` of `size_bytes` (a number or an array) on `n` GPUs."""
    return (steps(path.scaling, kind, n) * path.step_latency_s
            + bus_factor(kind, n) * size_bytes / path.busbw_bytes_per_s)


def collective_time(paths: tuple[Path, ...], kind: str, n: int, size_bytes):
    """(seconds, name of the fastest path) for one collective; one GPU moves nothing. With
    an array of sizes: arrays of seconds and of path names."""
    if kind not in KINDS:
        raise ValueError(f"unknown collective '{kind}'")
    if n <= 1:
        return (0.0, "none") if np.ndim(size_bytes) == 0 else \
            (np.zeros(np.shape(size_bytes)), np.full(np.shape(size_bytes), "none"))
    usable = competing(paths, kind, n)
    if not usable:
        raise ValueError(f"no collective path runs {kind} on {n} GPUs")
    times = [path_time(p, kind, n, size_bytes) for p in usable]
    if np.ndim(size_bytes) == 0:
        i = min(range(len(times)), key=times.__getitem__)
        return float(times[i]), usable[i].name
    stacked = np.stack(np.broadcast_arrays(*times))
    best = stacked.argmin(axis=0)
    return stacked.min(axis=0), np.array([p.name for p in usable])[best]


def busbw(paths: tuple[Path, ...], kind: str, n: int, size_bytes) -> float:
    """The bus bandwidth (bytes/s) nccl-tests would report for the modelled time."""
    t, _ = collective_time(paths, kind, n, size_bytes)
    return bus_factor(kind, n) * size_bytes / t
