#!/usr/bin/env python3
"""Sweep launch configurations of validation-suite kernels on the GPU, to pick the defaults in
rooflab/validate/kernels (row_config, gemm_config, the template configs) from measurements.

    PYTHONPATH=. python3 benchmarks/gpu_tune.py            # from the repository root, on the GPU

Each target is one kernel of one suite case (the shapes where the 2026-12-02 run fell short of
its bandwidth mark or of its prediction). For every configuration the kernel is built, checked
against the PyTorch reference (a mismatch is recorded as a failure, never timed) and timed as the
suite times it (`rooflab.validate.run.bench`: do_bench median, L2 flushed). Results, with the
copy bandwidth measured in the same run, go to $OUT/gpu_tune.json (rewritten after each target)
and a table to stdout. GPU_TUNE_DEADLINE (seconds, default 480) skips targets that would run past it.
"""

from __future__ import annotations

import datetime
import json
import os
import time
import traceback

import torch
import triton

from rooflab import api, hardware, workload
from rooflab.validate import run as vrun
from rooflab.validate import suite
from rooflab.validate.kernels import attention as A
from rooflab.validate.kernels import codegen
from rooflab.validate.kernels import qgemm as Q
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


def sweep(case: suite.Case, sched: str, name: str, variants: list, apply=None) -> None:
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
        row = {"config": v if isinstance(v, dict) else list(v)}
        try:
            b = codegen.build(sg, k, v if apply is None else None)
            env = {t: ref[t] for t in b.inputs}
            got = b.run(env)
            torch.cuda.synchronize()
            err = max(rel_error(val, ref[t]) for t, val in got.items())
            tol = max(TOLERANCE.get(g.tensors[t].dtype.name, 2e-2) for t in got)
            row["rel_error"] = err
            if not err <= tol:
                row["failed"] = f"differs from the reference by {err:.3g} (tolerance {tol:g})"
            else:
                p50, p20, p80 = vrun.bench(lambda: b.run(env))
                row.update(us=p50 * 1e6, p20_us=p20 * 1e6, p80_us=p80 * 1e6,
                           tb_per_s=cost.hbm_bytes / p50 / 1e12, tflop_per_s=cost.flops / p50 / 1e12)
        except Exception as e:                     # a config that does not compile is data too
            row["failed"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}" if str(e) else type(e).__name__
            traceback.print_exc(limit=1)
        finally:
            if restore:
                restore()
        target["results"].append(row)
        shown = (f"{row['us']:9.1f} us {row['tb_per_s']:5.2f} TB/s {row['tflop_per_s']:7.1f} TFLOP/s"
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


def tiny_kernel_timing() -> None:
    """How a 4 µs kernel's measurement depends on the method: the suite's bench (L2 flush, events
    around each launch), a CUDA graph of repeated launches, and the host time of one launch."""
    case = suite.pointwise_chain(16)
    for name in ("scale", "gate", "residual"):
        g, sg, k, _, ref = _kernel(case, "unfused", name)
        b = codegen.build(sg, k)
        env = {t: ref[t] for t in b.inputs}
        b.run(env)
        torch.cuda.synchronize()
        p50, p20, p80 = vrun.bench(lambda: b.run(env))
        graph_ms = triton.testing.do_bench_cudagraph(lambda: b.run(env), rep=50)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(2000):
            b.run(env)
        host_us = (time.perf_counter() - t) / 2000 * 1e6
        torch.cuda.synchronize()
        rec = {"kernel": name, "bench_us": p50 * 1e6, "bench_p20_us": p20 * 1e6,
               "bench_p80_us": p80 * 1e6, "cudagraph_us": graph_ms * 1e3, "host_launch_us": host_us}
        RESULT.setdefault("tiny", []).append(rec)
        print("tiny", rec, flush=True)
    save()


def main() -> None:
    props = torch.cuda.get_device_properties(0)
    RESULT["env"] = {"gpu": props.name, "sm_count": props.multi_processor_count,
                     "torch": torch.__version__, "triton": triton.__version__,
                     "cuda": torch.version.cuda, "git_sha": os.environ.get("ROOFLAB_GIT_SHA", ""),
                     "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                     "command": "PYTHONPATH=. python3 benchmarks/gpu_tune.py"}
    RESULT["env"]["copy_tb_per_s"] = copy_tb_per_s()
    print("copy", RESULT["env"]["copy_tb_per_s"], "TB/s", flush=True)
    save()

    # long rows: whole row in registers vs looped two-pass
    soft = suite.scale_softmax(4096, 32768)
    long_rows = [row(False, 32768, 32), row(False, 32768, 16)] + [
        row(True, c, w) for c in (1024, 2048, 4096, 8192) for w in (4, 8, 16) if c // (32 * w) >= 4]
    sweep(soft, "fused", "scale+softmax", long_rows)
    ln = suite.layernorm_gelu(16384)
    d4096 = [row(False, 4096, w) for w in (4, 8, 16, 32)] + [
        row(True, c, w) for c, w in ((1024, 4), (2048, 4), (2048, 8), (4096, 8))]
    sweep(ln, "fused", "layernorm+gelu", d4096)
    sweep(ln, "unfused", "layernorm", d4096[:4] + d4096[5:6])
    sweep(suite.add_rmsnorm(32768), "fused", "residual_add+rmsnorm", d4096[:4] + d4096[5:6])

    # naive attention's batched GEMMs: write-bound QKᵀ (K=128), read-bound P·V
    att = suite.naive_attention(2, 32, 2048)
    sweep(att, "unfused", "qk", [
        gemm(128, 256, 64, 8, 3), gemm(128, 256, 128, 8, 2), gemm(128, 256, 128, 8, 1),
        gemm(128, 256, 64, 8, 2), gemm(128, 128, 128, 8, 2), gemm(128, 128, 128, 4, 2),
        gemm(128, 128, 64, 4, 3), gemm(128, 128, 128, 8, 1), gemm(64, 256, 128, 4, 2),
        gemm(64, 128, 128, 4, 2)])
    sweep(att, "unfused", "pv", [
        gemm(128, 128, 64, 8, 3), gemm(128, 128, 64, 4, 4), gemm(128, 128, 128, 8, 3),
        gemm(128, 128, 64, 8, 4), gemm(64, 128, 64, 4, 4), gemm(64, 128, 128, 4, 3),
        gemm(128, 128, 128, 4, 3), gemm(128, 128, 32, 4, 5)])
    small_att = suite.naive_attention(1, 32, 512)
    sweep(small_att, "unfused", "qk", [
        gemm(128, 256, 64, 8, 3), gemm(128, 128, 128, 8, 2), gemm(128, 128, 128, 4, 2),
        gemm(64, 128, 128, 4, 2)])

    # GEMM epilogues: whole tile vs two halves vs a narrower tile
    for m in (1024, 2048, 8192):
        bn = 128 if m <= 2048 else 256
        sweep(suite.gemm_epilogue(m, m, m), "fused", "gemm+bias+gelu+residual", [
            gemm(128, bn, 64, 8, 3), gemm(128, bn, 64, 8, 3, split=True),
            gemm(128, 128, 64, 8, 3), gemm(128, 128, 64, 4, 4), gemm(128, bn, 64, 8, 4, split=True)])
    mlp = suite.mlp_block(4096)
    for name in ("gate+silu+mul", "down+residual"):
        sweep(mlp, "fused", name, [gemm(128, 256, 64, 8, 3), gemm(128, 256, 64, 8, 3, split=True),
                                   gemm(128, 128, 64, 8, 3)])
    sweep(suite.gemm_epilogue(16, 4096, 4096), "fused", "gemm+bias+gelu+residual", [
        gemm(16, 64, 256, 4, 4, 1), gemm(16, 32, 256, 4, 4, 1), gemm(16, 64, 128, 4, 5, 1),
        gemm(16, 64, 512, 4, 3, 1), gemm(16, 32, 512, 4, 3, 1)])
    sweep(suite.mlp_block(16), "fused", "down+residual", [
        gemm(16, 64, 256, 4, 4, 1), gemm(16, 32, 256, 4, 4, 1), gemm(16, 64, 512, 4, 3, 1),
        gemm(16, 32, 512, 4, 3, 1)])

    # templates
    sweep(suite.fp8_gemm(2048, 2048, 2048), "fused", "gemm", [
        (128, 128, 128, 8, 4, 5, True), (128, 128, 128, 8, 4, 4, True), (128, 128, 128, 8, 8, 3, True),
        (128, 256, 128, 8, 8, 3, True), (64, 128, 128, 8, 4, 5, True), (128, 64, 128, 8, 4, 5, True),
        (64, 256, 128, 8, 4, 4, True), (128, 128, 64, 8, 4, 6, True)], patch(Q, "FP8_CONFIG"))
    decode = [(64, 4, 3), (128, 4, 3), (64, 8, 3), (128, 8, 3), (32, 4, 3), (64, 4, 4), (128, 4, 2)]
    sweep(suite.flash_attention(64, 32, 8, 1, 2048), "fused", "attention", decode,
          patch(A, "DECODE_CONFIG"))
    sweep(suite.flash_attention(16, 32, 8, 1, 8192), "fused", "attention", decode[:4],
          patch(A, "DECODE_CONFIG"))
    flash = [(128, 64, 8, 3), (64, 64, 4, 3), (64, 128, 4, 3), (128, 128, 8, 3), (64, 64, 4, 4)]
    sweep(suite.naive_attention(1, 32, 512), "fused", "qk+scale+mask+softmax+pv", flash,
          patch(A, "FLASH_CONFIGS", (128, True)))
    sweep(suite.flash_attention(4, 32, 8, 2048, 2048), "fused", "attention", flash,
          patch(A, "FLASH_CONFIGS", (128, True)))
    w4 = suite.w4a16(16, 8192, 8192, True)
    sweep(w4, "fused", "qgemm", [
        (16, 128, 128, 4, 4, 4, 0), (16, 64, 128, 4, 4, 4, 0), (16, 128, 128, 2, 4, 4, 0),
        (16, 256, 128, 4, 8, 3, 0), (16, 128, 64, 4, 4, 4, 0), (16, 64, 128, 2, 4, 3, 0),
        (16, 32, 128, 1, 4, 4, 0)], patch(Q, "W4A16_CONFIG_SMALL_M"))
    sweep(suite.w4a16(16, 8192, 8192, False), "fused", "dequant+gemm", [(16, 128, 128, 4, 4, 4, 0)],
          patch(Q, "W4A16_CONFIG_SMALL_M"))
    sweep(suite.w4a16(2048, 8192, 8192, True), "fused", "qgemm", [
        (256, 128, 64, 1, 8, 3, 0), (128, 128, 64, 1, 8, 3, 0), (128, 256, 64, 1, 8, 3, 0),
        (128, 128, 128, 1, 8, 3, 0), (64, 128, 128, 1, 4, 3, 0)], patch(Q, "W4A16_CONFIG_LARGE_M"))
    sweep(suite.w4a16(2048, 8192, 8192, False), "fused", "dequant+gemm", [(256, 128, 64, 1, 8, 3, 0)],
          patch(Q, "W4A16_CONFIG_LARGE_M"))
    RESULT["env"]["wall_s"] = time.time() - T0
    save()


if __name__ == "__main__":
    main()
