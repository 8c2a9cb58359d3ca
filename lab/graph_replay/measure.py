"""One replay from idle against replays back to back, and how much an eager call's time moves
between windows: what the `graph` and `eager` modes should be compared with.

For a mix of torch-suite cases (host-bound to device-bound), in the suite's way (torch_run):
    graph_b2b_windows_us   n replays back to back, CUDA events, per replay (7 windows)
    graph_sync_windows_us  replay(); synchronize(), host clock, per replay (7 windows)
    eager_sync_windows_us  call(); synchronize(), host clock, per call (7 windows)
    eager_b2b_windows_us   n calls back to back, CUDA events, per call (7 windows)
    kernel_us              one replay's kernels from the profiler (device time, summed)
and the host constants of the run (torch_run.host_constants: sync_us, graph_1_kernel_us, ...).
    python lab/graph_replay/measure.py OUT.json
"""
import json
import sys
import time

import torch

from rooflab.validate import torch_suite
from rooflab.validate.torch_run import _Clock, _graph, _kernels, host_constants, provenance

CASES = ("add_1M_bf16", "add_64M_bf16", "silu_64M_bf16", "softmax_64x1024_bf16",
         "softmax_4096x4096_bf16", "layer_norm_2048x4096_bf16", "layer_norm_32768x4096_bf16",
         "rms_norm_16x4096_bf16", "sum_all_16M_fp32", "embedding_16x4096_v128256_bf16",
         "mm_4096x4096x4096_bf16", "pointwise_chain5_1M_bf16", "pointwise_chain5_64M_bf16",
         "decoder_layer_b1_s16_d1024_bf16", "decoder_layer_b1_s512_d2048_bf16",
         "mlp_t16_d4096_f14336_bf16")
WINDOWS = 7
SYNC_CALLS = 30


def host_windows_us(fn, n: int) -> list[float]:
    """µs per call of `fn(); synchronize()`, n calls a window, on the host clock."""
    out = []
    for _ in range(WINDOWS):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
            torch.cuda.synchronize()
        out.append(round((time.perf_counter() - t0) * 1e6 / n, 3))
    return out


def main(path: str) -> None:
    clock = _Clock(torch, "cuda")
    cases = {c.id: c for c in torch_suite.select("^(" + "|".join(CASES) + ")$")}
    rows = []
    with torch.no_grad():
        host = host_constants(torch, "cuda")
        for cid in CASES:
            case = cases[cid]
            mod, inputs = case.build("cuda"), case.make_inputs("cuda")

            def call():
                return mod(*inputs)

            clock.warm(call)
            n = clock.calls_for(call)
            g = _graph(torch, call)
            kernels = _kernels(torch, g.replay)
            rows.append({
                "id": cid, "calls": n,
                "kernel_us": round(sum(k["us"] for k in kernels), 3), "kernels": len(kernels),
                "graph_b2b_windows_us": [round(w, 3) for w in clock.windows_us(g.replay, n,
                                                                               WINDOWS)],
                "graph_sync_windows_us": host_windows_us(g.replay, min(n, SYNC_CALLS)),
                "eager_b2b_windows_us": [round(w, 3) for w in clock.windows_us(call, n,
                                                                               WINDOWS)],
                "eager_sync_windows_us": host_windows_us(call, min(n, SYNC_CALLS))})
            print(json.dumps(rows[-1]), flush=True)
            del g, mod, inputs
            torch.cuda.empty_cache()
    doc = {"provenance": provenance(torch, "cuda", " ".join(sys.argv)), "host": host,
           "cases": rows}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
