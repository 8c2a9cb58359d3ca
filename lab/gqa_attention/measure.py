"""Decode attention of Llama-3-8B's shape (32 query heads, 8 KV heads, d=128, bf16) two ways:
transformers' repeat_kv (expand, copy to every query head, then SDPA) and SDPA reading the
shared heads itself (enable_gqa=True). Kernel times from the profiler, per call.

    python lab/gqa_attention/measure.py OUT.json
"""
import json
import statistics
import sys
from datetime import datetime, timezone

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

H, HKV, D = 32, 8, 128
CASES = [(1, 2304), (8, 2304), (32, 2304), (64, 2304), (64, 8192), (16, 32768)]
REPS = 20


def repeat_kv(q, k, v):
    b, hkv, s, d = k.shape
    k = k[:, :, None].expand(b, hkv, H // hkv, s, d).reshape(b, H, s, d)
    v = v[:, :, None].expand(b, hkv, H // hkv, s, d).reshape(b, H, s, d)
    return F.scaled_dot_product_attention(q, k, v)


def gqa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def kernels_per_call(fn, args):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(REPS):
            fn(*args)
        torch.cuda.synchronize()
    by_name: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            by_name.setdefault(e.name, []).append(e.device_time)
    per_call = {n: sum(ts) / REPS for n, ts in by_name.items()}
    return sum(per_call.values()), {n[:120]: round(us, 3) for n, us in per_call.items()}


def event_us(fn, args, n=50):
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(n):
            fn(*args)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / n)
    return statistics.median(times)


def main(out):
    torch.manual_seed(0)
    rows = []
    for b, s in CASES:
        q = torch.randn(b, H, 1, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, HKV, s, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        ref = repeat_kv(q, k, v)
        err = (gqa(q, k, v) - ref).abs().max().item()
        row = {"batch": b, "context": s, "max_abs_diff": err}
        for name, fn in (("repeat_kv", repeat_kv), ("gqa", gqa)):
            total, kern = kernels_per_call(fn, (q, k, v))
            row[name] = {"kernel_us": round(total, 3), "event_us": round(event_us(fn, (q, k, v)), 3),
                         "kernels": kern}
        print(b, s, row["repeat_kv"]["kernel_us"], row["gqa"]["kernel_us"], flush=True)
        rows.append(row)
        del q, k, v, ref
        torch.cuda.empty_cache()
    prov = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "heads": H, "kv_heads": HKV, "head_dim": D, "dtype": "bf16", "reps": REPS}
    json.dump({"provenance": prov, "cases": rows}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
