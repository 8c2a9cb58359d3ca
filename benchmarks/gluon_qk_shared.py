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
    """(row of the unit's Q block in the [BATCH*M, D] view, first column of its C tiles, row of its
    first K block in the [BATCH*N, D] view) of local unit j."""
    groups: gl.constexpr = N // (128 * SHARE)
    per_batch: gl.constexpr = (M // 128) * groups
    u = gl.program_id(0) + j * NPROG
    b = u // per_batch
    r = u % per_batch
    row = b * M + (r // groups) * 128
    col0 = (r % groups) * (128 * SHARE)
    return row, col0, b * N + col0


@gluon.jit
def _num_local_units(M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, SHARE: gl.constexpr,
                     NPROG: gl.constexpr):
    units: gl.constexpr = BATCH * (M // 128) * (N // (128 * SHARE))
    return (units - gl.program_id(0) + NPROG - 1) // NPROG


@gluon.jit
def _loader(a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready, k_empty,
            M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, SHARE: gl.constexpr,
            NPROG: gl.constexpr, K_SLOTS: gl.constexpr, CID: gl.constexpr):
    n_units = _num_local_units(M, N, BATCH, SHARE, NPROG)
    for j in range(n_units):
        row, col0, krow = _unit(j, M, N, SHARE, NPROG)
        qs = j % 2
        mbarrier.wait(q_empty.index(qs), ((j // 2) & 1) ^ 1)
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
def _consumer(a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready, k_empty,
              M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr, SHARE: gl.constexpr,
              NPROG: gl.constexpr, K_SLOTS: gl.constexpr, CID: gl.constexpr):
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, 128, 16])
    zero = gl.zeros([128, 128], gl.float32, acc_layout)
    c_smem = c_bufs.index(CID)
    n_units = _num_local_units(M, N, BATCH, SHARE, NPROG)
    for j in range(n_units):
        row, col0, krow = _unit(j, M, N, SHARE, NPROG)
        qs = j % 2
        mbarrier.wait(q_ready.index(qs), (j // 2) & 1)
        q_s = q_bufs.index(qs)
        for s in range(CID, SHARE, 2):
            i = j * SHARE + s
            ks = i % K_SLOTS
            k_s = k_bufs.index(ks)
            mbarrier.wait(k_ready.index(ks), (i // K_SLOTS) & 1)
            acc = warpgroup_mma(q_s, k_s.permute((1, 0)), zero, use_acc=False, is_async=True)
            acc, q_s, k_s = warpgroup_mma_wait(num_outstanding=0, deps=[acc, q_s, k_s])
            mbarrier.arrive(k_empty.index(ks))
            out = acc.to(c_desc.dtype)
            tma.store_wait(0)                    # this consumer's previous store has left c_smem
            c_smem.store(out)
            fence_async_shared()
            tma.async_copy_shared_to_global(c_desc, [row, col0 + s * 128], c_smem)
        mbarrier.arrive(q_empty.index(qs))
    tma.store_wait(0)


@gluon.jit
def _qk_shared_kernel(a_desc, b_desc, c_desc, M: gl.constexpr, N: gl.constexpr, BATCH: gl.constexpr,
                      SHARE: gl.constexpr, NPROG: gl.constexpr, K_SLOTS: gl.constexpr,
                      LOADER_REGS: gl.constexpr, CONSUMER_REGS: gl.constexpr):
    dtype: gl.constexpr = a_desc.dtype
    q_bufs = gl.allocate_shared_memory(dtype, [2] + a_desc.block_type.shape, a_desc.layout)
    k_bufs = gl.allocate_shared_memory(dtype, [K_SLOTS] + b_desc.block_type.shape, b_desc.layout)
    c_bufs = gl.allocate_shared_memory(c_desc.dtype, [2] + c_desc.block_type.shape, c_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [K_SLOTS, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [K_SLOTS, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(2):
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
                     k_empty, M, N, BATCH, SHARE, NPROG, K_SLOTS, CID0)),
        (_loader, (a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
                   k_empty, M, N, BATCH, SHARE, NPROG, K_SLOTS, CID0)),
        (_consumer, (a_desc, b_desc, c_desc, q_bufs, k_bufs, c_bufs, q_ready, q_empty, k_ready,
                     k_empty, M, N, BATCH, SHARE, NPROG, K_SLOTS, CID1)),
    ], [1, 4], [LOADER_REGS, CONSUMER_REGS])


def _layout():
    return gl.NVMMASharedLayout.get_default_for([TILE, TILE], gl.bfloat16)


def supports(batch: int, m: int, n: int, d: int, share: int = 16) -> bool:
    return d == TILE and m % TILE == 0 and n % (TILE * share) == 0 and share % 2 == 0


def launch_qk_shared(q: torch.Tensor, k: torch.Tensor, share: int = 16, k_slots: int = 3,
                     nprog: int | None = None) -> torch.Tensor:
    """c [BATCH, M, N] = q [BATCH, M, 128] @ k [BATCH, N, 128]^T, bf16 (supports() must hold)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    q, k = q.contiguous(), k.contiguous()
    batch, m, d = q.shape
    n = k.shape[1]
    assert q.dtype == k.dtype == torch.bfloat16 and supports(batch, m, n, d, share)
    c = torch.empty(batch, m, n, device=q.device, dtype=q.dtype)
    lay = _layout()
    a_d = TensorDescriptor.from_tensor(q.view(batch * m, d), [TILE, TILE], lay)
    b_d = TensorDescriptor.from_tensor(k.view(batch * n, d), [TILE, TILE], lay)
    c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [TILE, TILE], lay)
    units = batch * (m // TILE) * (n // (TILE * share))
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    nprog = min(nprog or sms, units)
    _qk_shared_kernel[(nprog,)](a_d, b_d, c_d, m, n, batch, share, nprog, k_slots, LOADER_REGS,
                                CONSUMER_REGS, num_warps=NUM_WARPS, maxnreg=MAXNREG)
    return c


def compile_check(M=2048, N=2048, BATCH=64, NPROG=132, SHARE=16, K_SLOTS=3):
    """Ahead-of-time compile for sm_90 on the CPU; print shared memory bytes."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    lay = _layout()
    desc = f"tensordesc<bf16[{TILE}, {TILE}],{lay!r}>"
    sig = {"a_desc": desc, "b_desc": desc, "c_desc": desc}
    consts = {"M": M, "N": N, "BATCH": BATCH, "SHARE": SHARE, "NPROG": NPROG, "K_SLOTS": K_SLOTS,
              "LOADER_REGS": LOADER_REGS, "CONSUMER_REGS": CONSUMER_REGS}
    sig.update({name: "constexpr" for name in consts})
    ck = triton.compile(GluonASTSource(_qk_shared_kernel, sig, constexprs=consts),
                        target=GPUTarget("cuda", 90, 32),
                        options={"num_warps": NUM_WARPS, "maxnreg": MAXNREG})
    print(f"SHARE={SHARE} K_SLOTS={K_SLOTS}: shared memory bytes {ck.metadata.shared}, "
          f"wgmma {'wgmma.mma_async' in ck.asm['ptx']}, setmaxnreg {'setmaxnreg' in ck.asm['ptx']}")
    return ck


def check_and_time(out: str | None = None):
    """Check every variant against torch.bmm, then time it as the suite times kernels (one-kernel
    graph replay, L2 flushed, median), beside bmm.py's kernel and cuBLAS."""
    import json
    from rooflab.validate.kernels import bmm
    from rooflab.validate.timing import bench_kernel
    torch.manual_seed(0)
    B, S, D = 64, 2048, 128
    q = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    ref = torch.bmm(q, k.transpose(1, 2))
    nbytes = 2 * (q.numel() + k.numel() + B * S * S)
    rows = []
    variants = [("cuBLAS", None, lambda: torch.bmm(q, k.transpose(1, 2))),
                ("bmm.py default", None, lambda: bmm.launch_bmm(q, k, True))]
    for share, slots in ((16, 3), (8, 3), (4, 3), (2, 3), (16, 2), (16, 4)):
        variants.append(("gluon shared-Q", [share, slots],
                         lambda share=share, slots=slots: launch_qk_shared(q, k, share, slots)))
    variants += [("bmm.py default", "again", lambda: bmm.launch_bmm(q, k, True)),
                 ("cuBLAS", "again", lambda: torch.bmm(q, k.transpose(1, 2)))]
    for name, cfg, fn in variants:
        row = {"label": name, "config": cfg}
        try:
            got = fn()
            torch.cuda.synchronize()
            err = ((got.float() - ref.float()).norm() / ref.float().norm()).item()
            row["rel_error"] = err
            if err > 1e-2:
                row["failed"] = f"differs from torch.bmm by {err:.3g}"
            else:
                p50, p20, p80, how = bench_kernel(fn)
                row.update(us=p50 * 1e6, p20_us=p20 * 1e6, p80_us=p80 * 1e6, timing=how,
                           tb_per_s=nbytes / p50 / 1e12)
        except Exception as e:          # a variant that does not compile or run is data too
            row["failed"] = f"{type(e).__name__}: {str(e)[:300]}"
        rows.append(row)
        print(row, flush=True)
    if out:
        with open(out, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                       "triton": triton.__version__, "results": rows}, f, indent=1)


def one_case(batch: int, seq: int, share: int, nprog: int, k_slots: int = 3) -> None:
    """One shape and configuration (share 0: cuBLAS and bmm.py instead), checked against
    torch.bmm before and after timing, then timed as the suite times kernels. Each case runs in a
    process of its own (see the module docstring: some configurations fault the GPU)."""
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
        for name, fn in (("cublas", lambda: torch.bmm(q, k.transpose(1, 2))),
                         ("bmm.py", lambda: bmm.launch_bmm(q, k, True))):
            p50 = bench_kernel(fn)[0]
            print(f"{name} B={batch} S={seq}: {p50 * 1e6:.1f} us {nbytes / p50 / 1e12:.2f} TB/s",
                  flush=True)
        return
    fn = lambda: launch_qk_shared(q, k, share, k_slots, nprog)  # noqa: E731
    err = rel(fn())
    p50, p20, p80, how = bench_kernel(fn)
    err_after = rel(fn())
    print(f"gluon shared-Q B={batch} S={seq} SHARE={share} K_SLOTS={k_slots} nprog={nprog}: "
          f"err {err:.2e} (after timing {err_after:.2e}) {p50 * 1e6:.1f} us (p20 {p20 * 1e6:.1f}, "
          f"p80 {p80 * 1e6:.1f}) {nbytes / p50 / 1e12:.2f} TB/s {how}", flush=True)


if __name__ == "__main__":
    if "--case" in sys.argv:
        one_case(*[int(x) for x in sys.argv[sys.argv.index("--case") + 1:]])
    elif "--gpu" in sys.argv:
        at = sys.argv.index("--gpu") + 1
        check_and_time(sys.argv[at] if len(sys.argv) > at else None)
    else:
        for share, slots in ((16, 3), (8, 3), (2, 3), (16, 2), (16, 4)):
            compile_check(SHARE=share, K_SLOTS=slots)
