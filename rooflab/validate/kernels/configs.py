"""Launch configurations of the validation kernels, and which problems the fixed-tile templates
take. Plain Python: no torch or Triton, so routing and tests can read them without a GPU.

The values are the fastest measured on an H200 (132 SMs, 227 KB of shared memory per block) for
the validation suite's shapes; the measurements are in lab/gpu_tune.md and lab/gpu_kernels.md.
There is no autotuning: compiling alternatives on the GPU would cost device time on every run.
"""

from __future__ import annotations

from rooflab.gemm_tiles import SKINNY_M_MAX, gemm_tile

# SMs of the GPU a persistent kernel is compiled for ahead of time, without a GPU (the H200's);
# a run on a GPU uses that GPU's SM count.
SM_COUNT_DEFAULT = 132

# Shared memory a persistent row kernel's pipeline may take (of the H100/H200's 227 KB per block).
PIPELINE_SMEM_BYTES = 200 * 1024


def row_config(c: int, in_bytes_per_col: int = 2) -> dict:
    """How a generated row kernel covers a row of `c` elements whose inputs take
    `in_bytes_per_col` bytes per column: BLOCK_C columns per program, num_warps, and the form.

    Whole row in registers, about 32 values per thread (4 warps for 4K columns), up to 32K
    columns. Longer rows loop over 4K chunks in two passes, the second re-reading the row from
    L2 (eviction hints keep it there); the looped form re-reads through L2, so below 32K columns
    the whole-row form is faster. Rows of 16K-32K columns take a persistent kernel, one program
    per SM, that prefetches the next rows through a 3-stage pipeline in shared memory while it
    reduces this one: a CTA that holds a whole 32K row fills an SM alone, so nothing else
    overlaps its reductions with its loads (4096x32768 softmax on the H200: 148 µs, 86 % of the
    copy bandwidth, against 169 µs whole-row). The stages must fit in PIPELINE_SMEM_BYTES; at 4K
    columns many resident CTAs already overlap one another and the persistent form is slower."""
    block_c = 1 << (c - 1).bit_length()
    if block_c > 32768:
        return dict(loop=True, BLOCK_C=4096, num_warps=16, evict=True)
    if block_c > 16384 and 3 * block_c * in_bytes_per_col <= PIPELINE_SMEM_BYTES:
        return dict(loop=False, BLOCK_C=block_c, num_warps=16, persistent=True, num_stages=3)
    return dict(loop=False, BLOCK_C=block_c, num_warps=max(4, min(32, block_c // 1024)))


# shared memory a skinny GEMM's pipeline stages may fill (an sm_90 block takes 227 KB; 64x128
# tiles at BK 256 asked for 288 KB on an H100)
SKINNY_SMEM_BYTES = 200 * 1024


def gemm_config(m: int, n: int, k: int, batch: int, sm_count: int = SM_COUNT_DEFAULT) -> dict:
    """Launch config of a generated GEMM, on the tile the cost model assumes (gemm_tiles.gemm_tile)."""
    bm, bn = gemm_tile(m, n, batch, sm_count)
    transposed = n <= 64 and m > n                 # a skinny-N GEMM, tiled as its transpose
    if bm <= 64 or (m <= SKINNY_M_MAX and bn <= 64 and not transposed):
        # skinny GEMMs stream weights: deep K tiles keep enough bytes in flight per SM, as deep
        # as the stages' A and B tiles fit in shared memory; the row tiles of one weight strip
        # run side by side (GROUP), so that all but one read it from L2
        stages = 4 if bm == 16 else 3
        bk = 256
        while (bm + bn) * bk * 2 * stages > SKINNY_SMEM_BYTES:
            bk //= 2
        return dict(BM=bm, BN=bn, BK=bk, GROUP=-(-m // bm), num_warps=4 if bm <= 64 else 8,
                    num_stages=stages, split_epilogue=False)
    # the epilogue runs on two half tiles in turn, so its loads need half the registers beside
    # the accumulator (2048³ with bias+GELU+residual on the H200: 33.0 µs, against 43.6 µs on
    # whole tiles)
    return dict(BM=128, BN=bn, BK=64, GROUP=8, num_warps=8, num_stages=3, split_epilogue=True)


# bmm.py: (BM, BN, BK, num_warps, num_stages, warp_specialize, split_store). 3 stages of BK 64
# hide the operand loads (2 stages take 262 µs against 181 on attention's QKᵀ); 4 do not fit in
# shared memory beside a whole-tile store buffer.
BMM_CONFIG = (128, 256, 64, 8, 3, True, False)

# bmm_pingpong.py: (SHARE, Q_SLOTS, K_SLOTS, EPI). SHARE 2 is fastest: larger units spread the
# concurrent stores over more rows of the output (bmm_pingpong.py has the figures).
BMM_NT_CONFIG = (2, 2, 2, 1)


def bmm_supports(batch: int, m: int, n: int, k: int, dtype: str, config: tuple = BMM_CONFIG) -> bool:
    """Whether bmm.py's batched GEMM tiles this problem exactly."""
    bm, bn, bk = config[:3]
    return (batch > 1 and dtype in ("bf16", "fp16")
            and m % bm == 0 and n % bn == 0 and k % bk == 0)


def bmm_nt_supports(batch: int, m: int, n: int, k: int, dtype: str, share: int = BMM_NT_CONFIG[0]) -> bool:
    """Whether bmm_pingpong.py computes [batch, m, k] @ [batch, n, k]^T: one 128-wide MMA step,
    128-row blocks, units of `share` 128-column tiles."""
    return (batch > 1 and dtype in ("bf16", "fp16") and k == 128 and m % 128 == 0
            and n % (128 * share) == 0 and share % 2 == 0)


# attention.py's FlashAttention-2 forward: (BLOCK_M, BLOCK_N, num_warps, num_stages), keyed by
# (head_dim, causal).
FLASH_CONFIGS = {
    (64, False): (128, 64, 8, 4),
    (64, True): (128, 64, 8, 3),
    (128, False): (128, 128, 8, 3),
    (128, True): (128, 64, 8, 3),
}
# attention.py's flash decoding split kernel: (BLOCK_N, num_warps, num_stages).
DECODE_CONFIG = (64, 4, 3)

# qgemm.py's W4A16: (BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_warps, num_stages, DEQ_MODE), by M.
# DEQ_MODE 0 (the exponent trick): modes 1 and 2 are 2-4x slower on the H200, and mode 2 with a
# wgmma tile crashes Triton 3.6's TritonGPUOptimizeDotOperands pass at M=37.
W4A16_CONFIG_SMALL_M = (16, 64, 128, 4, 4, 4, 0)    # M <= 64: bound by the int4 weight bytes;
                                                    # BN 64 (31.5 µs at M=16, K=N=8192, against
                                                    # 34.7 µs with BN 128)
W4A16_CONFIG_LARGE_M = (256, 128, 64, 1, 8, 3, 0)   # compute bound
W4A16_DEQ_MODE = 0                                  # when a config gives none (_w4a16_kernel)
DEQUANT_CONFIG = (8, 512, 4)                        # (packed rows, columns, num_warps)
# qgemm.py's FP8 GEMM: (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, use_tma)
FP8_CONFIG = (128, 128, 128, 8, 4, 5, True)
