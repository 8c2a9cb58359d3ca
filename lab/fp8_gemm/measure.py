"""FP8 (e4m3) GEMMs as a W8A8 decode or prefill step runs them, against rooflab's prediction.

torch._scaled_mm (cuBLASLt's FP8 GEMM) with per-tensor and with row-wise scales (one per token
and one per output channel, as per-token dynamic FP8 serving runs it), and the bf16 F.linear of
the same shape beside it, at Llama-3-8B's projection shapes from M = 1 to 4096 rows. Each case
cycles through enough weight copies to exceed L2, so every call reads its weight from HBM, and
is timed as the mean of 100 calls replayed in one CUDA graph (the kernel plus the graph's gap
per kernel, what rooflab's `graph` launch mode prices).

    python lab/fp8_gemm/measure.py SPEC.yaml OUT.json

Writes per case: measured µs (fp8 per-tensor, fp8 row-wise, bf16) and rooflab's predicted µs
for the `matmul` of fp8 operands (stored_dtypes' W8A8 GEMM) and of bf16 ones, unfused, graph.
"""
import dataclasses
import json
import statistics
import sys

import torch

from rooflab import api, hardware, workload
from rooflab.trace.aten_map import gemm_launches
from rooflab.validate import gpu as vgpu

SHAPES = [(n, k) for n, k in ((4096, 4096), (6144, 4096), (28672, 4096), (4096, 14336))]
ROWS = (1, 16, 64, 256, 1024, 4096)
CALLS = 100
E4M3 = torch.float8_e4m3fn


def timed_us(fn, calls=CALLS) -> float:
    """Mean µs per call of `fn(i)` for i in range(calls), replayed in one CUDA graph."""
    for i in range(3):
        fn(i)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            fn(i)
    times = []
    for _ in range(7):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / calls)
    return statistics.median(times)


def predicted_us(hw, m, n, k, dtype) -> float:
    """rooflab's time for one x[m, k] @ w[k, n] of `dtype` operands (bf16 out), unfused, graph."""
    doc = {"name": "gemm", "params": {},
           "tensors": {"x": {"shape": [m, k], "dtype": dtype},
                       "w": {"shape": [k, n], "dtype": dtype}},
           "ops": [{"name": "mm", "kind": "matmul", "dtype": "bf16", "inputs": ["x", "w"],
                    "outputs": ["y"]}]}
    graph = workload.load_dict(doc)
    # launches as a traced F.linear has them (cuBLAS's split-K rule), which stored_dtypes keeps
    op = dataclasses.replace(graph.ops[0], launches=gemm_launches(m, n, k))
    p = api.predict_graph(dataclasses.replace(graph, ops=(op,)), hw, "unfused", "graph")
    # the kernel's own time in a replay (the one replay call's host cost is spread over the
    # 100 calls measured)
    return sum(kc.time_s for kc in p.kernels) * 1e6


def case(hw, m, n, k, l2_bytes):
    copies = max(2, -(-4 * l2_bytes // (n * k)))         # weights at 1 byte: > 4x L2 in all
    w16 = [torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k ** 0.5
           for _ in range(copies)]
    w8 = [w.to(E4M3) for w in w16]
    x16 = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    x8 = x16.to(E4M3)
    one = torch.ones((), device="cuda")
    row_a, row_b = torch.ones(m, 1, device="cuda"), torch.ones(1, n, device="cuda")
    row = dict(
        M=m, N=n, K=k, weight_copies=copies,
        fp8_tensor_us=timed_us(lambda i: torch._scaled_mm(
            x8, w8[i % copies].t(), one, one, out_dtype=torch.bfloat16)),
        fp8_rowwise_us=timed_us(lambda i: torch._scaled_mm(
            x8, w8[i % copies].t(), row_a, row_b, out_dtype=torch.bfloat16)),
        bf16_us=timed_us(lambda i: torch.nn.functional.linear(x16, w16[i % copies])),
        predicted_fp8_us=predicted_us(hw, m, n, k, "fp8_e4m3"),
        predicted_bf16_us=predicted_us(hw, m, n, k, "bf16"))
    del w16, w8
    torch.cuda.empty_cache()
    return row


def main():
    spec, out = sys.argv[1], sys.argv[2]
    hw = hardware.load(spec)
    rows = []
    for n, k in SHAPES:
        for m in ROWS:
            r = case(hw, m, n, k, int(hw.l2_bytes))
            rows.append(r)
            print(json.dumps(r), flush=True)
    prov = vgpu.provenance("python lab/fp8_gemm/measure.py " + " ".join(sys.argv[1:]))
    with open(out, "w") as f:
        json.dump(dict(provenance={**prov, "hardware_spec": spec}, cases=rows), f, indent=1)


if __name__ == "__main__":
    main()
