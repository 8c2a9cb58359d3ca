"""GPU timing shared by the validation run and calibration.

A kernel is timed as a one-node CUDA graph replayed after an L2 flush (`bench_kernel`): the
measurement is then the GPU's time for the kernel, whatever the host spends launching it. Timing
the Python launch itself (`bench`) is only right while the host keeps ahead of the GPU, and a
Triton launch from Python costs 25-30 µs of host time on the lent H200 machine, about as long
as the flush that is meant to hide it (lab/gpu_tune.md): short kernels then measured
2-8x their GPU time, and unsteadily.
"""

from __future__ import annotations

from typing import Callable

import torch
import triton


# A steady kernel's p20-p80 spread is a few per cent of its median on the lent H200 (3.5 % at
# the median over the suite's 198 kernels); spreads of 10-18 % come in bursts that hit every
# kernel of one case at once (reports/validation/h200-2026-12-03-run1.json has one)
STEADY_SPREAD = 0.10


def bench(fn: Callable[[], object], rep_ms: int = 60, tries: int = 3) -> tuple[float, float, float]:
    """(median, p20, p80) seconds of `fn`, L2 flushed before every run (triton's do_bench). A
    measurement whose p20-p80 spread exceeds STEADY_SPREAD of its median was disturbed: it is
    taken again (up to `tries` times) and the steadiest kept."""
    best = None
    for _ in range(tries):
        p50, p20, p80 = triton.testing.do_bench(fn, warmup=10, rep=rep_ms, quantiles=[0.5, 0.2, 0.8])
        if best is None or (p80 - p20) / p50 < (best[2] - best[1]) / best[0]:
            best = (p50, p20, p80)
        if (p80 - p20) <= STEADY_SPREAD * p50:
            break
    return best[0] * 1e-3, best[1] * 1e-3, best[2] * 1e-3


def capture(fn: Callable[[], object], calls: int = 1) -> torch.cuda.CUDAGraph:
    """`calls` calls of fn captured in one CUDA graph (fn is run once first, on a side stream,
    so that lazy compilation and allocations happen outside the capture)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return g


def bench_kernel(fn: Callable[[], object]) -> tuple[float, float, float, str]:
    """(median, p20, p80) seconds of one call of fn replayed as a CUDA graph after an L2 flush,
    and "graph"; "eager" (timed as launched from Python) for a kernel that cannot be captured."""
    try:
        g = capture(fn)
    except RuntimeError:
        torch.cuda.synchronize()
        return (*bench(fn), "eager")
    return (*bench(g.replay), "graph")
