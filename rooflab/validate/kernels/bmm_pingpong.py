"""Batched GEMM with a 128-wide reduction, c[b] = a[b] @ b[b]^T (attention's QKᵀ over a 128-wide
head), written in Gluon (Triton's explicit-layout dialect) for Hopper: bf16/fp16 in and out, fp32
accumulation.

Why a kernel of its own: with K = 128 every output tile is a single MMA step, and the kernel lives
on overlapping one tile's MMA with another's epilogue and stores (537 MB of scores written for
67 MB read at B*H = 64, S = 2048). Triton 3.6 does not warp-specialize bmm.py's loop on Hopper, so
its MMAs and epilogue take turns (178-181 µs on that problem on the H200, cuBLAS 168-172); this
kernel does it by hand (173-174 µs; lab/gpu_tune.md):

  * persistent: one program per SM; a *unit* is one 128-row block of `a` and SHARE adjacent
    128-column tiles of the output; program p takes units p, p + NPROG, ... (batch, then row
    blocks, then column groups), so the programs running at once write neighbouring rows;
  * three partitions (gl.warp_specialize): a 1-warp TMA loader, and two 4-warp consumers that
    take alternate column tiles of each unit ("ping-pong"): one converts and stores its tile
    while the other's MMA runs;
  * the unit's block of `a` is loaded once into one of Q_SLOTS slots and shared by its SHARE
    tiles (L2 reads per byte written: 1 + 1/SHARE instead of 2 for 128x128 tiles);
  * blocks of `b` go through K_SLOTS slots, an even number: slot i % K_SLOTS then always
    belongs to the same consumer, so no consumer waits on a slot's barrier one phase ahead (an
    mbarrier wait names only the phase's parity: in a ring shared by both consumers one could
    pass its wait on the other's load, read stale data and release the slot twice);
  * each consumer stages its bf16 tile in its own EPI shared buffers and writes it with a TMA
    store. Shared memory: (Q_SLOTS + K_SLOTS + 2 * EPI) x 32 KB, at most 7.

SHARE = 2 is the default because larger units are slower (SHARE 4: 174-178 µs, 8: 189-193,
16: 200-210): their concurrent stores spread over more rows of the output.

`configs.bmm_nt_supports` says which problems it takes (it needs no Triton); nothing here
touches the GPU at import time. Needs Triton 3.6's Gluon (the `gpu` extra pins it).
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait)

from rooflab.validate.kernels.configs import BMM_NT_CONFIG, bmm_nt_supports

TILE = 128                  # rows of a, columns of b^T per tile, and the reduction (one MMA step)
SHARE, Q_SLOTS, K_SLOTS, EPI = BMM_NT_CONFIG
NUM_WARPS = 4               # the default partition (consumer 0)
LOADER_REGS, CONSUMER_REGS = 40, 232
MAXNREG = 168               # 12 warps (4 + 1 + 4, rounded up to warpgroups) x 32 x 168 <= 64K


@gluon.jit
def _unit(j, M: gl.constexpr, N: gl.constexpr, SHARE: gl.constexpr, NPROG: gl.constexpr):
    """(row of local unit j's block of a in the [BATCH*M, K] view, its first output column,
    the row of its first block of b in the [BATCH*N, K] view)."""
    groups: gl.constexpr = N // (128 * SHARE)
    per_batch: gl.constexpr = (M // 128) * groups
    u = gl.program_id(0) + j * NPROG
    b = u // per_batch
    r = u % per_batch
    col0 = (r % groups) * (128 * SHARE)
    return b * M + (r // groups) * 128, col0, b * N + col0


@gluon.jit
def _num_local_units(M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr,
                     SHARE: gl.constexpr, NPROG: gl.constexpr):
    units: gl.constexpr = BATCH * (M // 128) * (N // (128 * SHARE))
    return (units - gl.program_id(0) + NPROG - 1) // NPROG


@gluon.jit
def _loader(a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready, k_empty,
            M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, SHARE: gl.constexpr,
            NPROG: gl.constexpr, Q_SLOTS: gl.constexpr, K_SLOTS: gl.constexpr,
            EPI: gl.constexpr, CID: gl.constexpr):
    # mbarrier waits take the parity of the phase to wait for; a fresh barrier counts its
    # "previous" phase (parity 1) as complete, so the first pass through each slot goes free
    for j in range(_num_local_units(M, N, BATCH, SHARE, NPROG)):
        row, col0, krow = _unit(j, M, N, SHARE, NPROG)
        qs = j % Q_SLOTS
        mbarrier.wait(q_empty.index(qs), ((j // Q_SLOTS) & 1) ^ 1)
        mbarrier.expect(q_ready.index(qs), a_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [row, 0], q_ready.index(qs), q_bufs.index(qs))
        for s in range(SHARE):
            i = j * SHARE + s
            ks = i % K_SLOTS
            mbarrier.wait(k_empty.index(ks), ((i // K_SLOTS) & 1) ^ 1)
            mbarrier.expect(k_ready.index(ks), b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(b_desc, [krow + s * 128, 0], k_ready.index(ks),
                                            k_bufs.index(ks))


@gluon.jit
def _consumer(a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
              k_empty, M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr,
              SHARE: gl.constexpr, NPROG: gl.constexpr, Q_SLOTS: gl.constexpr,
              K_SLOTS: gl.constexpr, EPI: gl.constexpr, CID: gl.constexpr):
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 128, 16])
    zero = gl.zeros([128, 128], gl.float32, acc_layout)
    for j in range(_num_local_units(M, N, BATCH, SHARE, NPROG)):
        row, col0, krow = _unit(j, M, N, SHARE, NPROG)
        qs = j % Q_SLOTS
        mbarrier.wait(q_ready.index(qs), (j // Q_SLOTS) & 1)
        q_s = q_bufs.index(qs)
        for s in range(CID, SHARE, 2):
            i = j * SHARE + s          # has this consumer's parity, and so has its K slot
            ks = i % K_SLOTS
            k_s = k_bufs.index(ks)
            mbarrier.wait(k_ready.index(ks), (i // K_SLOTS) & 1)
            acc = warpgroup_mma(q_s, k_s.permute((1, 0)), zero, use_acc=False, is_async=True)
            acc, q_s, k_s = warpgroup_mma_wait(num_outstanding=0, deps=[acc, q_s, k_s])
            mbarrier.arrive(k_empty.index(ks))
            out = acc.to(c_desc.dtype)
            c_smem = c_bufs.index(CID * EPI + (i // 2) % EPI)
            tma.store_wait(EPI - 1)    # the store that last read this buffer has done so
            c_smem.store(out)
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [row, col0 + s * 128], c_smem)
        mbarrier.arrive(q_empty.index(qs))
    tma.store_wait(0)


@gluon.jit
def _bmm_nt_kernel(a_desc, b_desc, c_desc, M: gl.constexpr, N: gl.constexpr,
                   BATCH: gl.constexpr, SHARE: gl.constexpr, NPROG: gl.constexpr,
                   Q_SLOTS: gl.constexpr, K_SLOTS: gl.constexpr, EPI: gl.constexpr,
                   LOADER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr):
    dtype: gl.constexpr = a_desc.dtype
    q_bufs = gl.allocate_shared_memory(dtype, [Q_SLOTS] + a_desc.block_type.shape, a_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [K_SLOTS] + b_desc.block_type.shape, b_desc.layout)
    c_bufs = gl.allocate_shared_memory(c_desc.dtype, [2 * EPI] + c_desc.block_type.shape,
                                       c_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [Q_SLOTS, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [Q_SLOTS, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [K_SLOTS, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [K_SLOTS, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(Q_SLOTS):
        mbarrier.init(q_ready.index(s), count=1)
        mbarrier.init(q_empty.index(s), count=2)     # both consumers release a block of a
    for s in gl.static_range(K_SLOTS):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=1)
    fence_async_shared()
    CID0: gl.constexpr = 0
    CID1: gl.constexpr = 1
    gl.warp_specialize([
        (_consumer, (a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
                     k_empty, M, N, BATCH, SHARE, NPROG, Q_SLOTS, K_SLOTS, EPI, CID0)),
        (_loader, (a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
                   k_empty, M, N, BATCH, SHARE, NPROG, Q_SLOTS, K_SLOTS, EPI, CID0)),
        (_consumer, (a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
                     k_empty, M, N, BATCH, SHARE, NPROG, Q_SLOTS, K_SLOTS, EPI, CID1)),
    ], [1, 4], [LOADER_REGS, CONSUMER_REGS])


def _layout(dtype: str):
    return gl.NVMMASharedLayout.get_default_for([TILE, TILE], gl.bfloat16 if dtype == "bf16"
                                                else gl.float16)


def _check_config(share: int, q_slots: int, k_slots: int, epi: int) -> None:
    if share % 2 or k_slots % 2 or q_slots + k_slots + 2 * epi > 7:
        raise ValueError(f"bmm_pingpong: SHARE and K_SLOTS must be even and Q_SLOTS + K_SLOTS + "
                         f"2*EPI at most 7 (got {share}, {q_slots}, {k_slots}, {epi})")


def launch_bmm_nt(a, b, share: int = SHARE, q_slots: int = Q_SLOTS, k_slots: int = K_SLOTS,
                  epi: int = EPI, programs: int | None = None):
    """c [batch, M, N] = a [batch, M, 128] @ b [batch, N, 128]^T, in a's dtype
    (configs.bmm_nt_supports must hold). The keyword arguments override BMM_NT_CONFIG."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    _check_config(share, q_slots, k_slots, epi)
    a, b = a.contiguous(), b.contiguous()
    batch, m, k = a.shape
    n = b.shape[1]
    dtype = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(a.dtype, str(a.dtype))
    if b.dtype != a.dtype or b.shape[0] != batch or b.shape[2] != k \
            or not bmm_nt_supports(batch, m, n, k, dtype, share):
        raise ValueError(f"bmm_pingpong: unsupported problem {tuple(a.shape)} x {tuple(b.shape)}^T")
    c = torch.empty(batch, m, n, device=a.device, dtype=a.dtype)
    lay = _layout(dtype)
    a_d = TensorDescriptor.from_tensor(a.view(batch * m, k), [TILE, TILE], lay)
    b_d = TensorDescriptor.from_tensor(b.view(batch * n, k), [TILE, TILE], lay)
    c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [TILE, TILE], lay)
    units = batch * (m // TILE) * (n // (TILE * share))
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    nprog = min(programs or sms, units)
    _bmm_nt_kernel[(nprog,)](a_d, b_d, c_d, m, n, batch, share, nprog, q_slots, k_slots, epi,
                             LOADER_REGS, CONSUMER_REGS, num_warps=NUM_WARPS, maxnreg=MAXNREG)
    return c


def compile_sm90(batch: int, m: int, n: int, dtype: str = "bf16", programs: int = 132,
                 share: int = SHARE, q_slots: int = Q_SLOTS, k_slots: int = K_SLOTS,
                 epi: int = EPI):
    """Compile the kernel for sm_90 ahead of time (no GPU needed); returns Triton's compiled
    kernel (its .metadata.shared holds the shared memory it takes, in bytes)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    _check_config(share, q_slots, k_slots, epi)
    desc = f"tensordesc<{dtype}[{TILE}, {TILE}],{_layout(dtype)!r}>"
    consts = {"M": m, "N": n, "BATCH": batch, "SHARE": share, "NPROG": programs,
              "Q_SLOTS": q_slots, "K_SLOTS": k_slots, "EPI": epi, "LOADER_REGS": LOADER_REGS,
              "CONSUMER_REGS": CONSUMER_REGS}
    sig = {"a_desc": desc, "b_desc": desc, "c_desc": desc} | {name: "constexpr" for name in consts}
    return triton.compile(GluonASTSource(_bmm_nt_kernel, sig, constexprs=consts),
                          target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": NUM_WARPS, "maxnreg": MAXNREG})
