"""Why a torch.compile'd call's time moves between windows and leases: the host or the GPU?

The torch suite times a compiled call as the median of 7 windows of N back-to-back calls. On
H100 leases the same compiled call took 45 µs in one lease and 94 in another
(bias_add_4096x4096: x[4096, 4096] + b[4096], whose kernel takes 46 µs), and windows within a
case split 45 / 70. This times, for a few suite cases, windows of N calls right after compiling
(as the suite does) and recording per window:
    gpu_us   CUDA events around the window, per call (what the suite records)
    host_us  perf_counter around issuing the window's calls, per call (before the wait)
    sm_mhz   the SM clock nvidia-smi reports right after the window
    cpu      the core the timing thread last ran on (/proc/thread-self/stat)
then the same after 50 ms of large matmuls (the GPU's clocks up), and the eager call likewise.
With `--pin`, a second pass does it all again with the process pinned to one core.
    python lab/compiled_noise/measure.py OUT.json [--pin]
"""
import gc
import json
import os
import subprocess
import sys
import time

import torch

from rooflab.validate import torch_suite

CASES = ("bias_add_4096x4096_bf16", "layer_norm_2048x4096_bf16", "rms_norm_2048x4096_bf16",
         "softmax_64x1024_bf16", "decoder_layer_b1_s512_d2048_bf16")
WINDOWS = 12


def sm_mhz() -> int:
    out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    return int(out.split()[0])


def cpu() -> int:
    """The core this thread last ran on (field 39 of its stat line)."""
    with open("/proc/thread-self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def windows(fn, n: int, count: int = WINDOWS) -> list[dict]:
    out = []
    for _ in range(count):
        gc.collect()
        gc.disable()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        host = time.perf_counter() - t0
        end.record()
        end.synchronize()
        gc.enable()
        out.append({"gpu_us": round(start.elapsed_time(end) * 1e3 / n, 2),
                    "host_us": round(host * 1e6 / n, 2), "cpu": cpu(), "sm_mhz": sm_mhz()})
    return out


def busy(ms: float = 50.0):
    """Large bf16 matmuls for about `ms` milliseconds: the GPU at full load."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while (time.perf_counter() - t0) * 1e3 < ms:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()


def main(out_path: str, pin: bool = False):
    result = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
              "idle_mhz": sm_mhz(), "cpus": sorted(os.sched_getaffinity(0)),
              "passes": {"free": run_cases()}}
    if pin:
        core = sorted(os.sched_getaffinity(0))[2]
        os.sched_setaffinity(0, {core})
        result["passes"][f"pinned to core {core}"] = run_cases()
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


def run_cases() -> dict:
    cases = {c.id: c for c in torch_suite.select()}
    result = {}
    for cid in CASES:
        case = cases[cid]
        mod = case.build("cuda")
        for p in mod.parameters():
            p.requires_grad_(False)
        inputs = case.make_inputs("cuda")
        eager = lambda: mod(*inputs)
        for _ in range(10):
            eager()
        torch.cuda.synchronize()
        torch._dynamo.reset()
        cm = torch.compile(mod)
        t0 = time.perf_counter()
        for _ in range(10):
            cm(*inputs)
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        call = lambda: cm(*inputs)
        n = 400
        entry = {"compile_s": round(compile_s, 2), "calls_per_window": n,
                 "compiled_after_compile": windows(call, n)}
        busy()
        entry["compiled_after_busy"] = windows(call, n)
        busy()
        entry["eager_after_busy"] = windows(eager, n)
        time.sleep(0.5)
        entry["compiled_after_idle_0.5s"] = windows(call, n)
        result[cid] = entry
        med = lambda ws, k: sorted(w[k] for w in ws)[len(ws) // 2]
        print(cid, {k: (med(v, "gpu_us"), med(v, "host_us"), med(v, "sm_mhz"))
                    for k, v in entry.items() if isinstance(v, list)}, flush=True)
        del mod, inputs, cm
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    return result


if __name__ == "__main__":
    main(sys.argv[1], "--pin" in sys.argv[2:])
