"""What a kernel costs in a CUDA-graph replay, by size: rooflab prices a replayed Triton kernel
(its own, or one Inductor generated) at its busy time plus graph_launch_s, a figure calibration
measures on 4 MiB copies. A decode step's Inductor kernels are far smaller. This measures the
per-kernel time of 100 back-to-back Triton copies of one size in one graph, for sizes from 2 KiB
to 64 MiB per tensor, each copy on buffers of its own (so each reads lines no earlier copy in
the graph touched), and the same for 100 tiny eager adds captured in a graph.

    python lab/replay_sizes/measure.py OUT.json
Per size: per-kernel µs = (replay of 100 copies) / 100, the median of 7 timings of 20 replays
back to back (events, no flush between replays: the 100 buffers of a size outrun L2 from 1 MiB
per tensor up); the copy's transfer time at the calibration's copy bandwidth is in the record
so that the overhead beyond it can be read off.
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


def per_kernel_us(fn, calls: int) -> float:
    graph = capture(fn, calls)
    return statistics.median(_events_ms(graph.replay, 20) for _ in range(7)) * 1e3 / calls


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
        doc["copies"].append({"kib_per_tensor": kib, "bytes_moved": 2 * n_el * 4,
                              "ctas": triton.cdiv(n_el, block), "per_kernel_us": round(us, 3)})
        print(f"copy {kib} KiB: {us:.3f} us/kernel", flush=True)
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
