#!/usr/bin/env python3
"""Check and time the hand-written Triton kernels (rooflab/validate/kernels/attention.py, qgemm.py)
against torch references and torch baselines on one GPU.

    PYTHONPATH=. python3 lab/gpu_kernels.py            # from the repository root

1. Ceilings: a device-to-device copy (bytes read + written) and a bf16 8192^3 torch.matmul.
2. Correctness on fresh random inputs (never zeros), odd shapes included, against the fp32 torch
   references: relative error ||out - ref|| / ||ref|| under a bound fitted to the dtype.
3. Config sweeps at the benchmark shapes (each timed with triton.testing.do_bench, warmup=25,
   rep=100, median; do_bench clears the L2 cache between runs).
4. A table: kernel, shape, time, TB/s, TFLOP/s, and the ratio to a torch baseline
   (SDPA, torch.matmul on dequantized weights, torch._scaled_mm).
With $OUT set, everything goes to $OUT/gpu_kernels.json (rewritten after each section).
Set GPU_KERNELS_DEADLINE (seconds, default 200) to skip sweeps that would run past it.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import sys
import time
import traceback

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

from rooflab.validate.kernels import attention as A
from rooflab.validate.kernels import qgemm as Q

T0 = time.time()
DEADLINE = float(os.environ.get("GPU_KERNELS_DEADLINE", "200"))
DEV = "cuda"
BF = torch.bfloat16
GEN = None                     # torch.Generator on DEV, made in main()
RESULT: dict = {"env": {}, "ceilings": {}, "checks": [], "sweeps": [], "table": [], "compiled": {}}


def left() -> float:
    return DEADLINE - (time.time() - T0)


def save():
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "gpu_kernels.json"), "w") as f:
            json.dump(RESULT, f, indent=1, default=str)


def log(*a):
    print(f"[{time.time() - T0:6.1f}s]", *a, flush=True)


def bench_ms(fn) -> float:
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def randn(*shape, dtype=None):
    return torch.randn(shape, device=DEV, generator=GEN, dtype=torch.float32).to(dtype or BF)


def poison(nbytes: int):
    """Leave NaNs in the caching allocator's next block, so unwritten outputs show up."""
    t = torch.full((nbytes // 4 + 1024,), float("nan"), device=DEV)
    del t


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    o, r = out.double(), ref.double()
    if not torch.isfinite(o).all():
        return float("nan")
    return ((o - r).norm() / r.norm()).item()


def check(name: str, shape: str, out: torch.Tensor, ref: torch.Tensor, bound: float) -> bool:
    e = rel_err(out, ref)
    ok = e == e and e < bound
    RESULT["checks"].append({"kernel": name, "shape": shape, "rel_err": e, "bound": bound, "ok": ok})
    log(f"check {name:12s} {shape:44s} rel_err={e:.3e} (< {bound:.0e}) {'OK' if ok else 'FAIL'}")
    return ok


def compiled_info(key: str, mod) -> dict:
    k = mod.LAST_COMPILED.get(key)
    if k is None:
        return {}
    info = {"n_regs": getattr(k, "n_regs", None), "n_spills": getattr(k, "n_spills", None)}
    try:
        info["shared"] = k.metadata.shared
    except Exception:
        pass
    try:
        ptx = k.asm.get("ptx", "")
        info["wgmma"] = "wgmma" in ptx
        info["mma_sync"] = "mma.sync" in ptx
        info["cp_async"] = "cp.async" in ptx
        info["tma"] = "cp.async.bulk.tensor" in ptx
    except Exception:
        pass
    return info


def section(fn):
    try:
        fn()
    except Exception:
        log(f"SECTION {fn.__name__} FAILED")
        traceback.print_exc()
        RESULT.setdefault("errors", []).append({"section": fn.__name__, "trace": traceback.format_exc()})
    save()


# ---------------------------------------------------------------------------------------------

def env():
    p = torch.cuda.get_device_properties(0)
    RESULT["env"] = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(0), "sm_count": p.multi_processor_count,
        "capability": list(torch.cuda.get_device_capability(0)),
        "l2_bytes": getattr(p, "L2_cache_size", None), "memory_bytes": p.total_memory,
        "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
        "python": sys.version.split()[0],
    }
    log("env", RESULT["env"])


def ceilings():
    n = 1 << 30                                        # 2 GiB of bf16 copied
    src = torch.empty(n, device=DEV, dtype=BF).normal_(generator=GEN)
    dst = torch.empty_like(src)
    ms = bench_ms(lambda: dst.copy_(src))
    bw = 2 * n * 2 / (ms * 1e-3)
    src = dst = None
    a, b = randn(8192, 8192), randn(8192, 8192)
    ms_mm = bench_ms(lambda: a @ b)
    tf = 2 * 8192 ** 3 / (ms_mm * 1e-3)
    RESULT["ceilings"] = {"copy_TBps": bw / 1e12, "bf16_mm_TFLOPs": tf / 1e12}
    log(f"ceilings: copy {bw / 1e12:.2f} TB/s, bf16 matmul 8192^3 {tf / 1e12:.0f} TFLOP/s")


def guarded(name: str, shape: str, fn):
    """Run one check; an exception is recorded as a failed check instead of ending the section."""
    try:
        fn()
    except Exception as e:
        RESULT["checks"].append({"kernel": name, "shape": shape, "rel_err": None, "ok": False,
                                 "error": f"{type(e).__name__}: {str(e)[:500]}"})
        log(f"check {name:12s} {shape:44s} ERROR {type(e).__name__}: {str(e)[:300]}")


def checks_attention():
    for (b, hq, hkv, sq, sk, d, causal) in [
        (2, 4, 2, 1000, 1000, 128, True), (2, 4, 2, 1000, 1000, 128, False),
        (1, 8, 2, 1000, 1000, 64, True), (1, 8, 8, 1000, 1000, 64, False),
        (1, 4, 1, 300, 1000, 128, True), (2, 2, 2, 1, 517, 128, True),
    ]:
        shape = f"B{b} Hq{hq} Hkv{hkv} Sq{sq} Sk{sk} D{d} causal={causal}"

        def one():
            q, k, v = randn(b, hq, sq, d), randn(b, hkv, sk, d), randn(b, hkv, sk, d)
            sc = 1 / math.sqrt(d)
            poison(q.numel() * 2)
            o = A.launch_flash(q, k, v, causal, sc)
            check("flash", shape, o, A.reference_attention(q, k, v, causal, sc), 1e-2)
        guarded("flash", shape, one)
    for (b, hq, hkv, sk, d) in [(3, 32, 8, 1000, 128), (2, 8, 8, 777, 64), (2, 28, 4, 5000, 128),
                                (1, 4, 1, 9, 128)]:
        shape = f"B{b} Hq{hq} Hkv{hkv} Sk{sk} D{d}"

        def one():
            q, k, v = randn(b, hq, 1, d), randn(b, hkv, sk, d), randn(b, hkv, sk, d)
            sc = 1 / math.sqrt(d)
            poison(q.numel() * 2)
            o = A.launch_decode(q, k, v, sc)
            check("decode", shape, o, A.reference_attention(q, k, v, False, sc), 1e-2)
        guarded("decode", shape, one)


def make_int4(k, n, group):
    w = torch.randint(-8, 8, (k, n), device=DEV, generator=GEN, dtype=torch.int8)
    s = (torch.rand(((k + group - 1) // group, n), device=DEV, generator=GEN) * 0.02 + 0.005).to(BF)
    return w, Q.pack_int4(w), s


def checks_qgemm():
    for (m, k, n, g) in [(37, 4096, 1000, 128), (16, 2048, 512, 128), (200, 1000, 384, 64),
                         (5, 1001, 256, 32), (300, 4096, 4096, 128)]:
        w, p, s = make_int4(k, n, g)
        assert torch.equal(Q.unpack_int4(p, k), w)
        x = randn(m, k)
        ref = Q.reference_w4a16(x, p, s, g)
        shape = f"M{m} K{k} N{n} g{g}"
        for cfg in (None, (16, 64, 64, 2, 4, 3, 0), (16, 64, 64, 2, 4, 3, 1), (16, 64, 64, 2, 4, 3, 2),
                    (128, 128, 64, 1, 8, 3, 0)):
            def one():
                poison(m * n * 2)
                check("w4a16", f"{shape} cfg={cfg}", Q.launch_w4a16(x, p, s, g, config=cfg), ref, 1e-2)
            guarded("w4a16", f"{shape} cfg={cfg}", one)

        def deq():
            poison(k * n * 2)
            wd = Q.launch_dequant_int4(p, s, g, k=k)
            ref = Q.reference_dequant_int4(p, s, g, k)
            check("dequant_int4", f"K{k} N{n} g{g} (exact={torch.equal(wd, ref)})", wd, ref, 1e-3)
        guarded("dequant_int4", f"K{k} N{n} g{g}", deq)
    for (m, k, n) in [(37, 1024, 1000), (256, 512, 384), (100, 1000, 200)]:
        a, b = randn(m, k, dtype=torch.float8_e4m3fn), randn(n, k, dtype=torch.float8_e4m3fn)
        sa, sb = 0.37, 1.9
        ref = Q.reference_fp8(a, b, sa, sb)
        for cfg in (None, Q.FP8_CONFIG[:-1] + (False,)):
            def one():
                poison(m * n * 2)
                check("fp8", f"M{m} K{k} N{n} cfg={cfg}",
                      Q.launch_fp8(a, b, torch.tensor(sa, device=DEV), sb, config=cfg), ref, 2e-2)
            guarded("fp8", f"M{m} K{k} N{n} cfg={cfg}", one)


# ---------------------------------------------------------------------------------------------

def sweep(name: str, shape: str, make_fn, configs, default):
    """Time each config; return (best config, best ms). Configs that fail are reported."""
    best = (None, float("inf"))
    for cfg in configs:
        if left() < 0:
            log(f"sweep {name}: deadline reached, skipping the rest")
            break
        try:
            fn = make_fn(cfg)
            fn()
            torch.cuda.synchronize()
            ms = bench_ms(fn)
        except Exception as e:
            log(f"sweep {name} {cfg}: FAILED {type(e).__name__}: {str(e)[:200]}")
            RESULT["sweeps"].append({"kernel": name, "shape": shape, "config": cfg, "error": str(e)[:500]})
            continue
        RESULT["sweeps"].append({"kernel": name, "shape": shape, "config": cfg, "us": ms * 1e3,
                                 "default": cfg == default})
        log(f"sweep {name:10s} {str(cfg):42s} {ms * 1e3:9.1f} us{'  (default)' if cfg == default else ''}")
        if ms < best[1]:
            best = (cfg, ms)
    return best


def row(kernel, shape, ms, nbytes, flops, base_name=None, base_ms=None, config=None, target=None):
    r = {"kernel": kernel, "shape": shape, "us": ms * 1e3, "TBps": nbytes / (ms * 1e-3) / 1e12,
         "TFLOPs": flops / (ms * 1e-3) / 1e12, "baseline": base_name,
         "baseline_us": None if base_ms is None else base_ms * 1e3,
         "ratio_vs_baseline": None if base_ms is None else base_ms / ms, "config": config,
         "target": target}
    RESULT["table"].append(r)
    return r


def bench_flash(only_d128: bool = False):
    b, h, s = 8, 32, 4096
    cfgs = [(128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 8, 4)]
    cases = [(False, 128), (True, 128), (False, 64), (True, 64)]
    if only_d128:
        cases = cases[:2]
    for causal, d in cases:
        q, k, v = randn(b, h, s, d), randn(b, h, s, d), randn(b, h, s, d)
        sc = 1 / math.sqrt(d)
        nbytes = 4 * q.numel() * 2
        shape = f"B{b} H{h} S{s} D{d} causal={causal}"
        default = A.FLASH_CONFIGS[(d, causal)]
        cfg, ms = sweep("flash", shape, lambda c: (lambda: A.launch_flash(q, k, v, causal, sc, config=c)),
                        [default] + [c for c in cfgs if c != default], default)
        o = A.launch_flash(q, k, v, causal, sc, config=cfg)
        RESULT["compiled"][f"flash {shape} {cfg}"] = compiled_info("flash", A)
        check("flash", shape + " [b0,h0:2]", o[:1, :2],
              A.reference_attention(q[:1, :2], k[:1, :2], v[:1, :2], causal, sc), 1e-2)
        ms_sdpa = bench_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sc))
        flops = A.flash_flops(b, h, s, s, d, causal)
        r = row("flash", shape, ms, nbytes, flops, "sdpa", ms_sdpa, cfg, ">= 0.60x SDPA")
        log(f"flash {shape}: {ms * 1e3:.0f} us {r['TFLOPs']:.0f} TFLOP/s; SDPA {ms_sdpa * 1e3:.0f} us "
            f"-> {r['ratio_vs_baseline']:.2f}x; {RESULT['compiled'][f'flash {shape} {cfg}']}")
        save()


def bench_decode():
    b, hq, hkv, sk, d = 16, 32, 8, 8192, 128
    q, k, v = randn(b, hq, 1, d), randn(b, hkv, sk, d), randn(b, hkv, sk, d)
    sc = 1 / math.sqrt(d)
    shape = f"B{b} Hq{hq} Hkv{hkv} Sk{sk} D{d}"
    nbytes = (k.numel() + v.numel() + 2 * q.numel()) * 2
    default = (A.DECODE_CONFIG, None)
    cfgs = [default, ((128, 4, 2), None), ((64, 4, 3), 16), ((32, 4, 4), 32)]
    cfg, ms = sweep("decode", shape,
                    lambda c: (lambda: A.launch_decode(q, k, v, sc, num_splits=c[1], config=c[0])),
                    cfgs, default)
    o = A.launch_decode(q, k, v, sc, num_splits=cfg[1], config=cfg[0])
    RESULT["compiled"][f"decode {cfg}"] = compiled_info("decode", A)
    check("decode", shape + " [b0:2]", o[:2], A.reference_attention(q[:2], k[:2], v[:2], False, sc), 1e-2)
    try:
        ms_sdpa = bench_ms(lambda: F.scaled_dot_product_attention(q, k, v, scale=sc, enable_gqa=True))
    except Exception as e:
        log("sdpa decode failed", e)
        ms_sdpa = None
    r = row("decode", shape, ms, nbytes, 4.0 * b * hq * sk * d, "sdpa(enable_gqa)", ms_sdpa, cfg,
            ">= 70% of 4.3 TB/s")
    log(f"decode {shape}: {ms * 1e3:.1f} us, {r['TBps']:.2f} TB/s; SDPA "
        f"{'-' if ms_sdpa is None else f'{ms_sdpa * 1e3:.1f} us'}; {RESULT['compiled'][f'decode {cfg}']}")


def bench_w4a16():
    k = n = 8192
    g = 128
    w, p, s = make_int4(k, n, g)
    wd = Q.launch_dequant_int4(p, s, g)
    wbytes = p.numel() + s.numel() * 2
    # standalone dequantize
    shape = f"K{k} N{n} g{g}"
    dq_cfgs = [Q.DEQUANT_CONFIG, (32, 256, 4), (8, 1024, 8), (4, 512, 4)]
    cfg, ms = sweep("dequant", shape, lambda c: (lambda: Q.launch_dequant_int4(p, s, g, config=c)),
                    dq_cfgs, Q.DEQUANT_CONFIG)
    check("dequant_int4", shape, Q.launch_dequant_int4(p, s, g, config=cfg), Q.reference_dequant_int4(p, s, g), 1e-3)
    ms_ref = bench_ms(lambda: Q.reference_dequant_int4(p, s, g))
    r = row("dequant_int4", shape, ms, wbytes + k * n * 2, k * n * 2, "torch eager dequant", ms_ref, cfg)
    log(f"dequant {shape}: {ms * 1e3:.1f} us {r['TBps']:.2f} TB/s (torch eager {ms_ref * 1e3:.0f} us)")
    save()

    small = [Q.W4A16_CONFIG_SMALL_M, (16, 128, 128, 2, 4, 4, 0), (16, 128, 128, 4, 4, 4, 2),
             (16, 64, 128, 4, 4, 3, 0), (16, 128, 64, 4, 8, 4, 0)]
    large = [Q.W4A16_CONFIG_LARGE_M, (128, 256, 64, 1, 8, 3, 0), (256, 128, 64, 1, 8, 4, 0)]
    for m, cfgs in ((16, small), (4096, large)):
        x = randn(m, k)
        shape = f"M{m} K{k} N{n} g{g}"
        default = cfgs[0]
        cfg, ms = sweep("w4a16", shape, lambda c: (lambda: Q.launch_w4a16(x, p, s, g, config=c)),
                        cfgs, default)
        y = Q.launch_w4a16(x, p, s, g, config=cfg)
        RESULT["compiled"][f"w4a16 M{m} {cfg}"] = compiled_info("w4a16", Q)
        check("w4a16", shape, y, Q.reference_w4a16(x, p, s, g), 1e-2)
        ms_mm = bench_ms(lambda: x @ wd)
        ms_unfused = bench_ms(lambda: x @ Q.launch_dequant_int4(p, s, g))
        nbytes = x.numel() * 2 + wbytes + m * n * 2
        r = row("w4a16", shape, ms, nbytes, 2.0 * m * n * k, "torch.matmul(x, w_bf16)", ms_mm, cfg,
                ">= 60% HBM at M=16" if m == 16 else None)
        r["unfused_us"] = ms_unfused * 1e3
        r["ratio_vs_unfused"] = ms_unfused / ms
        log(f"w4a16 {shape}: {ms * 1e3:.1f} us {r['TBps']:.2f} TB/s {r['TFLOPs']:.0f} TFLOP/s; "
            f"bf16 matmul {ms_mm * 1e3:.1f} us; dequant+matmul {ms_unfused * 1e3:.1f} us; "
            f"{RESULT['compiled'][f'w4a16 M{m} {cfg}']}")
        save()


def bench_fp8():
    m = n = k = 8192
    a, b = randn(m, k, dtype=torch.float8_e4m3fn), randn(n, k, dtype=torch.float8_e4m3fn)
    sa = torch.tensor(0.37, device=DEV)
    sb = torch.tensor(1.9, device=DEV)
    shape = f"M{m} N{n} K{k}"
    cfgs = [Q.FP8_CONFIG, (128, 128, 128, 8, 4, 4, True), (128, 256, 128, 8, 8, 3, False)]
    cfg, ms = sweep("fp8", shape, lambda c: (lambda: Q.launch_fp8(a, b, sa, sb, config=c)), cfgs,
                    Q.FP8_CONFIG)
    c = Q.launch_fp8(a, b, sa, sb, config=cfg)
    RESULT["compiled"][f"fp8 {cfg}"] = compiled_info("fp8", Q)
    check("fp8", shape, c, Q.reference_fp8(a, b, sa, sb), 2e-2)
    bt = b.t()
    ms_ref = bench_ms(lambda: torch._scaled_mm(a, bt, scale_a=sa, scale_b=sb, out_dtype=BF))
    ms_fast = bench_ms(lambda: torch._scaled_mm(a, bt, scale_a=sa, scale_b=sb, out_dtype=BF,
                                                use_fast_accum=True))
    nbytes = 2 * m * k + m * n * 2
    r = row("fp8", shape, ms, nbytes, 2.0 * m * n * k, "torch._scaled_mm", ms_ref, cfg)
    r["scaled_mm_fast_accum_us"] = ms_fast * 1e3
    r["ratio_vs_fast_accum"] = ms_fast / ms
    log(f"fp8 {shape}: {ms * 1e3:.0f} us {r['TFLOPs']:.0f} TFLOP/s; _scaled_mm {ms_ref * 1e3:.0f} us "
        f"(fast accum {ms_fast * 1e3:.0f} us); {RESULT['compiled'][f'fp8 {cfg}']}")


def table():
    print()
    print(f"{'kernel':13s} {'shape':36s} {'us':>9s} {'TB/s':>6s} {'TFLOP/s':>8s} {'baseline':24s} "
          f"{'base us':>9s} {'ratio':>6s}  config")
    for r in RESULT["table"]:
        base_us = "-" if r["baseline_us"] is None else f"{r['baseline_us']:.1f}"
        ratio = "-" if r["ratio_vs_baseline"] is None else f"{r['ratio_vs_baseline']:.2f}"
        print(f"{r['kernel']:13s} {r['shape']:36s} {r['us']:9.1f} {r['TBps']:6.2f} {r['TFLOPs']:8.1f} "
              f"{str(r['baseline']):24s} {base_us:>9s} {ratio:>6s}  {r['config']}")
    bad = [c for c in RESULT["checks"] if not c["ok"]]
    print(f"checks: {len(RESULT['checks']) - len(bad)} passed, {len(bad)} failed")
    for c in bad:
        print("  FAILED", c)
    if RESULT.get("errors"):
        print("sections failed:", [e["section"] for e in RESULT["errors"]])


def main():
    if not torch.cuda.is_available():
        print("no CUDA GPU: nothing to run")
        return 0
    global GEN
    GEN = torch.Generator(device=DEV)
    GEN.manual_seed(20261202)
    only = set(sys.argv[1:])
    for fn in (env, ceilings, checks_attention, checks_qgemm, bench_flash, bench_decode,
               bench_w4a16, bench_fp8):
        if only and fn.__name__ not in only and fn.__name__ not in ("env",):
            continue
        section(fn)
    RESULT["elapsed_s"] = time.time() - T0
    save()
    table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
