"""Experimental Gluon (triton.experimental.gluon, Triton 3.6) ping-pong batched GEMM for attention's QK^T
on Hopper (sm_90): c[b] = q[b] @ k[b]^T, bf16 in/out, fp32 accumulation, head dim D = 128 (one K step).

    PYTHONPATH=. python3 benchmarks/gluon_qk.py          # compile for sm_90 (no GPU needed)
    PYTHONPATH=. python3 benchmarks/gluon_qk.py --gpu    # check against torch.bmm and time it

Measured on the lent H200 (2026-12-02, commit 84a9454, reports/tuning/h200-2026-12-02-round14-gluon-qk.log):
exact against torch.bmm; 179.8 us as a one-kernel graph replay at B*H=64, S=2048, against 181.6 for
rooflab/validate/kernels/bmm.py and 169.8 for cuBLAS. Overlapping the epilogue did not help, so the
suite kept bmm.py then (round 23 moved QKᵀ to rooflab/validate/kernels/bmm_pingpong.py, which shares Q's
block between two tiles); this file stays as the record of that experiment.

Design (CUTLASS-style "ping-pong" warp specialization, persistent):
  * grid = NPROG programs (one per SM); output tiles of 128x128, tile t -> (batch, m-block, n-block) with
    n fastest; program pid takes tiles pid, pid + NPROG, ... (local index i = 0, 1, 2, ...).
  * three partitions (gl.warp_specialize):
      - default partition (num_warps = 4): consumer 0, local tiles with i % 2 == 0;
      - worker 0 (1 warp, few registers): TMA loader;
      - worker 1 (4 warps): consumer 1, local tiles with i % 2 == 1.
  * operand ring of STAGES slots (A [128,128] + B [128,128] bf16 = 64 KB a slot), each with a
    "ready" (TMA tx-count) and an "empty" (consumer release) mbarrier, both count 1. Slot s = i % STAGES,
    its use number u = i // STAGES, phase bit = u & 1. The loader waits empty[s] with parity (u & 1) ^ 1
    (a freshly initialised mbarrier counts as "phase with parity 1 complete", so the first STAGES waits pass),
    then expect-tx(64 KB) + two TMA loads arriving on ready[s]. A consumer waits ready[s] with parity u & 1,
    runs one async wgmma (A smem x B smem^T), waits for it, arrives on empty[s], then does its epilogue:
    fp32 -> bf16, (tma.store_wait(0) on its own previous store), store to its own 32 KB epilogue smem buffer,
    fence_async_shared, TMA store. So consumer c's epilogue overlaps the other consumer's MMA and the
    loader's refill of the slot just released.
  * smem: 2 * 64 KB (ring) + 2 * 32 KB (one epilogue buffer per consumer) = 192 KB + barriers.

Run on the GPU: python benchmarks/gluon_qk.py --gpu  (check_and_time); without --gpu it only compiles for
sm_90 on the CPU (compile_check).
"""

from __future__ import annotations

import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

BM = 128
BN = 128
BK = 128          # = head dim: a single K step
STAGES = 2
NUM_WARPS = 4     # default partition (consumer 0)
LOADER_REGS = 40
CONSUMER_REGS = 232
MAXNREG = 168     # 12 warps (4 + 4 + 1 rounded up to a warpgroup) * 32 * 168 <= 64K registers


@gluon.jit
def _num_local_tiles(M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, NPROG: gl.constexpr):
    tiles: gl.constexpr = (M // 128) * (N // 128) * BATCH
    pid = gl.program_id(0)
    return (tiles - pid + NPROG - 1) // NPROG


@gluon.jit
def _tile_coords(i, M: gl.constexpr, N: gl.constexpr, NPROG: gl.constexpr):
    t = gl.program_id(0) + i * NPROG
    b = t // ((M // 128) * (N // 128))
    r = t % ((M // 128) * (N // 128))
    row = b * M + (r // (N // 128)) * 128   # row in the [BATCH*M, *] views of A and C
    col = (r % (N // 128)) * 128            # column of C
    brow = b * N + col                      # row in the [BATCH*N, K] view of B
    return row, col, brow


@gluon.jit
def _loader_partition(a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready_bars, empty_bars,
                      M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, NPROG: gl.constexpr,
                      STAGES: gl.constexpr, CID: gl.constexpr):
    n_local = _num_local_tiles(M, N, BATCH, NPROG)
    nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
    for i in range(n_local):
        s = i % STAGES
        ph = (i // STAGES) & 1
        row, col, brow = _tile_coords(i, M, N, NPROG)
        mbarrier.wait(empty_bars.index(s), ph ^ 1)
        bar = ready_bars.index(s)
        mbarrier.expect(bar, nbytes)
        tma.async_copy_global_to_shared(a_desc, [row, 0], bar, a_bufs.index(s))
        tma.async_copy_global_to_shared(b_desc, [brow, 0], bar, b_bufs.index(s))


@gluon.jit
def _consumer_partition(a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready_bars, empty_bars,
                        M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, NPROG: gl.constexpr,
                        STAGES: gl.constexpr, CID: gl.constexpr):
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 128, 16])
    n_local = _num_local_tiles(M, N, BATCH, NPROG)
    c_smem = c_bufs.index(CID)
    zero = gl.zeros([128, 128], gl.float32, acc_layout)
    for i in range(CID, n_local, 2):
        s = i % STAGES
        ph = (i // STAGES) & 1
        row, col, brow = _tile_coords(i, M, N, NPROG)
        a_s = a_bufs.index(s)
        b_s = b_bufs.index(s)
        mbarrier.wait(ready_bars.index(s), ph)
        acc = warpgroup_mma(a_s, b_s.permute((1, 0)), zero, use_acc=False, is_async=True)
        acc, a_s, b_s = warpgroup_mma_wait(num_outstanding=0, deps=[acc, a_s, b_s])
        mbarrier.arrive(empty_bars.index(s))          # operands consumed: the loader may refill slot s
        out = acc.to(c_desc.dtype)
        tma.store_wait(0)                              # our previous TMA store has left c_smem
        c_smem.store(out)
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [row, col], c_smem)
    tma.store_wait(0)


@gluon.jit
def _gluon_qk_kernel(a_desc, b_desc, c_desc, M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr,
                     NPROG: gl.constexpr, STAGES: gl.constexpr, LOADER_REGS: gl.constexpr,
                     CONSUMER_REGS: gl.constexpr):
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    c_bufs = gl.allocate_shared_memory(c_desc.dtype, [2] + c_desc.block_type.shape, c_desc.layout)
    ready_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty_bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready_bars.index(s), count=1)
        mbarrier.init(empty_bars.index(s), count=1)
    fence_async_shared()

    CID0: gl.constexpr = 0
    CID1: gl.constexpr = 1
    gl.warp_specialize([
        (_consumer_partition, (a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready_bars, empty_bars,
                               M, N, BATCH, NPROG, STAGES, CID0)),
        (_loader_partition, (a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready_bars, empty_bars,
                             M, N, BATCH, NPROG, STAGES, CID0)),
        (_consumer_partition, (a_desc, b_desc, c_desc, a_bufs, b_bufs, c_bufs, ready_bars, empty_bars,
                               M, N, BATCH, NPROG, STAGES, CID1)),
    ], [1, 4], [LOADER_REGS, CONSUMER_REGS])


def _layouts():
    lay = gl.NVMMASharedLayout.get_default_for([128, 128], gl.bfloat16)
    return lay, lay, lay


def launch_gluon_qk(q: torch.Tensor, k: torch.Tensor, nprog: int | None = None) -> torch.Tensor:
    """c [BATCH, S, S] = q [BATCH, S, D] @ k [BATCH, S, D]^T (bf16, D = 128, S % 128 == 0)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    assert q.dtype == torch.bfloat16 and k.dtype == torch.bfloat16
    q, k = q.contiguous(), k.contiguous()
    batch, m, d = q.shape
    n = k.shape[1]
    assert d == BK and m % BM == 0 and n % BN == 0 and k.shape[0] == batch and k.shape[2] == d
    c = torch.empty(batch, m, n, device=q.device, dtype=q.dtype)
    a_l, b_l, c_l = _layouts()
    a_d = TensorDescriptor.from_tensor(q.view(batch * m, d), [BM, BK], a_l)
    b_d = TensorDescriptor.from_tensor(k.view(batch * n, d), [BN, BK], b_l)
    c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [BM, BN], c_l)
    tiles = batch * (m // BM) * (n // BN)
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    nprog = min(nprog or sms, tiles)
    _gluon_qk_kernel[(nprog, )](a_d, b_d, c_d, m, n, batch, nprog, STAGES, LOADER_REGS, CONSUMER_REGS,
                                num_warps=NUM_WARPS, maxnreg=MAXNREG)
    return c


def compile_check(M=2048, N=2048, BATCH=64, NPROG=132):
    """Ahead-of-time compile for sm_90 on the CPU; print smem bytes and what the PTX contains."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    a_l, b_l, c_l = _layouts()
    sig = {
        "a_desc": f"tensordesc<bf16[{BM}, {BK}],{a_l!r}>",
        "b_desc": f"tensordesc<bf16[{BN}, {BK}],{b_l!r}>",
        "c_desc": f"tensordesc<bf16[{BM}, {BN}],{c_l!r}>",
        "M": "constexpr", "N": "constexpr", "BATCH": "constexpr", "NPROG": "constexpr",
        "STAGES": "constexpr", "LOADER_REGS": "constexpr", "CONSUMER_REGS": "constexpr",
    }
    consts = {"M": M, "N": N, "BATCH": BATCH, "NPROG": NPROG, "STAGES": STAGES,
              "LOADER_REGS": LOADER_REGS, "CONSUMER_REGS": CONSUMER_REGS}
    src = GluonASTSource(_gluon_qk_kernel, sig, constexprs=consts)
    ck = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": NUM_WARPS, "maxnreg": MAXNREG})
    ptx = ck.asm["ptx"]
    print("shared memory bytes:", ck.metadata.shared)
    print("num_warps:", ck.metadata.num_warps)
    print("PTX has wgmma:", "wgmma.mma_async" in ptx)
    print("PTX has cp.async.bulk.tensor:", "cp.async.bulk.tensor" in ptx)
    print("PTX has setmaxnreg:", "setmaxnreg" in ptx)
    return ck


def check_and_time():
    torch.manual_seed(0)
    B, S, D = 64, 2048, 128
    q = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    c = launch_gluon_qk(q, k)
    torch.cuda.synchronize()
    ref = torch.bmm(q, k.transpose(1, 2))
    err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
    print(f"relative Frobenius error: {err:.3e}", "OK" if err < 1e-2 else "FAIL")
    assert err < 1e-2
    nbytes = 2 * (q.numel() + k.numel() + B * S * S)
    from rooflab.validate.kernels import bmm
    from rooflab.validate.timing import bench_kernel
    for name, fn in (("gluon ping-pong", lambda: launch_gluon_qk(q, k)),
                     ("bmm.py default", lambda: bmm.launch_bmm(q, k, True)),
                     ("torch.bmm (cuBLAS)", lambda: torch.bmm(q, k.transpose(1, 2)))):
        ms = triton.testing.do_bench(fn, return_mode="median")
        graph_s = bench_kernel(fn)[0]      # as the suite times kernels: one-kernel graph replay
        print(f"{name:20s} {ms * 1e3:8.1f} us  {nbytes / (ms * 1e-3) / 1e12:6.2f} TB/s   "
              f"graph {graph_s * 1e6:8.1f} us  {nbytes / graph_s / 1e12:6.2f} TB/s", flush=True)


if __name__ == "__main__":
    if "--gpu" in sys.argv:
        check_and_time()
    else:
        compile_check()
