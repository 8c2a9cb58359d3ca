"""Batched GEMM template: c[b] = a[b] @ b[b] (or a[b] @ b[b]^T), bf16/fp16 in, fp32 accumulation.

A persistent kernel: one program per SM walks the output tiles, loading operands through TMA
tensor descriptors and writing each tile with a TMA store, with the tile loop flattened and
software-pipelined (3 stages of BK) so that the next tile's loads overlap this tile's store
(the loop asks for warp specialization too, but Triton 3.6 leaves it unspecialized on Hopper:
its TTGIR has no warp_specialize op). That overlap is what a GEMM with a short K and a large
output (attention's QKᵀ over a 128-wide head) lives on: on the H200 the generated
one-tile-per-program GEMM reaches 2.1 TB/s on such a product, this kernel 3.3-3.4 (cuBLAS 3.6;
lab/gpu_tune.md).

Shapes must tile exactly (M % BM, N % BN, K % BK all 0); `configs.bmm_supports` says whether
they do (it needs no Triton). Nothing here touches the GPU at import time.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflab.validate.kernels.configs import BMM_CONFIG


@triton.jit
def _bmm_kernel(a_desc, b_desc, c_desc, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                BATCH: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                TRANS_B: tl.constexpr, NPROG: tl.constexpr, STAGES: tl.constexpr,
                WS: tl.constexpr, SPLIT: tl.constexpr):
    # a [BATCH*M, K]; b [BATCH*N, K] (TRANS_B) or [BATCH*K, N]; c [BATCH*M, N]
    tiles_m = M // BM
    tiles_n = N // BN
    tiles = tiles_m * tiles_n * BATCH
    for tile in tl.range(tl.program_id(0), tiles, NPROG, flatten=True, warp_specialize=WS,
                         num_stages=STAGES):
        pid_b = tile // (tiles_m * tiles_n)
        r = tile % (tiles_m * tiles_n)
        row = pid_b * M + (r // tiles_n) * BM
        col = (r % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = a_desc.load([row, k0])
            if TRANS_B:
                b = b_desc.load([pid_b * N + col, k0]).T
            else:
                b = b_desc.load([pid_b * K + k0, col])
            acc = tl.dot(a, b, acc)
        if SPLIT:       # two half-width stores: half the shared memory for the store buffer
            h0, h1 = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
            c_desc.store([row, col], h0.to(c_desc.dtype))
            c_desc.store([row, col + BN // 2], h1.to(c_desc.dtype))
        else:
            c_desc.store([row, col], acc.to(c_desc.dtype))


def launch_bmm(a: torch.Tensor, b: torch.Tensor, trans_b: bool,
               config: tuple | None = None, programs: int | None = None) -> torch.Tensor:
    """c [batch, M, N] = a [batch, M, K] @ (b [batch, N, K]^T if trans_b else b [batch, K, N]).
    `config` (BMM_CONFIG's fields, optionally + programs per SM) and `programs` (an absolute
    program count) override the defaults."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    bm, bn, bk, warps, stages, ws, split, *rest = config or BMM_CONFIG
    programs_per_sm = rest[0] if rest else 1   # 2 lets two smaller tiles share an SM
    a, b = a.contiguous(), b.contiguous()
    batch, m, k = a.shape
    n = b.shape[1] if trans_b else b.shape[2]
    c = torch.empty(batch, m, n, device=a.device, dtype=a.dtype)
    a_d = TensorDescriptor.from_tensor(a.view(batch * m, k), [bm, bk])
    b_d = TensorDescriptor.from_tensor(b.view(-1, b.shape[2]), [bn, bk] if trans_b else [bk, bn])
    c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [bm, bn // 2 if split else bn])
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    nprog = programs or min(m // bm * (n // bn) * batch, sms * programs_per_sm)
    _bmm_kernel[(nprog,)](a_d, b_d, c_d, m, n, k, batch, BM=bm, BN=bn, BK=bk, TRANS_B=trans_b,
                          NPROG=nprog, STAGES=stages, WS=ws, SPLIT=split, num_warps=warps)
    return c
