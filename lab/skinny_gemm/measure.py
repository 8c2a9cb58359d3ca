"""Skinny (decode-batch) GEMMs, M = 64..256 rows, three ways: rooflab's Triton validation
kernel on the tile gemm_tiles.gemm_tile picks now, the same kernel on the 128x128 tile it
picked before 64-row tiles were allowed past M=64, and torch.mm (cuBLAS). Each Triton case
also gets the cost model's prediction from `rooflab validate`'s own run_case.

    python lab/skinny_gemm/measure.py SPEC.yaml OUT.json

Writes every case's predicted and measured kernel times (µs) and the tile each ran on.
"""
import json
import statistics
import sys

import torch

from rooflab import hardware
from rooflab.validate import gpu as vgpu
from rooflab.validate import run as vrun
from rooflab.validate import suite
from rooflab.validate.kernels import configs

# Llama-3-8B's down projection at decode batches
SHAPES = [(m, 4096, 14336) for m in (64, 96, 128, 160, 192, 256)]
NEW_TILE = configs.gemm_tile


def old_tile(m, n, batch, sm_count):
    """gemm_tile before 64-row tiles were taken past M=64: 128 rows, 128 or 256 wide."""
    if m <= 64:
        return NEW_TILE(m, n, batch, sm_count)
    wide = n > 128 and -(-m // 128) * -(-n // 256) * batch >= sm_count
    return 128, 256 if wide else 128


def triton_case(hw, m, n, k, tile_fn):
    configs.gemm_tile = tile_fn
    try:
        case = suite.gemm_epilogue(m, n, k)
        res = vrun.run_case(case, hw, seed=1, log=lambda *_: None)
    finally:
        configs.gemm_tile = NEW_TILE
    k0 = res.kernels["unfused"][0]           # the plain GEMM kernel
    return dict(predicted_us=k0.predicted_s * 1e6, measured_us=k0.measured_s * 1e6,
                tile=list(tile_fn(m, n, 1, hw.sm_count)))


def cublas_us(m, n, k, reps=200):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(10):
        torch.mm(a, b)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            torch.mm(a, b)
    times = []
    for _ in range(7):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / reps)
    return statistics.median(times)


def main():
    spec, out = sys.argv[1], sys.argv[2]
    hw = hardware.load(spec)
    rows = []
    for m, n, k in SHAPES:
        row = dict(M=m, N=n, K=k, weights_mb=n * k * 2 / 1e6,
                   new=triton_case(hw, m, n, k, NEW_TILE),
                   old=triton_case(hw, m, n, k, old_tile),
                   cublas_us=cublas_us(m, n, k))
        rows.append(row)
        print(json.dumps(row), flush=True)
    prov = vgpu.provenance("python lab/skinny_gemm/measure.py " + " ".join(sys.argv[1:]))
    doc = dict(provenance={**prov, "hardware_spec": spec}, cases=rows)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
