"""Time the torch suite's cases as eager PyTorch runs them (and, for some, torch.compile).

`run(cases, device="cuda", budget_s=330, ...)` returns a dict (schema "rooflab.torch-run/1"):
provenance, host constants measured at the start, and one entry per case. All times are
microseconds per call of the case's forward:

    eager_us            N back-to-back calls bracketed by CUDA events, after warm-up
    eager_sync_us       each call followed by synchronize, timed on the host (host included)
    graph_us            one call captured as a CUDA graph, replayed N times, per replay
    kernels             [{name, us}] per kernel of one call, in launch order (torch.profiler,
                        averaged over the profiled calls)
    compiled_us         torch.compile (default mode) after 10 warm-up calls: the median of 7
                        windows of N calls bracketed by events (compiled_windows_us: each
                        window's µs per call; compiled_spread: max/min - 1)
    compiled_graph_us   torch.compile(mode="reduce-overhead"), the same way
    compiled_kernels    the kernel names of one compiled call, in launch order
    compiled_kernel_us  and their times (torch.profiler, averaged over the profiled calls)

L2 is not flushed (`l2_flush: false`): small cases are timed back-to-back as a user's program
runs them. On the CPU (device="cpu") only eager_us is measured, by time.perf_counter, so tests
exercise the code path. A case's error is recorded in its entry (`error`: first line); cases
not reached within `budget_s` are marked `skipped: "budget"`.
"""

from __future__ import annotations

import datetime
import gc
import math
import platform
import statistics
import subprocess
import sys
import time
from typing import Callable

from rooflab.validate.gpu import git_sha

SCHEMA = "rooflab.torch-run/1"
_TARGET_S = 0.020          # time each measurement for at least 20 ms (and >= 3 calls)
_MAX_CALLS = 2000          # a 5 µs op: 2000 calls are 10 ms of host dispatch
_SYNC_CALLS = 50           # synchronizing calls: each costs a host round trip
_PROFILE_CALLS = 3
_COMPILE_RESERVE_S = 0.4   # budget kept per case still to run when deciding to compile
# A compiled call's first calls still settle (reduce-overhead records its CUDA graph on the
# second or third, the caching allocator grows): warm past them, then take the median of
# several windows, which the entry keeps. A host-bound compiled call's windows of ~25 ms
# differed by up to 2x within one case on an H100 lease: seven windows keep one slow stretch
# of the host from setting the median
_COMPILED_WARM_CALLS = 10
_COMPILED_WINDOWS = 7


def _first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text.strip().splitlines()[0][:300]


class _Clock:
    """Times `fn` on a device: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, torch, device: str):
        self.torch, self.cuda = torch, device.startswith("cuda")

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def per_call_us(self, fn: Callable, n: int) -> float:
        """Mean µs per call of n back-to-back calls (device time on a GPU)."""
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) * 1e3 / n
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t0) * 1e6 / n

    def windows_us(self, fn: Callable, n: int, windows: int) -> list[float]:
        """per_call_us of `windows` consecutive windows of n calls, with the garbage collector
        held off inside each (a collection in one window would be one call's outlier)."""
        out = []
        for _ in range(windows):
            gc.collect()
            gc.disable()
            try:
                out.append(self.per_call_us(fn, n))
            finally:
                gc.enable()
        return out

    def host_per_call_us(self, fn: Callable, n: int) -> float:
        """Mean µs per call, each call followed by synchronize, on the host clock."""
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
            self.sync()
        return (time.perf_counter() - t0) * 1e6 / n

    def calls_for(self, fn: Callable) -> int:
        """N so that N calls run >= _TARGET_S (at least 3, at most _MAX_CALLS)."""
        one_us = self.per_call_us(fn, 1)
        return max(3, min(_MAX_CALLS, math.ceil(_TARGET_S * 1e6 / max(one_us, 1e-3))))

    def warm(self, fn: Callable, n: int = 3):
        for _ in range(n):
            fn()
        self.sync()


def per_call_kernels(events: list[tuple[str, float, float]], calls: int) -> list[dict] | None:
    """Device events (name, start_us, duration_us) of `calls` identical calls -> one call's
    kernels in launch order, each {name, us} averaged over the calls; None when the events do
    not split evenly into the calls (a kernel launched only sometimes)."""
    events = sorted(events, key=lambda e: e[1])
    if not events or len(events) % calls:
        return None
    per = len(events) // calls
    names = [e[0] for e in events[:per]]
    if any(events[c * per + i][0] != names[i] for c in range(calls) for i in range(per)):
        return None
    return [{"name": names[i], "us": round(sum(events[c * per + i][2] for c in range(calls))
                                           / calls, 3)} for i in range(per)]


def _device_events(prof) -> list[tuple[str, float, float]]:
    """(name, start_us, duration_us) of every device event (kernels, memcpy, memset)."""
    try:
        out = []
        for e in prof.profiler.kineto_results.events():
            if str(e.device_type()).endswith("CUDA"):
                out.append((e.name(), e.start_ns() / 1e3, e.duration_ns() / 1e3))
        return out
    except AttributeError:      # older profiler API: the FunctionEvents
        return [(e.name, e.time_range.start, e.time_range.elapsed_us()) for e in prof.events()
                if str(e.device_type).endswith("CUDA")]


def _profile(torch, fn: Callable, calls: int) -> list[tuple[str, float, float]]:
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return _device_events(prof)


def _graph(torch, fn: Callable):
    """fn captured as a CUDA graph (warmed on a side stream first, as capture requires)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def host_constants(torch, device: str) -> dict:
    """Host-side costs of eager PyTorch, in µs: a tiny op's dispatch, a 64³ bf16 mm's, a
    view's (no kernel), a compiled trivial function's call, a CUDA graph's per-kernel replay
    cost ((replay of 100 tiny kernels - replay of 1) / 99), the gap a replayed kernel adds
    beyond its profiled time (graph_gap_us), what a synchronize after a tiny call adds
    (sync_us), and a bare nn.Module's call (module_call_us). GPU-only figures are None or
    absent on the CPU."""
    clock = _Clock(torch, device)
    n = 2000
    a = torch.ones(1, device=device)
    b = torch.ones(1, device=device)
    m = torch.randn(64, 64, device=device, dtype=torch.bfloat16)
    v = torch.ones(16, device=device)

    def host_us(fn, calls=n):
        clock.warm(fn, 10)
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        dt = time.perf_counter() - t0
        clock.sync()
        return round(dt * 1e6 / calls, 3)

    class Identity(torch.nn.Module):
        def forward(self, x):
            return x
    bare = Identity()
    out = {"tiny_op_dispatch_us": host_us(lambda: torch.add(a, b)),
           # a bare nn.Module's call and forward, no kernel: what a case's own call adds
           "module_call_us": host_us(lambda: bare(a)),
           "mm_dispatch_us": host_us(lambda: torch.mm(m, m), n if clock.cuda else 50),
           "view_dispatch_us": host_us(lambda: v.view(-1)),
           "compiled_call_us": None, "graph_launch_us": None,
           "graph_1_kernel_us": None, "graph_100_kernels_us": None}
    if not clock.cuda:
        return out
    try:
        torch._dynamo.reset()
        f = torch.compile(lambda x: x + 1)
        out["compiled_call_us"] = host_us(lambda: f(a), 1000)
        torch._dynamo.reset()
    except Exception as e:      # noqa: BLE001 -- a constant that fails is noted, not fatal
        out["compiled_call_error"] = _first_line(e)

    def many(k):
        def fn():
            x = a
            for _ in range(k):
                x = torch.add(x, b)
            return x
        return fn
    # what a synchronize after a call costs beyond the call: the host waits for the GPU and
    # wakes (eager_sync_us pays it per call); less the tiny kernel's own time in a graph
    synced = clock.host_per_call_us(lambda: torch.add(a, b), 500)
    g1, g100 = _graph(torch, many(1)), _graph(torch, many(100))
    t1 = clock.per_call_us(g1.replay, 500)
    t100 = clock.per_call_us(g100.replay, 200)
    out.update(graph_1_kernel_us=round(t1, 3), graph_100_kernels_us=round(t100, 3),
               graph_launch_us=round((t100 - t1) / 99, 3))
    out["sync_us"] = round(max(0.0, synced - out["tiny_op_dispatch_us"] - out["graph_launch_us"]), 3)
    # the gap a replayed kernel adds beyond its own profiled time: 200 adds of 1M bf16
    # elements (6 MB moved each) in one graph, against the same 200 calls profiled eagerly.
    # Each add writes a tensor of its own, kept alive, as each op of a model's step does: a
    # reused output buffer would stay in L2 and time a different program.
    x = torch.randn(1 << 20, device=device, dtype=torch.bfloat16)
    y = torch.randn(1 << 20, device=device, dtype=torch.bfloat16)

    def adds():
        return [torch.add(x, y) for _ in range(200)]
    g200 = _graph(torch, adds)
    replay_us = clock.per_call_us(g200.replay, 20)
    kernels = [e for e in _profile(torch, adds, 1) if "elementwise" in e[0]]
    if len(kernels) == 200:
        out["graph_gap_us"] = round((replay_us - sum(e[2] for e in kernels)) / 200, 3)
    return out


def provenance(torch, device: str, command: str) -> dict:
    """Where and with what the run was made."""
    out = {"hostname": platform.node(), "date_utc": datetime.datetime.now(
               datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": command, "python": platform.python_version(), "torch": torch.__version__,
           "device": device, "gpu": None, "cuda": torch.version.cuda, "driver": None,
           "triton": None, "git_sha": git_sha()}
    try:
        import triton
        out["triton"] = triton.__version__
    except ImportError:
        pass
    if device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name()
        out["allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
        try:
            out["driver"] = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
        except (OSError, IndexError, subprocess.SubprocessError):
            pass
    return out


def _case_meta(case) -> dict:
    return {"id": case.id, "family": case.family, "variant": case.variant, "split": case.split,
            "inputs": [{"name": i.name, "shape": list(i.shape), "dtype": i.dtype}
                       for i in case.inputs], "input_bytes": case.input_bytes,
            "compile": case.compile}


def run_case(torch, case, device: str, profile: bool, compile: bool,
             compile_ok: Callable[[], bool] = lambda: True) -> dict:
    """One case's entry (see the module docstring); every phase's failure is recorded in
    `errors` (phase -> first line) and the first one in `error`, and the other phases go on."""
    entry = _case_meta(case)
    errors: dict[str, str] = {}
    clock = _Clock(torch, device)
    cuda = clock.cuda
    mod = inputs = None
    try:
        mod = case.build(device)
        for p in mod.parameters():
            p.requires_grad_(False)
        inputs = case.make_inputs(device)

        def call():
            return mod(*inputs)

        clock.warm(call)
        n = clock.calls_for(call)
        entry["calls"] = n
        entry["eager_us"] = round(clock.per_call_us(call, n), 3)
    except Exception as e:      # noqa: BLE001 -- a case's failure is data, not the run's end
        errors["eager"] = _first_line(e)
    if cuda and "eager" not in errors:
        phases = [("eager_sync", lambda: entry.update(eager_sync_us=round(
            clock.host_per_call_us(call, min(n, _SYNC_CALLS)), 3)))]
        phases.append(("graph", lambda: _time_graph(torch, clock, call, n, entry)))
        if profile:
            phases.append(("profile", lambda: entry.update(kernels=_kernels(torch, call))))
        if compile and case.compile:
            phases.append(("compile", lambda: _time_compiled(torch, clock, mod, inputs, n, entry,
                                                             profile, compile_ok)))
        for name, fn in phases:
            try:
                fn()
            except Exception as e:      # noqa: BLE001
                errors[name] = _first_line(e)
                torch.cuda.synchronize()
    if errors:
        entry["errors"] = errors
        entry["error"] = next(iter(errors.values()))
    del mod, inputs
    if cuda:
        torch.cuda.empty_cache()
    return entry


def _time_graph(torch, clock, call, n, entry):
    g = _graph(torch, call)
    entry["graph_us"] = round(clock.per_call_us(g.replay, n), 3)
    del g


def _kernels(torch, call):
    events = _profile(torch, call, _PROFILE_CALLS)
    per = per_call_kernels(events, _PROFILE_CALLS)
    if per is None:     # uneven: keep every event, the caller can see why
        per = [{"name": n, "us": round(d, 3)} for n, _, d in sorted(events, key=lambda e: e[1])]
    return per


def _time_compiled(torch, clock, mod, inputs, n, entry, profile, compile_ok):
    if not compile_ok():
        entry["compile_skipped"] = "budget"
        return
    for mode, key in ((None, "compiled_us"), ("reduce-overhead", "compiled_graph_us")):
        torch._dynamo.reset()       # each case's forward compiles afresh, under its own mode
        cm = torch.compile(mod) if mode is None else torch.compile(mod, mode=mode)
        t0 = time.perf_counter()
        clock.warm(lambda: cm(*inputs), _COMPILED_WARM_CALLS)
        entry[key.replace("_us", "_warmup_s")] = round(time.perf_counter() - t0, 2)
        windows = clock.windows_us(lambda: cm(*inputs), n, _COMPILED_WINDOWS)
        entry[key] = round(statistics.median(windows), 3)
        entry[key.replace("_us", "_spread")] = round(max(windows) / min(windows) - 1, 3)
        entry[key.replace("_us", "_windows_us")] = [round(w, 3) for w in windows]
        if mode is None and profile:
            # averaged over several calls where they launch the same kernels, else one call's
            per = per_call_kernels(_profile(torch, lambda: cm(*inputs), _PROFILE_CALLS),
                                   _PROFILE_CALLS) \
                or per_call_kernels(_profile(torch, lambda: cm(*inputs), 1), 1) or []
            entry["compiled_kernels"] = [k["name"] for k in per]
            entry["compiled_kernel_us"] = [k["us"] for k in per]
        del cm
    torch._dynamo.reset()


def summary_line(entry: dict) -> str:
    """One line for a case's entry: its times in µs, kernel count, error and wall time."""
    if "skipped" in entry:
        return f"{entry['id']:<44} skipped ({entry['skipped']})"
    parts = [f"{entry['id']:<44}"]
    for key in ("eager_us", "eager_sync_us", "graph_us", "compiled_us", "compiled_graph_us"):
        if key in entry:
            parts.append(f"{key.removesuffix('_us')}={entry[key]:.1f}us")
    if "kernels" in entry:
        parts.append(f"kernels={len(entry['kernels'])}")
    if "error" in entry:
        parts.append(f"ERROR {entry['error']}")
    parts.append(f"[{entry.get('wall_s', 0):.1f}s]")
    return " ".join(parts)


def run(cases, device: str = "cuda", budget_s: float = 330, profile: bool = True,
        compile: bool = True, command: str | None = None,
        on_case: Callable[[dict, dict], None] | None = None) -> dict:
    """Time `cases` (torch_suite.Case) on `device` within `budget_s` seconds of wall time;
    returns the run's dict. `on_case(entry, result)` is called after each case (to print a
    line or write the file so far)."""
    import torch
    t_start = time.perf_counter()
    cuda = device.startswith("cuda")
    profile, compile = profile and cuda, compile and cuda
    result = {"schema": SCHEMA, "provenance": provenance(torch, device, command if command
                                                         is not None else " ".join(sys.argv)),
              "l2_flush": False, "budget_s": budget_s, "profile": profile, "compile": compile,
              "host": {}, "cases": []}
    with torch.no_grad():
        try:
            result["host"] = host_constants(torch, device)
        except Exception as e:      # noqa: BLE001
            result["host"] = {"error": _first_line(e)}
        for i, case in enumerate(cases):
            elapsed = time.perf_counter() - t_start
            if elapsed >= budget_s:
                entry = {**_case_meta(case), "skipped": "budget"}
            else:
                left = len(cases) - i - 1

                def compile_ok(left=left):
                    spent = time.perf_counter() - t_start
                    return budget_s - spent > left * _COMPILE_RESERVE_S + 5.0
                t0 = time.perf_counter()
                entry = run_case(torch, case, device, profile, compile, compile_ok)
                entry["wall_s"] = round(time.perf_counter() - t0, 3)
            result["cases"].append(entry)
            if on_case:
                on_case(entry, result)
    result["wall_s"] = round(time.perf_counter() - t_start, 2)
    result["cases_run"] = sum("skipped" not in c for c in result["cases"])
    return result


def run_to_file(cases, out, command: str, log=print, device: str = "cuda") -> dict:
    """run() every case with no time budget, rewriting the JSON file `out` after each case (a
    run cut short keeps what it finished) and logging a line per case; returns the run."""
    import json
    from pathlib import Path
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def on_case(entry, result):
        log(summary_line(entry))
        out.write_text(json.dumps(result, indent=1) + "\n")
    result = run(cases, device, budget_s=math.inf, command=command, on_case=on_case)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result
