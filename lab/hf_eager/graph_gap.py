"""How much longer a CUDA-graph replay of N kernels takes than the sum of those kernels' profiled
device times: the per-kernel gap a replayed step pays beyond its kernels (issue 13/14).

For each program (one ATen op at one size), N = 200 calls are captured into one graph and
replayed (CUDA events, median of 20 replays); the same 200 calls are run once eagerly under
torch.profiler for their kernels' device times. gap_us = (replay - sum of kernel times) / N.

    python3 lab/hf_eager/graph_gap.py --out $OUT/graph-gap.json
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch

N = 200
REPLAYS = 20


def programs():
    """(name, fn) pairs: each fn launches one kernel per call."""
    bf = dict(dtype=torch.bfloat16, device="cuda")
    a2k, b2k = torch.randn(2048, **bf), torch.randn(2048, **bf)
    a1m, b1m = torch.randn(2**20, **bf), torch.randn(2**20, **bf)
    a16m = torch.randn(2**23, **bf)
    x = torch.randn(64, 4096, **bf)
    v = torch.randn(1, 4096, **bf)
    w = torch.randn(4096, 4096, **bf)
    kv = torch.randn(16, 8, 1024, 128, **bf)
    return [
        ("add_2K_bf16", lambda: a2k + b2k),
        ("add_1M_bf16", lambda: a1m + b1m),
        ("copy_16MB_bf16", lambda: a16m.clone()),
        ("mean_row_64x4096_bf16", lambda: x.mean(-1)),
        ("linear_m1_4096x4096_bf16", lambda: torch.nn.functional.linear(v, w)),
        ("repeat_kv4_b16_s1024", lambda: kv[:, :, None].expand(16, 8, 4, 1024, 128)
         .reshape(16, 32, 1024, 128)),
    ]


def measure(name, fn) -> dict:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    keep = []
    with torch.cuda.graph(g):
        for _ in range(N):
            keep.append(fn())
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(REPLAYS):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) * 1e3)
    replay_us = statistics.median(times)
    del g, keep
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = [fn() for _ in range(N)]
        torch.cuda.synchronize()
    del out
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    kernel_us = sum(e.time_range.end - e.time_range.start for e in kernels)
    return {"name": name, "calls": N, "kernels": len(kernels), "replay_us": round(replay_us, 2),
            "kernel_sum_us": round(kernel_us, 2), "kernel_us_each": round(kernel_us / max(1, len(kernels)), 3),
            "gap_us": round((replay_us - kernel_us) / max(1, len(kernels)), 3),
            "replay_us_samples": [round(t, 2) for t in times]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = []
    with torch.no_grad():
        for name, fn in programs():
            r = measure(name, fn)
            rows.append(r)
            print(f"{name:28s} kernels {r['kernels']:4d} replay {r['replay_us']:9.1f} us  "
                  f"kernels {r['kernel_sum_us']:9.1f} us  each {r['kernel_us_each']:7.3f}  "
                  f"gap {r['gap_us']:+.3f} us/kernel", flush=True)
    doc = {"what": "CUDA-graph replay of N calls vs the profiled device time of the same calls "
                   "(lab/hf_eager/graph_gap.py)",
           "torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "rows": rows}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
