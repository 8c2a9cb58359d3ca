"""Which launch of rooflab's Triton GEMM streams a decode-batch GEMM's weights best: for
M = 64..256 rows of Llama-3-8B's down projection, the tile gemm_tiles.gemm_tile picks with the
row tiles of one weight strip launched one after another (GROUP=1) or side by side (GROUP =
row tiles, so that they share the strip through L2), and 128-row tiles. The skinny config's
BK is halved until its stages fit in shared memory.

    python lab/skinny_gemm/tiles.py SPEC.yaml OUT.json
"""
import json
import sys

from rooflab import hardware
from rooflab.gemm_tiles import gemm_tile
from rooflab.validate import gpu as vgpu
from rooflab.validate import run as vrun
from rooflab.validate import suite
from rooflab.validate.kernels import codegen

N, K = 4096, 14336


def skinny(bm, bn, group):
    stages = 4 if bm == 16 else 3
    bk = 256
    while (bm + bn) * bk * 2 * stages > 200 * 1024:
        bk //= 2
    return dict(BM=bm, BN=bn, BK=bk, GROUP=group, num_warps=4 if bm <= 64 else 8,
                num_stages=stages, split_epilogue=False)


def measured_us(hw, m, cfg):
    original = codegen.gemm_config
    codegen.gemm_config = lambda *a, **kw: cfg
    try:
        res = vrun.run_case(suite.gemm_epilogue(m, N, K), hw, seed=1, log=lambda *_: None)
    except Exception as e:              # a launch that does not fit: record why
        return None, f"{type(e).__name__}: {str(e)[:120]}"
    finally:
        codegen.gemm_config = original
    k0 = res.kernels["unfused"][0]
    return k0.measured_s * 1e6, k0.predicted_s * 1e6


def main():
    hw = hardware.load(sys.argv[1])
    rows = []
    for m in (96, 128, 160, 192, 256):
        bm, bn = gemm_tile(m, N, 1, hw.sm_count)
        rows_m = -(-m // bm)
        variants = {f"{bm}x{bn} group1": skinny(bm, bn, 1),
                    f"{bm}x{bn} group{rows_m}": skinny(bm, bn, rows_m),
                    "128x32 group1": skinny(128, 32, 1),
                    "128x64 group2": skinny(128, 64, 2)}
        for name, cfg in variants.items():
            us, pred = measured_us(hw, m, cfg)
            row = dict(M=m, variant=name, config=cfg, measured_us=us, predicted_us=pred)
            rows.append(row)
            print(json.dumps(row), flush=True)
    prov = vgpu.provenance("python lab/skinny_gemm/tiles.py " + " ".join(sys.argv[1:]))
    with open(sys.argv[2], "w") as f:
        json.dump(dict(provenance={**prov, "hardware_spec": sys.argv[1]}, cases=rows), f, indent=1)


if __name__ == "__main__":
    main()
