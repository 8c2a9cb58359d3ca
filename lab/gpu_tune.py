#!/usr/bin/env python3
"""Sweep launch configurations of validation-suite kernels on the GPU, to pick the defaults in
rooflab/validate/kernels (row_config, gemm_config, the template configs) from measurements.

    PYTHONPATH=. python3 lab/gpu_tune.py            # from the repository root, on the GPU

Each target is one kernel of one suite case (the shapes where the 2026-12-02 run fell short of
its bandwidth mark or of its prediction). For every configuration the kernel is built, checked
against the PyTorch reference (a mismatch is recorded as a failure, never timed) and timed as the
suite times it (`rooflab.validate.timing.bench_kernel`: a one-kernel CUDA graph replayed by
do_bench, median, L2 flushed; with compare=True also launched from Python). Results, with the
copy bandwidth measured in the same run, go to $OUT/gpu_tune.json (rewritten after each target)
and a table to stdout. GPU_TUNE_DEADLINE (seconds, default 480) skips targets that would run past it.

main() runs the latest round only. Rounds 1-15 are in the commits that ran them; the QKᵀ studies of
rounds 16-21 stay below as functions (lab/gpu_tune.md lists every round, the results are in
lab/results/).
"""

from __future__ import annotations

import datetime
import json
import os
import time
import traceback

import torch
import triton
import triton.language as tl

from rooflab import api, hardware, workload
from rooflab.validate import run as vrun
from rooflab.validate import suite
from rooflab.validate.timing import bench, bench_kernel
from rooflab.validate.kernels import route
from rooflab.validate.reference import TOLERANCE, rel_error, run_graph

T0 = time.time()
DEADLINE = float(os.environ.get("GPU_TUNE_DEADLINE", "480"))
H200 = hardware.load("h200")
RESULT: dict = {"env": {}, "targets": []}


def save() -> None:
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "gpu_tune.json"), "w") as f:
            json.dump(RESULT, f, indent=1)


def copy_tb_per_s() -> float:
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: y.copy_(x), warmup=10, rep=200, return_mode="median")
    return 2 * x.numel() / (ms * 1e-3) / 1e12


def _kernel(case: suite.Case, sched: str, name: str):
    g = workload.load_dict(case.workload)
    pred = api.predict_graph(g, H200, sched, "graph")
    k = next(k for k in pred.schedule.kernels if k.name == name)
    cost = next(c for c in pred.kernels if c.name == name)
    inputs = vrun._inputs(g, seed=1)
    return g, pred.schedule.graph, k, cost, run_graph(g, inputs)


def sweep(case: suite.Case, sched: str, name: str, variants: list, apply=None,
          compare: bool = False) -> None:
    """Time kernel `name` of `case`'s `sched` schedule under each variant: a codegen config
    (dict), or, with `apply`, a template config that apply(variant) installs (and returns a
    function restoring the default)."""
    if time.time() - T0 > DEADLINE:
        print(f"-- skipped {case.name} {name}: past the deadline")
        return
    g, sg, k, cost, ref = _kernel(case, sched, name)
    target = {"case": case.name, "schedule": sched, "kernel": name, "hbm_bytes": cost.hbm_bytes,
              "flops": cost.flops, "results": []}
    RESULT["targets"].append(target)
    for v in variants:
        restore = apply(v) if apply else None
        row = {"config": v if isinstance(v, dict) or v is None else list(v)}
        try:
            b = route.build(sg, k, v if apply is None else None)
            env = {t: ref[t] for t in b.inputs}
            got = b.run(env)
            torch.cuda.synchronize()
            err = max(rel_error(val, ref[t]) for t, val in got.items())
            tol = max(TOLERANCE.get(g.tensors[t].dtype.name, 2e-2) for t in got)
            row["rel_error"] = err
            if not err <= tol:
                row["failed"] = f"differs from the reference by {err:.3g} (tolerance {tol:g})"
            else:
                p50, p20, p80, how = bench_kernel(lambda: b.run(env))
                if compare:
                    row["eager_us"] = bench(lambda: b.run(env))[0] * 1e6
                row.update(us=p50 * 1e6, p20_us=p20 * 1e6, p80_us=p80 * 1e6, timing=how,
                           tb_per_s=cost.hbm_bytes / p50 / 1e12, tflop_per_s=cost.flops / p50 / 1e12)
        except Exception as e:                     # a config that does not compile is data too
            row["failed"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}" if str(e) else type(e).__name__
            traceback.print_exc(limit=1)
        finally:
            if restore:
                restore()
        target["results"].append(row)
        shown = (f"{row['us']:9.1f} us {row['tb_per_s']:5.2f} TB/s {row['tflop_per_s']:7.1f} TFLOP/s"
                 + (f" (eager {row['eager_us']:.1f} us)" if "eager_us" in row else "")
                 if "us" in row else "FAILED " + row["failed"])
        print(f"{case.name:48s} {sched:7s} {name:28s} {str(row['config']):70s} {shown}", flush=True)
    save()


def patch(module, attr: str, key=None):
    """apply() for template sweeps: sets module.attr (or module.attr[key]) to the variant."""
    def apply(v):
        old = getattr(module, attr)
        if key is None:
            setattr(module, attr, tuple(v))
            return lambda: setattr(module, attr, old)
        new = dict(old)
        new[key] = tuple(v)
        setattr(module, attr, new)
        return lambda: setattr(module, attr, old)
    return apply


def gemm(bm, bn, bk, warps, stages, group=8, split=False) -> dict:
    return dict(BM=bm, BN=bn, BK=bk, GROUP=group, num_warps=warps, num_stages=stages,
                split_epilogue=split)


def row(loop, block_c, warps) -> dict:
    return dict(loop=loop, BLOCK_C=block_c, num_warps=warps)


def record(label: str, fn, ref: torch.Tensor, nbytes: float, config) -> None:
    """Check fn() against ref, time it as the suite does, append to RESULT["custom"]."""
    rec = {"label": label, "config": config}
    try:
        err = rel_error(fn(), ref)
        rec["rel_error"] = err
        if not err <= 2e-2:
            rec["failed"] = f"differs from the reference by {err:.3g}"
        else:
            p50, p20, p80, how = bench_kernel(fn)
            rec.update(us=p50 * 1e6, p20_us=p20 * 1e6, p80_us=p80 * 1e6, timing=how,
                       tb_per_s=nbytes / p50 / 1e12)
    except Exception as e:
        rec["failed"] = f"{type(e).__name__}: {str(e)[:300]}"
        traceback.print_exc(limit=1)
    RESULT.setdefault("custom", []).append(rec)
    print(label, rec, flush=True)
    save()


def _qk_problem():
    """Naive attention's QKᵀ from the suite (B*H = 64, S = 2048, D = 128, bf16): (q, k, the
    torch.bmm reference, the bytes the kernel must move)."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k = (torch.randn(64, 2048, 128, device="cuda", dtype=torch.bfloat16, generator=gen)
            for _ in range(2))
    ref = torch.bmm(q, k.transpose(1, 2))
    return q, k, ref, 2 * (q.numel() + k.numel() + ref.numel())


@triton.jit
def _bmm_units(a_desc, b_desc, c_desc, bs_desc, cs_desc, M: tl.constexpr, N: tl.constexpr,
               K: tl.constexpr, BATCH: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, NPROG: tl.constexpr, STAGES: tl.constexpr, WS: tl.constexpr,
               SHARE: tl.constexpr, TAIL: tl.constexpr):
    # c[b] = a[b] @ b[b]^T, persistent. A unit is SHARE column tiles of one row block: with
    # SHARE > 1 the row block of a stays on chip while the program walks them (fewer bytes
    # through L2 per byte written). Units fill whole waves of NPROG programs; the tiles of the
    # last, partial wave are cut into TAIL column slices so that more SMs share them.
    tiles_m = M // BM
    groups_n = N // (BN * SHARE)
    units = tiles_m * groups_n * BATCH
    full = units // NPROG * NPROG
    # (a flattened loop with SHARE > 1 fails Triton 3.6's TMA lowering: then only the walk
    # over a unit's column tiles is pipelined)
    for u in tl.range(tl.program_id(0), full, NPROG, flatten=SHARE == 1,
                      warp_specialize=WS and SHARE == 1, num_stages=STAGES if SHARE == 1 else 1):
        pid_b = u // (tiles_m * groups_n)
        r = u % (tiles_m * groups_n)
        row = pid_b * M + (r // groups_n) * BM
        col0 = (r % groups_n) * BN * SHARE
        if SHARE == 1:
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k0 in range(0, K, BK):
                a = a_desc.load([row, k0])
                b = b_desc.load([pid_b * N + col0, k0]).T
                acc = tl.dot(a, b, acc)
            c_desc.store([row, col0], acc.to(c_desc.dtype))
        else:
            tl.static_assert(K == 2 * BK)
            a0 = a_desc.load([row, 0])
            a1 = a_desc.load([row, BK])
            for s in tl.range(SHARE, num_stages=STAGES, warp_specialize=WS):
                col = col0 + s * BN
                acc = tl.dot(a0, b_desc.load([pid_b * N + col, 0]).T)
                acc = tl.dot(a1, b_desc.load([pid_b * N + col, BK]).T, acc)
                c_desc.store([row, col], acc.to(c_desc.dtype))
    SBN: tl.constexpr = BN // TAIL
    for sub in range(tl.program_id(0), (units - full) * SHARE * TAIL, NPROG):
        t = sub // TAIL
        u = full + t // SHARE
        pid_b = u // (tiles_m * groups_n)
        r = u % (tiles_m * groups_n)
        row = pid_b * M + (r // groups_n) * BM
        col = (r % groups_n) * BN * SHARE + (t % SHARE) * BN + (sub % TAIL) * SBN
        acc = tl.zeros((BM, SBN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            acc = tl.dot(a_desc.load([row, k0]), bs_desc.load([pid_b * N + col, k0]).T, acc)
        cs_desc.store([row, col], acc.to(cs_desc.dtype))


def custom_qk() -> None:
    from triton.tools.tensor_descriptor import TensorDescriptor
    from rooflab.validate.kernels import bmm
    q, k, ref, nbytes = _qk_problem()
    (batch, m, dim), n = q.shape, k.shape[1]
    record("cublas qk", lambda: torch.bmm(q, k.transpose(1, 2)), ref, nbytes, None)
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default")
    # the template's own knobs: BK 32 (more, smaller pipeline stages), a split store with 4 stages
    for cfg in ((128, 256, 32, 8, 4, True, False), (128, 256, 32, 8, 6, True, False),
                (128, 256, 64, 8, 4, True, True), (128, 256, 32, 8, 6, True, True)):
        record("bmm qk", lambda cfg=cfg: bmm.launch_bmm(q, k, True, cfg), ref, nbytes, list(cfg))
    c = torch.zeros_like(ref)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    # (BM, BN, BK, warps, stages, warp_specialize, SHARE, TAIL)
    for cfg in ((128, 256, 64, 8, 3, True, 1, 1), (128, 256, 64, 8, 3, True, 1, 8),
                (128, 256, 64, 8, 3, True, 1, 16), (128, 256, 64, 8, 3, False, 1, 16),
                (128, 256, 64, 8, 2, True, 2, 16), (128, 256, 64, 8, 2, False, 2, 16),
                (128, 256, 64, 8, 2, True, 4, 2), (128, 256, 64, 8, 1, False, 2, 16),
                (128, 128, 64, 8, 3, True, 2, 8), (128, 128, 64, 8, 3, True, 4, 8),
                (128, 128, 64, 8, 3, True, 4, 8), (128, 128, 64, 8, 3, False, 8, 1)):
        def fn(cfg=cfg):
            bm, bn, bk, warps, stages, ws, share, tail = cfg
            a_d = TensorDescriptor.from_tensor(q.view(batch * m, dim), [bm, bk])
            b_d = TensorDescriptor.from_tensor(k.view(batch * n, dim), [bn, bk])
            c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [bm, bn])
            bs_d = TensorDescriptor.from_tensor(k.view(batch * n, dim), [bn // tail, bk])
            cs_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [bm, bn // tail])
            _bmm_units[(sms,)](a_d, b_d, c_d, bs_d, cs_d, m, n, dim, batch, BM=bm, BN=bn, BK=bk,
                               NPROG=sms, STAGES=stages, WS=ws, SHARE=share, TAIL=tail,
                               num_warps=warps)
            return c
        record("units qk", fn, ref, nbytes, list(cfg))
        c.zero_()               # a variant must write every element itself
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default, again")
    record("cublas qk", lambda: torch.bmm(q, k.transpose(1, 2)), ref, nbytes, "again")


def _replay_us(fn, flush, reps: int = 60) -> tuple[float, float, float]:
    """(median, p20, p80) µs of fn captured as a one-call CUDA graph and replayed, with
    flush() run (untimed) before every replay."""
    from rooflab.validate.timing import capture
    g = capture(fn)
    for _ in range(5):
        flush()
        g.replay()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush()
        starts[i].record()
        g.replay()
        ends[i].record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))
    return t[reps // 2], t[reps // 5], t[4 * reps // 5]


def flush_study() -> None:
    """The same kernels timed after three ways of emptying the L2: writing a 256 MB buffer
    (triton's do_bench: it leaves the L2 full of dirty lines that the timed kernel then has
    to write back), reading a 256 MB buffer (the L2 then holds clean lines only), and not
    flushing at all."""
    from rooflab.validate.kernels import bmm
    junk = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    junk2 = torch.ones(64 << 20, dtype=torch.float32, device="cuda")
    sink = torch.empty((), dtype=torch.float32, device="cuda")
    flushes = {"write": junk.zero_, "read": lambda: torch.sum(junk2, dim=0, out=sink),
               "write+read": lambda: (junk.zero_(), torch.sum(junk2, dim=0, out=sink)),
               "none": lambda: None}
    gib = 1 << 30
    x = torch.randn(gib // 4, device="cuda")
    y = torch.empty_like(x)
    bsz, heads, seq, dim = 2, 32, 2048, 128
    q, k = (torch.randn(bsz * heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    c = torch.empty(bsz * heads, seq, seq, device="cuda", dtype=torch.bfloat16)
    qk_bytes = 2 * (q.numel() + k.numel() + c.numel())
    ln_x = torch.randn(16384, 4096, device="cuda", dtype=torch.bfloat16)
    ln_w = torch.ones(4096, device="cuda", dtype=torch.bfloat16)
    kernels = {
        "copy 1 GiB fp32": (lambda: y.copy_(x), 2 * gib),
        "write 1 GiB fp32 (fill_)": (lambda: y.fill_(1.0), gib),
        "read 1 GiB fp32 (sum)": (lambda: torch.sum(x, dim=0, out=sink), gib),
        "qk bmm.py": (lambda: bmm.launch_bmm(q, k, True), qk_bytes),
        "qk cublas": (lambda: torch.bmm(q, k.transpose(1, 2), out=c), qk_bytes),
        "layer_norm 16384x4096 bf16 (torch)": (
            lambda: torch.nn.functional.layer_norm(ln_x, (4096,), ln_w), 2 * ln_x.numel() * 2),
    }
    rows = []
    for name, (fn, nbytes) in kernels.items():
        for how, flush in flushes.items():
            p50, p20, p80 = _replay_us(fn, flush)
            rows.append({"kernel": name, "flush": how, "us": p50, "p20_us": p20, "p80_us": p80,
                         "bytes": nbytes, "tb_per_s": nbytes / p50 / 1e6})
            print(f"{name:36s} {how:11s} {p50:9.1f} us  {nbytes / p50 / 1e6:5.2f} TB/s", flush=True)
    RESULT["flush_study"] = rows
    save()


@triton.jit
def _tile_origin(tile, M: tl.constexpr, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 ORDER: tl.constexpr):
    # (batch, first row in the flattened [BATCH*M, N] output, first column) of a tile; within a
    # batch the tiles go row-major (ORDER 0), column-major (1), or in groups of ORDER row
    # blocks walked column by column (ORDER >= 2, the Triton matmul tutorial's grouping)
    tiles_m = M // BM
    tiles_n = N // BN
    pid_b = tile // (tiles_m * tiles_n)
    r = tile % (tiles_m * tiles_n)
    if ORDER == 0:
        tm = r // tiles_n
        tn = r % tiles_n
    elif ORDER == 1:
        tm = r % tiles_m
        tn = r // tiles_m
    else:
        grp = r // (ORDER * tiles_n)
        w = r % (ORDER * tiles_n)
        tm = grp * ORDER + w % ORDER
        tn = w // ORDER
    return pid_b, pid_b * M + tm * BM, tn * BN


@triton.jit
def _qk_ordered(a_desc, b_desc, c_desc, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                BATCH: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                NPROG: tl.constexpr, STAGES: tl.constexpr, WS: tl.constexpr, ORDER: tl.constexpr):
    # bmm.py's kernel (TRANS_B) with the tile order as a parameter
    tiles = (M // BM) * (N // BN) * BATCH
    for tile in tl.range(tl.program_id(0), tiles, NPROG, flatten=True, warp_specialize=WS,
                         num_stages=STAGES):
        pid_b, row, col = _tile_origin(tile, M, N, BM, BN, ORDER)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            acc = tl.dot(a_desc.load([row, k0]), b_desc.load([pid_b * N + col, k0]).T, acc)
        c_desc.store([row, col], acc.to(c_desc.dtype))


@triton.jit
def _store_tiles(c_desc, M: tl.constexpr, N: tl.constexpr, BATCH: tl.constexpr,
                 BM: tl.constexpr, BN: tl.constexpr, NPROG: tl.constexpr, ORDER: tl.constexpr):
    # the QKᵀ kernel's writes alone: every tile filled with its index, through TMA stores
    tiles = (M // BM) * (N // BN) * BATCH
    for tile in tl.range(tl.program_id(0), tiles, NPROG, flatten=True):
        pid_b, row, col = _tile_origin(tile, M, N, BM, BN, ORDER)
        c_desc.store([row, col], tl.full((BM, BN), 0, tl.int32).to(c_desc.dtype) + (tile % 251).to(c_desc.dtype))


@triton.jit
def _qk_lagged(a_desc, b_desc, c_desc, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               BATCH: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               NPROG: tl.constexpr, STAGES: tl.constexpr, ORDER: tl.constexpr,
               FLAT: tl.constexpr, EARLY: tl.constexpr):
    # the epilogue one tile behind: a tile's bf16 values are written while the next tile's
    # MMAs run (one warp group set does both, so without the lag the tensor cores idle while
    # a tile is converted, staged in shared memory and stored)
    tiles = (M // BM) * (N // BN) * BATCH
    pid = tl.program_id(0)
    prev = tl.zeros((BM, BN), dtype=c_desc.dtype)
    prev_row = pid * 0
    prev_col = pid * 0
    for tile in tl.range(pid, tiles, NPROG, flatten=FLAT, num_stages=STAGES):
        pid_b, row, col = _tile_origin(tile, M, N, BM, BN, ORDER)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            acc = tl.dot(a_desc.load([row, k0]), b_desc.load([pid_b * N + col, k0]).T, acc)
            if EARLY:       # right after this tile's first MMA is issued
                if k0 == 0 and tile != pid:
                    c_desc.store([prev_row, prev_col], prev)
        if not EARLY and tile != pid:
            c_desc.store([prev_row, prev_col], prev)
        prev = acc.to(c_desc.dtype)
        prev_row = row
        prev_col = col
    if pid < tiles:
        c_desc.store([prev_row, prev_col], prev)


def order_study() -> None:
    """Round 18: which order of output tiles the H200's memory system writes fastest (a
    store-only kernel), and the QKᵀ kernel in those orders and as 2-CTA clusters."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    batch, m, n, dim = 64, 2048, 2048, 128
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    c = torch.zeros(batch, m, n, device="cuda", dtype=torch.bfloat16)
    out_bytes = c.numel() * 2
    rows = []
    f = torch.empty(out_bytes // 4, device="cuda", dtype=torch.float32)
    for label, fn, nbytes in (("fill_ fp32, same bytes", lambda: f.fill_(1.0), out_bytes),
                              ("fill_ bf16", lambda: c.fill_(1.0), out_bytes)):
        p50 = bench_kernel(fn)[0]
        rows.append({"label": label, "us": p50 * 1e6, "tb_per_s": nbytes / p50 / 1e12})
        print(rows[-1], flush=True)
    for bm, bn, order, per_sm in ((128, 256, 0, 1), (128, 256, 1, 1), (128, 256, 4, 1),
                                  (256, 128, 0, 1), (128, 128, 0, 1), (128, 128, 0, 2),
                                  (64, 256, 0, 2), (128, 256, 0, 2)):
        def fn(bm=bm, bn=bn, order=order, per_sm=per_sm):
            c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [bm, bn])
            _store_tiles[(sms * per_sm,)](c_d, m, n, batch, BM=bm, BN=bn, NPROG=sms * per_sm,
                                          ORDER=order, num_warps=8)
        try:
            p50 = bench_kernel(fn)[0]
            rows.append({"label": "store tiles", "config": [bm, bn, order, per_sm],
                         "us": p50 * 1e6, "tb_per_s": out_bytes / p50 / 1e12})
        except Exception as e:
            rows.append({"label": "store tiles", "config": [bm, bn, order, per_sm],
                         "failed": f"{type(e).__name__}: {str(e)[:200]}"})
        print(rows[-1], flush=True)
    RESULT["store_study"] = rows
    save()
    q, k, ref, nbytes = _qk_problem()
    from rooflab.validate.kernels import bmm
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default")
    # (BM, BN, warps, stages, warp_specialize, ORDER, num_ctas)
    for cfg in ((128, 256, 8, 3, True, 0, 1), (128, 256, 8, 3, True, 1, 1),
                (128, 256, 8, 3, True, 2, 1), (128, 256, 8, 3, True, 4, 1),
                (128, 256, 8, 3, True, 8, 1), (256, 128, 8, 3, True, 1, 1),
                (128, 256, 8, 3, False, 0, 2), (128, 256, 8, 3, True, 0, 2),
                (128, 256, 8, 4, False, 0, 2), (128, 256, 8, 4, False, 1, 2)):
        def fn(cfg=cfg):
            bm, bn, warps, stages, ws, order, ctas = cfg
            a_d = TensorDescriptor.from_tensor(q.view(batch * m, dim), [bm, 64])
            b_d = TensorDescriptor.from_tensor(k.view(batch * n, dim), [bn, 64])
            c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [bm, bn])
            nprog = sms // ctas
            _qk_ordered[(nprog,)](a_d, b_d, c_d, m, n, dim, batch, BM=bm, BN=bn, BK=64,
                                  NPROG=nprog, STAGES=stages, WS=ws, ORDER=order,
                                  num_warps=warps, num_ctas=ctas)
            return c
        c.zero_()
        record("ordered qk", fn, ref, nbytes, list(cfg))
    record("cublas qk", lambda: torch.bmm(q, k.transpose(1, 2)), ref, nbytes, None)
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default, again")


def lag_study() -> None:
    """Round 19: QKᵀ with the epilogue one tile behind, so that a tile's store overlaps the next
    tile's first MMA (EARLY) or at least its loads."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    from rooflab.validate.kernels import bmm
    q, k, ref, nbytes = _qk_problem()
    (batch, m, dim), n = q.shape, k.shape[1]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    c = torch.zeros_like(ref)
    record("cublas qk", lambda: torch.bmm(q, k.transpose(1, 2)), ref, nbytes, None)
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default")
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True, (128, 256, 64, 8, 2, False, False)), ref,
           nbytes, [128, 256, 64, 8, 2, False, False])
    # (BM, BN, warps, stages, ORDER, EARLY, programs per SM)
    for cfg in ((128, 256, 8, 2, 0, False, 1), (128, 256, 8, 2, 0, True, 1),
                (128, 256, 8, 2, 2, True, 1), (128, 128, 8, 3, 0, True, 1),
                (128, 128, 8, 4, 0, True, 1), (128, 128, 8, 4, 2, True, 1),
                (128, 128, 8, 3, 0, False, 1), (128, 128, 4, 2, 0, True, 2)):
        def fn(cfg=cfg):
            bm, bn, warps, stages, order, early, per_sm = cfg
            a_d = TensorDescriptor.from_tensor(q.view(batch * m, dim), [bm, 64])
            b_d = TensorDescriptor.from_tensor(k.view(batch * n, dim), [bn, 64])
            c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [bm, bn])
            nprog = sms * per_sm
            _qk_lagged[(nprog,)](a_d, b_d, c_d, m, n, dim, batch, BM=bm, BN=bn, BK=64,
                                 NPROG=nprog, STAGES=stages, ORDER=order, FLAT=True,
                                 EARLY=early, num_warps=warps)
            return c
        c.zero_()
        record("lagged qk", fn, ref, nbytes, list(cfg))
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default, again")
    record("cublas qk", lambda: torch.bmm(q, k.transpose(1, 2)), ref, nbytes, "again")


def stages_study() -> None:
    """Round 20: bmm.py's kernel with deeper operand pipelines. Two stages of BK 64 (one tile
    ahead at most) took 262 µs in round 19 against 181 with three: the loads' latency is
    exposed. Deeper pipelines fit in shared memory with 128x128 tiles, or with a half-width
    store buffer."""
    from rooflab.validate.kernels import bmm
    q, k, ref, nbytes = _qk_problem()
    record("cublas qk", lambda: torch.bmm(q, k.transpose(1, 2)), ref, nbytes, None)
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default")
    for cfg in ((128, 128, 64, 8, 3, False, False), (128, 128, 64, 8, 4, False, False),
                (128, 128, 64, 8, 5, False, False), (128, 128, 64, 8, 6, False, False),
                (128, 128, 64, 4, 6, False, False), (128, 128, 32, 8, 10, False, False),
                (128, 128, 64, 8, 6, False, True), (128, 256, 64, 8, 4, False, True),
                (256, 128, 64, 8, 4, False, True)):
        record("bmm qk", lambda cfg=cfg: bmm.launch_bmm(q, k, True, cfg), ref, nbytes, list(cfg))
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default, again")
    record("cublas qk", lambda: torch.bmm(q, k.transpose(1, 2)), ref, nbytes, "again")


@triton.jit
def _qk_share(a_desc, b_desc, c_desc, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
              BATCH: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              NPROG: tl.constexpr, STAGES: tl.constexpr, SHARE: tl.constexpr):
    # units of SHARE column tiles of one row block, as _bmm_units, but flattened: Q's row block
    # is loaded once per unit into registers (a loop-carried value: loading it before the inner
    # loop fails Triton 3.6's TMA lowering once flattened), so the pipeliner still prefetches K
    # across units
    tiles_m = M // BM
    groups_n = N // (BN * SHARE)
    units = tiles_m * groups_n * BATCH
    q0 = tl.zeros((BM, BK), dtype=a_desc.dtype)
    q1 = tl.zeros((BM, BK), dtype=a_desc.dtype)
    for u in tl.range(tl.program_id(0), units, NPROG, flatten=True, num_stages=STAGES):
        pid_b = u // (tiles_m * groups_n)
        r = u % (tiles_m * groups_n)
        row = pid_b * M + (r // groups_n) * BM
        col0 = (r % groups_n) * BN * SHARE
        for s in range(SHARE):
            if s == 0:
                q0 = a_desc.load([row, 0])
                q1 = a_desc.load([row, BK])
            col = col0 + s * BN
            acc = tl.dot(q0, b_desc.load([pid_b * N + col, 0]).T)
            acc = tl.dot(q1, b_desc.load([pid_b * N + col, BK]).T, acc)
            c_desc.store([row, col], acc.to(c_desc.dtype))


def share_study() -> None:
    """Round 21: QKᵀ with Q's row block shared by SHARE column tiles in a flattened loop."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    from rooflab.validate.kernels import bmm
    q, k, ref, nbytes = _qk_problem()
    (batch, m, dim), n = q.shape, k.shape[1]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    c = torch.zeros_like(ref)
    record("cublas qk", lambda: torch.bmm(q, k.transpose(1, 2)), ref, nbytes, None)
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default")
    # (BM, BN, warps, stages, SHARE)
    for cfg in ((128, 256, 8, 2, 2), (128, 256, 8, 2, 4), (128, 256, 8, 2, 8),
                (128, 128, 8, 4, 4), (128, 128, 8, 4, 8), (128, 128, 8, 4, 16),
                (128, 128, 8, 5, 16)):
        def fn(cfg=cfg):
            bm, bn, warps, stages, share = cfg
            a_d = TensorDescriptor.from_tensor(q.view(batch * m, dim), [bm, 64])
            b_d = TensorDescriptor.from_tensor(k.view(batch * n, dim), [bn, 64])
            c_d = TensorDescriptor.from_tensor(c.view(batch * m, n), [bm, bn])
            _qk_share[(sms,)](a_d, b_d, c_d, m, n, dim, batch, BM=bm, BN=bn, BK=64, NPROG=sms,
                              STAGES=stages, SHARE=share, num_warps=warps)
            return c
        c.zero_()
        record("shared-Q qk", fn, ref, nbytes, list(cfg))
    record("bmm qk", lambda: bmm.launch_bmm(q, k, True), ref, nbytes, "default, again")


def main() -> None:
    props = torch.cuda.get_device_properties(0)
    RESULT["env"] = {"gpu": props.name, "sm_count": props.multi_processor_count,
                     "torch": torch.__version__, "triton": triton.__version__,
                     "cuda": torch.version.cuda, "git_sha": os.environ.get("ROOFLAB_GIT_SHA", ""),
                     "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "command": "PYTHONPATH=. python3 lab/gpu_tune.py"}
    RESULT["env"]["copy_tb_per_s"] = copy_tb_per_s()
    print("copy", RESULT["env"]["copy_tb_per_s"], "TB/s", flush=True)
    save()

    # round 21: QKᵀ with Q's row block loaded once for SHARE column tiles, flattened
    share_study()
    RESULT["env"]["wall_s"] = time.time() - T0
    save()


if __name__ == "__main__":
    main()
