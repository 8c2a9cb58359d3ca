"""Experimental Gluon (Triton 3.6) QK^T for Hopper with Q's row block shared by the column tiles of a
unit: c[b] = q[b] @ k[b]^T, bf16 in/out, fp32 accumulation, head dim D = 128 (one K step).

    PYTHONPATH=. python3 benchmarks/gluon_qk_shared.py          # compile for sm_90 (no GPU needed)
    PYTHONPATH=. python3 benchmarks/gluon_qk_shared.py --gpu    # check against torch.bmm and time it

Why: every Triton kernel of rounds 5-21 (benchmarks/gpu_tune.md) loads both operands for each
output tile, 1.5 bytes through L2 per byte written with 128x256 tiles, 2.0 with 128x128, and lands
at 179-181 us; cuBLAS shares an operand tile between the two CTAs of a cluster (TMA multicast,
which Triton 3.6 lacks) and takes 168-172. This kernel shares Q's block within one CTA instead.

Design (persistent, warp-specialized ping-pong, after benchmarks/gluon_qk.py):
  * a unit is one 128-row block of Q and SHARE column tiles of 128 (SHARE * 128 <= N); program pid
    takes units pid, pid + NPROG, ... (unit-major over batch, then row blocks, then column groups),
    so concurrently running programs touch neighbouring heads only;
  * loader (1 warp): per unit, Q's block into one of two Q slots (32 KB each), then the unit's
    SHARE blocks of K, in order, into a ring of K_SLOTS slots (32 KB each);
  * two consumers (4 warps each) take alternate column tiles of every unit (consumer c: s = c, c+2,
    ...); each waits for its K slot, runs one async wgmma (Q slot x K slot^T), releases the K slot,
    then converts, stages in its own 32 KB epilogue buffer and TMA-stores while the other consumer's
    MMA runs; after its last tile of a unit it releases the Q slot (that barrier counts 2 arrivals);
  * L2 reads per byte written: (1 + 1/SHARE) instead of 2 (128x128 tiles) or 1.5 (128x256);
  * shared memory: 2 x 32 KB (Q) + K_SLOTS x 32 KB (K) + 2 x 32 KB (epilogue) = 224 KB at K_SLOTS = 3.
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

TILE = 128        # rows of Q, columns of K per tile, and the head dim (one K step)
NUM_WARPS = 4     # default partition (consumer 0)
LOADER_REGS = 40
CONSUMER_REGS = 232
MAXNREG = 168


@gluon.jit
def _unit(j, M: gl.constexpr, N: gl.constexpr, SHARE: gl.constexpr, NPROG: gl.constexpr):
    """(row of local unit j's Q block in the [BATCH*M, D] view, its column group g, the row of
    its head's first K block in the [BATCH*N, D] view)."""
    groups: gl.constexpr = N // (128 * SHARE)
    per_batch: gl.constexpr = (M // 128) * groups
    u = gl.program_id(0) + j * NPROG
    b = u // per_batch
    r = u % per_batch
    return b * M + (r // groups) * 128, r % groups, b * N


@gluon.jit
def _tile_col(s, g, N: gl.constexpr, SHARE: gl.constexpr, STRIDED: gl.constexpr):
    """First column (of C; = row offset in K's head) of tile s of column group g. Contiguous: the
    group's SHARE tiles side by side. Strided: the group takes pairs of adjacent tiles (one per
    consumer) at a stride of `groups` pairs, so that the programs sharing a row block write
    neighbouring pairs at the same time (longer runs of each output row written together)."""
    if STRIDED:
        groups: gl.constexpr = N // (128 * SHARE)
        return (((s // 2) * groups + g) * 2 + s % 2) * 128
    else:
        return (g * SHARE + s) * 128


@gluon.jit
def _num_local_units(M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, SHARE: gl.constexpr,
                     NPROG: gl.constexpr):
    units: gl.constexpr = BATCH * (M // 128) * (N // (128 * SHARE))
    return (units - gl.program_id(0) + NPROG - 1) // NPROG


@gluon.jit
def _loader(a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready, k_empty,
            M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, SHARE: gl.constexpr,
            NPROG: gl.constexpr, Q_SLOTS: gl.constexpr, K_SLOTS: gl.constexpr, EPI: gl.constexpr,
            STRIDED: gl.constexpr, CID: gl.constexpr):
    n_units = _num_local_units(M, N, BATCH, SHARE, NPROG)
    for j in range(n_units):
        row, g, krow = _unit(j, M, N, SHARE, NPROG)
        qs = j % Q_SLOTS
        mbarrier.wait(q_empty.index(qs), ((j // Q_SLOTS) & 1) ^ 1)
        mbarrier.expect(q_ready.index(qs), a_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [row, 0], q_ready.index(qs), q_bufs.index(qs))
        for s in range(SHARE):
            i = j * SHARE + s
            ks = i % K_SLOTS
            mbarrier.wait(k_empty.index(ks), ((i // K_SLOTS) & 1) ^ 1)
            mbarrier.expect(k_ready.index(ks), b_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(b_desc, [krow + _tile_col(s, g, N, SHARE, STRIDED), 0],
                                            k_ready.index(ks),
                                            k_bufs.index(ks))


@gluon.jit
def _consumer(a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready, k_empty,
              M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, SHARE: gl.constexpr,
              NPROG: gl.constexpr, Q_SLOTS: gl.constexpr, K_SLOTS: gl.constexpr, EPI: gl.constexpr,
              STRIDED: gl.constexpr, CID: gl.constexpr):
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 128, 16])
    zero = gl.zeros([128, 128], gl.float32, acc_layout)
    n_units = _num_local_units(M, N, BATCH, SHARE, NPROG)
    for j in range(n_units):
        row, g, krow = _unit(j, M, N, SHARE, NPROG)
        qs = j % Q_SLOTS
        mbarrier.wait(q_ready.index(qs), (j // Q_SLOTS) & 1)
        q_s = q_bufs.index(qs)
        for s in range(CID, SHARE, 2):
            # i, and so its K slot, has this consumer's parity (SHARE and K_SLOTS are even): a
            # slot is only ever waited on by one consumer, one phase at a time
            i = j * SHARE + s
            ks = i % K_SLOTS
            k_s = k_bufs.index(ks)
            mbarrier.wait(k_ready.index(ks), (i // K_SLOTS) & 1)
            acc = warpgroup_mma(q_s, k_s.permute((1, 0)), zero, use_acc=False, is_async=True)
            acc, q_s, k_s = warpgroup_mma_wait(num_outstanding=0, deps=[acc, q_s, k_s])
            mbarrier.arrive(k_empty.index(ks))
            out = acc.to(c_desc.dtype)
            c_smem = c_bufs.index(CID * EPI + (i // 2) % EPI)
            tma.store_wait(EPI - 1)              # the store that last used this buffer is done
            c_smem.store(out)
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [row, _tile_col(s, g, N, SHARE, STRIDED)], c_smem)
        mbarrier.arrive(q_empty.index(qs))
    tma.store_wait(0)


@gluon.jit
def _qk_shared_kernel(a_desc, b_desc, c_desc, M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr,
                      SHARE: gl.constexpr, NPROG: gl.constexpr, Q_SLOTS: gl.constexpr,
                      K_SLOTS: gl.constexpr, EPI: gl.constexpr, STRIDED: gl.constexpr,
                      LOADER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr):
    dtype: gl.constexpr = a_desc.dtype
    q_bufs = gl.allocate_shared_memory(dtype, [Q_SLOTS] + a_desc.block_type.shape, a_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [K_SLOTS] + b_desc.block_type.shape, b_desc.layout)
    c_bufs = gl.allocate_shared_memory(c_desc.dtype, [2 * EPI] + c_desc.block_type.shape, c_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [Q_SLOTS, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [Q_SLOTS, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [K_SLOTS, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [K_SLOTS, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(Q_SLOTS):
        mbarrier.init(q_ready.index(s), count=1)
        mbarrier.init(q_empty.index(s), count=2)     # both consumers release a Q block
    for s in gl.static_range(K_SLOTS):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=1)
    fence_async_shared()

    CID0: gl.constexpr = 0
    CID1: gl.constexpr = 1
    gl.warp_specialize([
        (_consumer, (a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
                     k_empty, M, N, BATCH, SHARE, NPROG, Q_SLOTS, K_SLOTS, EPI, STRIDED, CID0)),
        (_loader, (a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
                   k_empty, M, N, BATCH, SHARE, NPROG, Q_SLOTS, K_SLOTS, EPI, STRIDED, CID0)),
        (_consumer, (a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
                     k_empty, M, N, BATCH, SHARE, NPROG, Q_SLOTS, K_SLOTS, EPI, STRIDED, CID1)),
    ], [1, 4], [LOADER_REGS, CONSUMER_REGS])


def _layout():
    return gl.NVMMASharedLayout.get_default_for([TILE, TILE], gl.bfloat16)


def supports(batch: int, m: int, n: int, d: int, share: int = 16) -> bool:
    return d == TILE and m % TILE == 0 and n % (TILE * share) == 0 and share % 2 == 0


def smem_tiles(q_slots: int, k_slots: int, epi: int) -> int:
    """32 KB tiles of shared memory a configuration takes (at most 7 fit in 227 KB)."""
    return q_slots + k_slots + 2 * epi


def launch_qk_shared(q: torch.Tensor, k: torch.Tensor, share: int = 16, q_slots: int = 2,
                     k_slots: int = 2, epi: int = 1, strided: int = 0,
                     nprog: int | None = None) -> torch.Tensor:
    """c [BATCH, M, N] = q [BATCH, M, 128] @ k [BATCH, N, 128]^T, bf16 (supports() must hold;
    k_slots even, so that each K slot belongs to one consumer)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    q, k = q.contiguous(), k.contiguous()
    batch, m, d = q.shape
    n = k.shape[1]
    assert q.dtype == k.dtype == torch.bfloat16 and supports(batch, m, n, d, share)
    assert k_slots % 2 == 0 and smem_tiles(q_slots, k_slots, epi) <= 7
    c = torch.empty(batch, m, n, device=q.device, dtype=q.dtype)
    lay = _layout()
    a_d = TensorDescriptor.from_tensor(q.view(batch * m, d), [TILE, TILE], lay)
    b_d = TensorDescriptor.from_tensor(k.view(batch * n, d), [TILE, TILE], lay)
    c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [TILE, TILE], lay)
    units = batch * (m // TILE) * (n // (TILE * share))
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    nprog = min(nprog or sms, units)
    _qk_shared_kernel[(nprog,)](a_d, b_d, c_d, m, n, batch, share, nprog, q_slots, k_slots, epi,
                                strided, LOADER_REGS, CONSUMER_REGS, num_warps=NUM_WARPS, maxnreg=MAXNREG)
    return c


CONFIGS = [  # (SHARE, Q_SLOTS, K_SLOTS, EPI, STRIDED)
    (2, 2, 2, 1, 0), (4, 2, 2, 1, 1), (8, 2, 2, 1, 1), (16, 2, 2, 1, 0), (16, 1, 4, 1, 0),
    (4, 1, 4, 1, 1),
]


def compile_check(M=2048, N=2048, BATCH=64, NPROG=132, SHARE=2, Q_SLOTS=2, K_SLOTS=2, EPI=1,
                  STRIDED=0):
    """Ahead-of-time compile for sm_90 on the CPU; print shared memory bytes."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    lay = _layout()
    desc = f"tensordesc<bf16[{TILE}, {TILE}],{lay!r}>"
    sig = {"a_desc": desc, "b_desc": desc, "c_desc": desc}
    consts = {"M": M, "N": N, "BATCH": BATCH, "SHARE": SHARE, "NPROG": NPROG, "Q_SLOTS": Q_SLOTS,
              "K_SLOTS": K_SLOTS, "EPI": EPI, "STRIDED": STRIDED, "LOADER_REGS": LOADER_REGS,
              "CONSUMER_REGS": CONSUMER_REGS}
    sig.update({name: "constexpr" for name in consts})
    ck = triton.compile(GluonASTSource(_qk_shared_kernel, sig, constexprs=consts),
                        target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": NUM_WARPS, "maxnreg": MAXNREG})
    print(f"SHARE={SHARE} Q_SLOTS={Q_SLOTS} K_SLOTS={K_SLOTS} EPI={EPI} STRIDED={STRIDED}: "
          f"shared memory bytes "
          f"{ck.metadata.shared}, wgmma {'wgmma.mma_async' in ck.asm['ptx']}, "
          f"setmaxnreg {'setmaxnreg' in ck.asm['ptx']}")
    return ck


def one_case(batch: int, seq: int, share: int, nprog: int, q_slots: int = 2, k_slots: int = 2,
             epi: int = 1, strided: int = 0) -> None:
    """One shape and configuration (share 0: cuBLAS, bmm.py and the round-14 ping-pong kernel
    instead), checked against torch.bmm before and after timing, then timed as the suite times
    kernels. Each case runs in a process of its own, so that a fault ends that case only."""
    from rooflab.validate.kernels import bmm
    from rooflab.validate.timing import bench_kernel
    torch.manual_seed(0)
    q = torch.randn(batch, seq, TILE, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, seq, TILE, device="cuda", dtype=torch.bfloat16)
    nbytes = 2 * (q.numel() + k.numel() + batch * seq * seq)
    ref = torch.bmm(q, k.transpose(1, 2))

    def rel(c):
        torch.cuda.synchronize()
        return ((c.float() - ref.float()).norm() / ref.float().norm()).item()

    if share == 0:
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        from gluon_qk import launch_gluon_qk
        for name, fn in (("cublas", lambda: torch.bmm(q, k.transpose(1, 2))),
                         ("bmm.py", lambda: bmm.launch_bmm(q, k, True)),
                         ("gluon ping-pong (round 14)", lambda: launch_gluon_qk(q, k))):
            err = rel(fn())
            p50, p20, p80, how = bench_kernel(fn)
            print(f"{name} B={batch} S={seq}: err {err:.2e} {p50 * 1e6:.1f} us (p20 {p20 * 1e6:.1f}, "
                  f"p80 {p80 * 1e6:.1f}) {nbytes / p50 / 1e12:.2f} TB/s {how}", flush=True)
        return
    fn = lambda: launch_qk_shared(q, k, share, q_slots, k_slots, epi, strided, nprog)  # noqa: E731
    err = rel(fn())
    p50, p20, p80, how = bench_kernel(fn)
    err_after = rel(fn())
    print(f"gluon shared-Q B={batch} S={seq} SHARE={share} Q_SLOTS={q_slots} K_SLOTS={k_slots} "
          f"EPI={epi} STRIDED={strided} nprog={nprog}: err {err:.2e} (after timing {err_after:.2e}) "
          f"{p50 * 1e6:.1f} us (p20 {p20 * 1e6:.1f}, p80 {p80 * 1e6:.1f}) "
          f"{nbytes / p50 / 1e12:.2f} TB/s {how}", flush=True)


if __name__ == "__main__":
    if "--case" in sys.argv:
        one_case(*[int(x) for x in sys.argv[sys.argv.index("--case") + 1:]])
    else:
        for share, q_slots, k_slots, epi, strided in CONFIGS:
            compile_check(SHARE=share, Q_SLOTS=q_slots, K_SLOTS=k_slots, EPI=epi, STRIDED=strided)
