"""What a kernel costs in a CUDA-graph replay, by size: rooflab prices a replayed Triton kernel
(its own, or one Inductor generated) at its busy time plus graph_launch_s, a figure calibration
measures on 4 MiB copies. A decode step's Inductor kernels are far smaller. This measures the
per-kernel time of 100 back-to-back Triton copies of one size in one graph, for sizes from 2 KiB
to 64 MiB per tensor, each copy on buffers of its own (so each reads lines no earlier copy in
the graph touched), and the same for 100 tiny eager adds captured in a graph.

    python lab/replay_sizes/measure.py OUT.json
Per size: per-kernel µs = (replay of 100 copies) / 100, the median of 7 timings of 20 replays
back to back (events, no flush between replays: the 100 buffers of a size outrun L2 from 1 MiB
per tensor up), and the median of 15 replays each after an L2 flush (every copy reads cold
lines). compare.py sets them against the transfer time at the spec's copy bandwidth.
"""
import json
import statistics
import sys

import torch
import triton

from rooflab.validate.calibrate import _copy_kernel, _events_ms
from rooflab.validate.timing import capture
from rooflab.validate.torch_run import provenance

KERNELS = 100
SIZES_KIB = (2, 8, 32, 128, 512, 2048, 4096, 16384, 65536)


FLUSH = torch.empty(256 << 20, dtype=torch.int8, device="cuda") if torch.cuda.is_available() \
    else None


def per_kernel_us(fn, calls: int, flushed: bool = False) -> float:
    """µs per kernel of `calls` calls of fn replayed as one graph: back to back (20 replays
    timed together, L2 warm from the previous replay), or each replay after a 256 MiB write
    that evicts L2 (every kernel's buffers cold, as the Triton suite times a case)."""
    graph = capture(fn, calls)
    if not flushed:
        return statistics.median(_events_ms(graph.replay, 20) for _ in range(7)) * 1e3 / calls
    times = []
    for _ in range(15):
        FLUSH.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times) * 1e3 / calls


def main(path: str) -> None:
    doc = {"provenance": provenance(torch, "cuda", " ".join(sys.argv)), "copies": []}
    for kib in SIZES_KIB:
        n_el = kib * 256                        # fp32
        # fewer buffers for the largest sizes keeps memory in bounds; each still its own
        count = KERNELS if kib <= 16384 else 20
        src = [torch.randn(n_el, device="cuda") for _ in range(count)]
        dst = [torch.empty_like(s) for s in src]
        state = {"i": 0}
        block = 1024 if n_el < 1 << 20 else 2048

        def one():
            i = state["i"] % count
            state["i"] += 1
            _copy_kernel[(triton.cdiv(n_el, block),)](src[i], dst[i], n_el, BLOCK=block)
        us = per_kernel_us(one, count)
        cold = per_kernel_us(one, count, flushed=True)
        doc["copies"].append({"kib_per_tensor": kib, "bytes_moved": 2 * n_el * 4,
                              "ctas": triton.cdiv(n_el, block), "per_kernel_us": round(us, 3),
                              "per_kernel_flushed_us": round(cold, 3)})
        print(f"copy {kib} KiB: {us:.3f} us/kernel, {cold:.3f} after a flush", flush=True)
        del src, dst
        torch.cuda.empty_cache()
    tiny = torch.zeros(1, device="cuda")
    doc["tiny_add_per_kernel_us"] = round(per_kernel_us(lambda: tiny.add_(1.0), KERNELS), 3)
    # torch.add of 2 KiB bf16 tensors, each output kept (as a model's step writes new tensors)
    a = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
    outs = []
    doc["small_add_per_kernel_us"] = round(per_kernel_us(lambda: outs.append(a + a), KERNELS), 3)
    print(json.dumps({k: v for k, v in doc.items() if k.endswith("_us")}), flush=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
