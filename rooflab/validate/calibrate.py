"""Measure a GPU's ceilings and launch costs, and write them into a hardware spec.

Measured (all on random data, medians of many runs, CUDA events):
  copy_tb_per_s       device-to-device copy of 2 GiB, read + write bytes counted
  read_tb_per_s       a Triton read-only reduction over 2 GiB
  l2_tb_per_s         repeated reads of a 16 MiB buffer that stays in L2 (no flush)
  gemm_tflops[dtype]  torch.matmul 8192³ for bf16, fp16, tf32; torch._scaled_mm for fp8
  triton_gemm_bf16_12288_tflops  the suite's generated Triton GEMM at 12288³ (not a suite
                      shape); the bf16 tensor efficiency takes the better of it and cuBLAS
  eager_dispatch_us   host time per tiny eager PyTorch op (x.add_(1) on 1 element)
  graph_launch_us     per kernel in a CUDA graph beyond its transfer time (200 4 MiB copies)
  min_kernel_us       duration of a small (256 KiB) Triton copy after an L2 flush, replayed as a
                      one-kernel CUDA graph as the suite times kernels (timing.py)
  triton_launch_us    host time per launch of a tiny Triton kernel from Python
  copy_curve          Triton copy bandwidth from 8 MB to 2 GB moved: the size-aware HBM curve
  write_tb_per_s      write-only stream of 1 GiB (Triton store loop or fill_, the better); in
                      the raw figures only: on the H200 writes alone run faster than a copy, so
                      a write-heavy kernel is not bound by them (lab/gpu_tune.md)
  dequant_gweights_per_s  int4 weights the W4A16 kernel dequantizes per second (M=16, K=N=16384)
  attention           the FlashAttention kernel at B=4, H=32, S=8192, D=128, non-causal: the
                      tensor efficiency its matmuls reach beside its exponentials
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

import torch
import triton
import triton.language as tl

from rooflab.hardware import Hardware, to_core
from rooflab.hardware_spec import HardwareFile
from rooflab.validate.calspec import host_bound_sizes, spec_from_raw, spec_text, torch_run_path
from rooflab.validate.timing import bench_kernel, capture


@triton.jit
def _read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # x_ptr: input; out_ptr: one partial sum per program; n: elements
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # x_ptr: source; y_ptr: destination; n: elements
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def _fill_kernel(y_ptr, n, BLOCK: tl.constexpr):
    # y_ptr: destination, n elements set to 1.0 (a write-only stream)
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.full([BLOCK], 1.0, tl.float32), mask=offs < n)


def _graph_ms(fn, calls: int, replays: int = 20) -> float:
    """Time `calls` back-to-back calls of fn captured in one CUDA graph; ms per call."""
    return _events_ms(capture(fn, calls).replay, replays) / calls


@triton.jit
def _tiny_kernel(x_ptr):
    # x_ptr: one float, incremented
    tl.store(x_ptr, tl.load(x_ptr) + 1.0)


def _median_ms(fn, rep: int = 200, warmup: int = 25) -> float:
    return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def _events_ms(fn, iters: int) -> float:
    """Time `iters` calls of fn with events and no L2 flush (for cache-resident loops)."""
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters


def _triton_gemm_tflops(hw: Hardware, n: int) -> float:
    """bf16 TFLOP/s of the validation suite's generated Triton GEMM (codegen) on an n³ matmul."""
    from rooflab import api, workload
    from rooflab.validate.kernels import route
    bf16 = {"shape": [n, n], "dtype": "bf16"}
    g = workload.load_dict({"name": "calibrate_gemm", "tensors": {"a": bf16, "b": bf16},
                            "ops": [{"kind": "matmul", "name": "mm", "inputs": ["a", "b"],
                                     "outputs": ["c"]}]})
    sched = api.predict_graph(g, hw, "unfused", "graph", "rooflab").schedule
    built = route.build(sched.graph, sched.kernels[0])
    env = {t: torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for t in built.inputs}
    return 2 * n ** 3 / bench_kernel(lambda: built.run(env))[0] / 1e12


def measure(log=print, hw: Hardware | None = None) -> dict:
    """Every ceiling above, as a dict of plain numbers (`hw`, the base spec, sizes the Triton
    GEMM's tiles; without it that measurement is skipped)."""
    dev = torch.device("cuda")
    out: dict = {}
    n = 1 << 30                                          # 2 GiB of bf16
    x = torch.randn(n, device=dev, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    t = _median_ms(lambda: y.copy_(x)) * 1e-3
    out["copy_tb_per_s"] = 2 * x.numel() * 2 / t / 1e12
    log(f"copy: {out['copy_tb_per_s']:.3f} TB/s")
    xf = x.view(torch.float32)
    block = 4096
    partial = torch.empty(triton.cdiv(xf.numel(), block), device=dev)
    t = _median_ms(lambda: _read_kernel[(partial.numel(),)](xf, partial, xf.numel(), BLOCK=block,
                                                            num_warps=8)) * 1e-3
    out["read_tb_per_s"] = xf.numel() * 4 / t / 1e12
    log(f"read: {out['read_tb_per_s']:.3f} TB/s")
    small = torch.randn(4 << 20, device=dev)             # 16 MiB: stays in L2
    part = torch.empty(triton.cdiv(small.numel(), block), device=dev)
    ms = _graph_ms(lambda: _read_kernel[(part.numel(),)](small, part, small.numel(), BLOCK=block,
                                                        num_warps=8), 100)
    out["l2_tb_per_s"] = small.numel() * 4 / (ms * 1e-3) / 1e12
    log(f"L2 read (16 MiB resident, graph replay): {out['l2_tb_per_s']:.3f} TB/s")
    gemm = {}
    m = 8192
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        a = torch.randn(m, m, device=dev, dtype=dtype)
        b = torch.randn(m, m, device=dev, dtype=dtype)
        gemm[name] = 2 * m ** 3 / (min(_median_ms(lambda: a @ b, 400, 300) for _ in range(2))
                                   * 1e-3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = True
    a = torch.randn(m, m, device=dev)
    b = torch.randn(m, m, device=dev)
    gemm["tf32"] = 2 * m ** 3 / (_median_ms(lambda: a @ b, 400, 200) * 1e-3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = False
    a8 = torch.randn(m, m, device=dev).to(torch.float8_e4m3fn)
    b8 = torch.randn(m, m, device=dev).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0, device=dev)
    gemm["fp8"] = 2 * m ** 3 / (_median_ms(lambda: torch._scaled_mm(
        a8, b8, one, one, out_dtype=torch.bfloat16), 400, 200) * 1e-3) / 1e12
    out["gemm_tflops"] = gemm
    log("GEMM 8192³ TFLOP/s: " + ", ".join(f"{k} {v:.0f}" for k, v in gemm.items()))
    if hw is not None:
        # the suite's own Triton GEMM at a shape the suite does not time: where it beats
        # cuBLAS, it is the better evidence of what a good bf16 kernel reaches
        out["triton_gemm_bf16_12288_tflops"] = _triton_gemm_tflops(hw, 12288)
        log(f"Triton GEMM 12288³ bf16: {out['triton_gemm_bf16_12288_tflops']:.0f} TFLOP/s")
    # int4 weights dequantized per second inside the W4A16 kernel: at M=16 it is bound by that
    # ALU work, not by its 4-bit weight bytes. K=N=16384, a shape the suite does not time.
    from rooflab.validate.kernels import qgemm
    kq = nq = 16384
    xq = torch.randn(16, kq, device=dev, dtype=torch.bfloat16)
    wq = qgemm.pack_int4(torch.randint(-8, 8, (kq, nq), device=dev, dtype=torch.int8))
    sq = torch.rand(kq // 128, nq, device=dev, dtype=torch.bfloat16) + 0.5
    t = bench_kernel(lambda: qgemm.launch_w4a16(xq, wq, sq, 128))[0]
    out["dequant_gweights_per_s"] = kq * nq / t / 1e9
    log(f"W4A16 dequant (M=16, K=N=16384): {out['dequant_gweights_per_s']:.0f} G weights/s")
    # the FlashAttention kernel at a large non-causal shape the suite does not time (no causal
    # imbalance, no partial wave): its time, matmul FLOPs and exponentials
    from rooflab.validate.kernels import attention
    ba, ha, sa, da = 4, 32, 8192, 128
    qa, ka, va = (torch.randn(ba, ha, sa, da, device=dev, dtype=torch.bfloat16) for _ in range(3))
    t = bench_kernel(lambda: attention.launch_flash(qa, ka, va, False, da ** -0.5))[0]
    out["attention"] = {"shape_bhsd": [ba, ha, sa, da], "causal": False, "s": t,
                        "flops": attention.flash_flops(ba, ha, sa, sa, da, False),
                        "exps": ba * ha * sa * sa}
    log(f"FlashAttention B={ba} H={ha} S={sa} D={da}: {out['attention']['flops'] / t / 1e12:.0f} TFLOP/s")
    tiny = torch.zeros(1, device=dev)
    for _ in range(100):
        tiny.add_(1.0)
    torch.cuda.synchronize()
    reps = 3000
    t0 = time.perf_counter()
    for _ in range(reps):
        tiny.add_(1.0)
    torch.cuda.synchronize()
    out["eager_dispatch_us"] = (time.perf_counter() - t0) / reps * 1e6
    # per-kernel cost inside a CUDA graph, for real kernels: 200 copies of 4 MiB (each reads
    # and writes new HBM lines: 16 MiB apart), minus their transfer time at copy bandwidth
    src = torch.randn(200 * (1 << 20), device=dev)
    dst = torch.empty_like(src)
    chunk = 1 << 20
    state = {"i": 0}

    def one_copy():
        i = state["i"] % 200
        state["i"] += 1
        _copy_kernel[(chunk // 1024,)](src[i * chunk:], dst[i * chunk:], chunk, BLOCK=1024)
    per = _graph_ms(one_copy, 200, 10) * 1e-3
    busy = 2 * chunk * 4 / (out["copy_tb_per_s"] * 1e12)
    out["graph_launch_us"] = max(0.0, per - busy) * 1e6
    out["graph_tiny_us"] = _graph_ms(lambda: tiny.add_(1.0), 2000) * 1e3
    _tiny_kernel[(1,)](tiny)
    out["empty_kernel_us"] = _median_ms(lambda: _tiny_kernel[(1,)](tiny)) * 1e3
    # the fixed cost of a small real kernel: a 256 KiB copy, which reads HBM after the flush
    s_src = torch.randn(1 << 16, device=dev)
    s_dst = torch.empty_like(s_src)
    small = lambda: _copy_kernel[(64,)](s_src, s_dst, s_src.numel(), BLOCK=1024)  # noqa: E731
    out["min_kernel_eager_us"] = _median_ms(small) * 1e3
    # timed as the suite times kernels: a one-kernel CUDA graph after the flush (timing.py)
    out["min_kernel_us"] = bench_kernel(small)[0] * 1e6
    # size-aware HBM bandwidth: a Triton copy from 4 MiB to 1 GiB per tensor, L2 flushed;
    # bandwidth counts read + write bytes over the time beyond the fixed kernel cost
    src = torch.randn(1 << 28, device=dev)
    dst = torch.empty_like(src)
    curve = []
    for k in range(2, 11):
        n_el = (1 << 18) << k
        t = bench_kernel(lambda: _copy_kernel[(triton.cdiv(n_el, 2048),)](
            src, dst, n_el, BLOCK=2048, num_warps=8))[0]
        moved = 2 * n_el * 4
        curve.append((moved / 1e6, moved / (t - out["min_kernel_us"] * 1e-6) / 1e12))
    out["copy_curve_mb_tb_per_s"] = curve
    log("copy curve (MB moved: TB/s): " + ", ".join(f"{mb:.0f}: {bw:.2f}" for mb, bw in curve))
    bound = host_bound_sizes(curve)
    if bound:
        log(f"WARNING: the copy curve is host-bound at {', '.join(f'{mb:.0f}' for mb in bound)} "
            "MB (their time did not grow with their bytes); calibrate again on an idle host")
    # write-only HBM bandwidth over 1 GiB (the better of a Triton store loop and torch's fill_),
    # over the time beyond the fixed kernel cost as for the curve
    n_el = 1 << 28
    fills = {"triton": lambda: _fill_kernel[(triton.cdiv(n_el, 2048),)](dst, n_el, BLOCK=2048,
                                                                         num_warps=8),
             "torch fill_": lambda: dst.fill_(1.0)}
    write = {k: n_el * 4 / (bench_kernel(f)[0] - out["min_kernel_us"] * 1e-6) / 1e12
             for k, f in fills.items()}
    out["write_tb_per_s"] = max(write.values())
    log("write-only: " + ", ".join(f"{k} {v:.2f} TB/s" for k, v in write.items()))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        _tiny_kernel[(1,)](tiny)
    torch.cuda.synchronize()
    out["triton_launch_us"] = (time.perf_counter() - t0) / reps * 1e6
    log(f"eager dispatch {out['eager_dispatch_us']:.2f} µs/op, graph {out['graph_launch_us']:.2f} "
        f"µs/kernel (tiny ops: {out['graph_tiny_us']:.2f}), min kernel {out['min_kernel_us']:.2f} µs "
        f"(launched from Python: {out['min_kernel_eager_us']:.2f}, empty: "
        f"{out['empty_kernel_us']:.2f}), Triton launch "
        f"{out['triton_launch_us']:.2f} µs")
    return out


def measure_torch(log=print, budget_s: float = 300, command: str = "") -> dict:
    """The torch suite's calibration cases (rooflab/validate/torch_suite.py) timed as eager
    PyTorch, CUDA graphs and torch.compile run them: a torch-suite run (torch_run.run)."""
    from rooflab.validate import torch_run, torch_suite
    cases = torch_suite.select(split="calibration")
    log(f"torch suite: {len(cases)} calibration cases (ATen kernel families, torch.compile)")
    return torch_run.run(cases, "cuda", budget_s=budget_s, command=command,
                         on_case=lambda entry, _: log(torch_run.summary_line(entry)))


def calibrate(base: HardwareFile, spec_out: Path, raw_out: Path, provenance: dict,
              log=print, torch_suite: bool = True) -> dict:
    """Measure, then write the raw figures (JSON) and the calibrated spec (YAML). With
    `torch_suite`, also time the torch suite's calibration cases (written beside the raw
    figures as <raw>-torch.json) and put eager PyTorch's kernel-family curves, torch.compile's
    host figures and the graph-replay gap into the spec, citing CAL-TORCH."""
    m = measure(log, to_core(base))
    raw_out.parent.mkdir(parents=True, exist_ok=True)
    raw_out.write_text(json.dumps({"provenance": provenance, "measured": m}, indent=1) + "\n")
    if torch_suite:
        run = measure_torch(log, command=provenance.get("command", ""))
        torch_run_path(raw_out).write_text(json.dumps(run, indent=1) + "\n")
    spec = spec_from_raw(base, raw_out)
    if torch_suite:
        log(f"torch suite: {len(spec['kernel_families'])} kernel-family curves; "
            + ", ".join(f"{k} {v['value']}" for k, v in spec["launch"].items()
                        if v.get("source") == "CAL-TORCH"))
    spec_out.parent.mkdir(parents=True, exist_ok=True)
    spec_out.write_text(spec_text(base, spec, provenance))
    return m


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
