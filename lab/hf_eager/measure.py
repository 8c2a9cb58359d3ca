"""Measure Hugging Face transformers models run eagerly and as a CUDA-graph replay (issue 13 acceptance).

For each bundled model config (models/*.json) that fits on one GPU, builds the model with random weights
in bf16 and times one decode step (one token against a StaticCache of `context` tokens, for `batch`
sequences) and one prefill (`seq` tokens, batch 1), eagerly and as a CUDA-graph replay; profiles one eager
step with torch.profiler to count the CUDA kernels it launches and attribute them to the top-level ATen op
that launched them. Also measures, once per run, the eager dispatch cost of tiny ops and their per-kernel
time in a graph replay.

Two parts, so that the profiler (CUPTI) never shares a process with the timings or the graph captures:
  --part timing   eager and graph timings, dispatch calibration       -> <out>/<prefix>-timing.json
  --part profile  one profiled eager step per case                   -> <out>/<prefix>-profile.json
                                                                         <out>/<prefix>-sequences.json
  --merge         join the two into <out>/<prefix>.json
Each part rewrites its JSON after every case, so a run that is stopped keeps what finished.
`--tiny` shrinks every config (2 layers, hidden 256, vocab 1024) and runs on the CPU without graphs, to
check the script anywhere.

The forward call is exactly the one rooflab's tracer traces:
  model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
MODELS_DIR = ROOT / "models"

# Most important first (the decode steps of these three are the acceptance's core); mixtral last,
# since it is the largest and the most likely to fail (MoE routing, memory).
MODEL_ORDER = ["llama3-8b", "llama3.2-1b", "qwen2.5-7b", "qwen2.5-0.5b", "gemma3-1b", "mixtral-8x7b"]
DECODE_BATCHES = [1, 4, 16, 64]
DECODE_CONTEXTS = [1024, 4096]
PREFILL_SEQS = [512, 2048, 8192]

# --shrink-keep-layers: the shrunk configs keep their layer count, so that a step runs the
# full model's Python and ATen calls on tiny tensors: its host-side cost alone
KEEP_LAYERS = False

WARMUP = 3
EAGER_STEPS = 10
GRAPH_REPLAYS = 20


# --------------------------------------------------------------------------- helpers


def utc_now() -> str:
    """Return the current UTC time as an ISO-8601 string, seconds precision."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def write_json(path: Path, data) -> None:
    """Write `data` as indented JSON to `path` atomically (temp file, then rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False))
    os.replace(tmp, path)


def stats_ms(values_s: list[float]) -> dict:
    """Return median, min, max and all samples of a list of durations in seconds, as milliseconds."""
    ms = [v * 1e3 for v in values_s]
    return {
        "median": statistics.median(ms),
        "min": min(ms),
        "max": max(ms),
        "n": len(ms),
        "samples": [round(v, 4) for v in ms],
    }


def is_oom(exc: BaseException) -> bool:
    """Return True when `exc` is a CUDA (or CPU) out-of-memory error."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    return "out of memory" in str(exc).lower()


def free_memory() -> None:
    """Collect garbage and return cached blocks to the driver, so the next case starts clean."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def mem_numbers() -> dict:
    """Return the GPU memory state in GB (allocated, reserved, peak allocated, free, total), or {}."""
    if not torch.cuda.is_available():
        return {}
    free, total = torch.cuda.mem_get_info()
    return {
        "allocated_gb": round(torch.cuda.memory_allocated() / 1e9, 3),
        "reserved_gb": round(torch.cuda.memory_reserved() / 1e9, 3),
        "peak_allocated_gb": round(torch.cuda.max_memory_allocated() / 1e9, 3),
        "free_gb": round(free / 1e9, 3),
        "total_gb": round(total / 1e9, 3),
    }


def failure(exc: BaseException, stage: str) -> dict:
    """Return the record of a stage that failed: 'skipped: out of memory' with the numbers, or the error."""
    if is_oom(exc):
        rec = {"status": "skipped: out of memory", "stage": stage, "message": str(exc).splitlines()[0][:600]}
    else:
        rec = {
            "status": f"error: {type(exc).__name__}",
            "stage": stage,
            "message": str(exc)[:600],
            "traceback": traceback.format_exc()[-2000:],
        }
    rec["memory"] = mem_numbers()
    return rec


def nvidia_smi(fields: str) -> dict:
    """Return the named nvidia-smi --query-gpu fields of GPU 0 as a dict, or {'error': ...}."""
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True, text=True, timeout=20,
        ).stdout.strip()
        return dict(zip(fields.split(","), (v.strip() for v in out.split(","))))
    except Exception as exc:  # the probe is informative only
        return {"error": repr(exc)}


def environment() -> dict:
    """Return the run's environment: host, date, GPU, driver, clocks, and library versions."""
    import transformers

    env = {
        "hostname": socket.gethostname(),
        "date_utc": utc_now(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "transformers": transformers.__version__,
        "argv": sys.argv,
    }
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env["gpu"] = {
            "name": torch.cuda.get_device_name(0),
            "sm_count": p.multi_processor_count,
            "total_memory_gb": round(p.total_memory / 1e9, 2),
            "l2_cache_mb": round(getattr(p, "L2_cache_size", 0) / 2**20, 1),
            "capability": f"{p.major}.{p.minor}",
        }
        env["nvidia_smi"] = nvidia_smi(
            "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,power.limit,"
            "temperature.gpu,persistence_mode,compute_mode"
        )
    return env


# --------------------------------------------------------------------------- models and cases


def load_config(name: str, tiny: bool):
    """Build the transformers config of bundled model `name` (models/<name>.json); shrink it if `tiny`."""
    from transformers import AutoConfig

    d = json.loads((MODELS_DIR / f"{name}.json").read_text())
    if tiny:
        # Small enough to build and run on two CPU cores in seconds, same architecture and op sequence.
        d.update(hidden_size=256, intermediate_size=512, vocab_size=1024)
        if not KEEP_LAYERS:
            d["num_hidden_layers"] = 2
        d["num_attention_heads"] = 4
        d["num_key_value_heads"] = min(d.get("num_key_value_heads", 4), 2)
        if "head_dim" in d:
            d["head_dim"] = 64
        if "query_pre_attn_scalar" in d:
            d["query_pre_attn_scalar"] = 64
        if "sliding_window" in d and d["sliding_window"]:
            d["sliding_window"] = 16
        if "moe_intermediate_size" in d:
            d["moe_intermediate_size"] = 128
    return AutoConfig.for_model(d.pop("model_type"), **{k: v for k, v in d.items() if not k.startswith("_")})


def build_model(cfg, device: str):
    """Return the causal-LM model of `cfg` with random weights, bf16, sdpa attention, on `device`, in eval."""
    from transformers import AutoModelForCausalLM

    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.eval()
    return model


def model_summary(model, cfg, build_s: float) -> dict:
    """Return the facts of a built model: parameter count, weight bytes, implementations, build time."""
    n = sum(p.numel() for p in model.parameters())
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return {
        "class": type(model).__name__,
        "parameters": n,
        "weight_bytes": nbytes,
        "num_hidden_layers": cfg.num_hidden_layers,
        "attn_implementation": getattr(cfg, "_attn_implementation", None),
        "experts_implementation": getattr(cfg, "_experts_implementation", None),
        "build_s": round(build_s, 2),
    }


def cases(tiny: bool, phases: list[str]) -> list[dict]:
    """Return the cases to run, decode first: dicts with phase, batch, and context or seq."""
    out = []
    if "decode" in phases:
        for ctx in ([64] if tiny else DECODE_CONTEXTS):
            for b in ([1, 4] if tiny else DECODE_BATCHES):
                out.append({"phase": "decode", "batch": b, "context": ctx})
    if "prefill" in phases:
        for s in ([32] if tiny else PREFILL_SEQS):
            out.append({"phase": "prefill", "batch": 1, "seq": s})
    return out


def case_id(c: dict) -> str:
    """Return the key of a case, e.g. 'decode_b16_ctx4096' or 'prefill_b1_seq2048'."""
    if c["phase"] == "decode":
        return f"decode_b{c['batch']}_ctx{c['context']}"
    return f"prefill_b{c['batch']}_seq{c['seq']}"


def kv_cache_bytes(cfg, batch: int, length: int) -> int:
    """Return the bytes of a bf16 KV cache of `length` tokens for `batch` sequences over all layers.

    Sliding-window layers (gemma3) hold min(window, length) tokens."""
    heads = getattr(cfg, "num_key_value_heads", cfg.num_attention_heads)
    hd = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    layer_types = getattr(cfg, "layer_types", None) or ["full_attention"] * cfg.num_hidden_layers
    win = getattr(cfg, "sliding_window", None)
    total = 0
    for t in layer_types:
        n = min(win, length) if (t == "sliding_attention" and win) else length
        total += 2 * batch * heads * hd * n * 2
    return total


def make_step(model, cfg, c: dict, device: str, random_ids: bool = False):
    """Return (step, cache) for case `c`: step() runs exactly the traced forward call and returns its output.

    decode: StaticCache of `context` tokens, ids [batch, 1], cache_position [context - 1].
    prefill: StaticCache of `seq` tokens, ids [batch, seq], cache_position arange(seq).
    `random_ids` draws token ids instead of zeros (to see what all-zero activations do to the timing)."""
    from transformers import StaticCache

    with torch.device(device):
        if c["phase"] == "decode":
            cache = StaticCache(config=cfg, max_cache_len=c["context"])
            ids = torch.zeros(c["batch"], 1, dtype=torch.long)
            pos = torch.tensor([c["context"] - 1])
        else:
            cache = StaticCache(config=cfg, max_cache_len=c["seq"])
            ids = torch.zeros(c["batch"], c["seq"], dtype=torch.long)
            pos = torch.arange(c["seq"])
        if random_ids:
            ids = torch.randint(1, cfg.vocab_size, ids.shape)

    def step():
        return model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)

    return step, cache


def reset_cache_length(cache, n: int = 0) -> None:
    """Set every layer of `cache` to hold `n` tokens, so that the next step runs as on a fresh cache (n=0).

    transformers 5.17 ignores the `cache_position` argument: a StaticCache layer writes its new keys at
    its own `cumulative_length` (a device tensor, advanced in place by each step) and a sliding-window
    layer also keeps a Python int `cumulative_length_int`. Without a reset, repeated steps would write
    further along the cache (and a repeated prefill past its end). With it, every timed or replayed step
    is the very step that the tracer traces: the first one on an empty cache."""
    for layer in getattr(cache, "layers", []):
        if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor):
            layer.cumulative_length.fill_(n)
        if hasattr(layer, "cumulative_length_int"):
            layer.cumulative_length_int = n


def sync(device: str) -> None:
    """Wait for the device's queued work (no-op on the CPU)."""
    if device == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------------------------- timing part


def time_eager(step, cache, device: str, n: int = EAGER_STEPS) -> dict:
    """Time `n` eager steps after WARMUP warm-ups: wall clock between synchronizes, and CUDA-event time.

    The cache is reset to empty before each step (outside the timed region)."""
    for _ in range(WARMUP):
        reset_cache_length(cache)
        out = step()
        del out
    sync(device)
    walls, gpus = [], []
    for _ in range(n):
        reset_cache_length(cache)
        if device == "cuda":
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        sync(device)
        t0 = time.perf_counter()
        if device == "cuda":
            e0.record()
        out = step()
        if device == "cuda":
            e1.record()
        sync(device)
        walls.append(time.perf_counter() - t0)
        if device == "cuda":
            gpus.append(e0.elapsed_time(e1) / 1e3)
        del out
    rec = {"wall_ms": stats_ms(walls)}
    if gpus:
        rec["gpu_event_ms"] = stats_ms(gpus)
    return rec


class eager_mask_decisions:
    """Context manager: make transformers' masking code decide as in eager mode while a graph is captured.

    transformers' `is_tracing()` is true while a CUDA stream captures, and then `_ignore_causal_mask_sdpa`
    never skips the causal mask: a captured prefill builds a [b, 1, seq, seq] mask and runs SDPA with it,
    where the eager prefill on an empty StaticCache passes `is_causal=True` and no mask (decode on a
    StaticCache never skips the mask, eager or not). Inside this context masking_utils' `is_tracing`
    answers False, so the captured program is the eager one. Safe for our call only: no attention_mask
    is passed, so the skipped checks read no tensor data."""

    def __init__(self, active: bool = True):
        self.active = active

    def __enter__(self):
        if self.active:
            import transformers.masking_utils as mu

            self._mu, self._orig = mu, mu.is_tracing
            mu.is_tracing = lambda tensor=None: False
        return self

    def __exit__(self, *exc):
        if self.active:
            self._mu.is_tracing = self._orig
        return False


class capture_mask_decisions(eager_mask_decisions):
    """Context manager: make transformers' masking code decide as under CUDA-graph capture (is_tracing True),
    to profile eagerly the program that a captured step runs."""

    def __enter__(self):
        import transformers.masking_utils as mu

        self._mu, self._orig = mu, mu.is_tracing
        mu.is_tracing = lambda tensor=None: True
        self.active = True
        return self


def time_graph(step, cache, decode: bool, eager_masks: bool = True) -> dict:
    """Capture one step in a CUDA graph (warm-up on a side stream first), time GRAPH_REPLAYS replays.

    The cache is reset to empty before the capture and before each replay (outside the timed region; the
    graph itself advances the cache's length tensor). Returns each replay's wall clock (between
    synchronizes) and CUDA-event time and, for decode only, the mean of GRAPH_REPLAYS replays queued back
    to back with no reset and no host gap between them (a decode step then writes a few slots further
    on, the same work; a prefill would write past the cache's end), all in ms."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(WARMUP):
            reset_cache_length(cache)
            out = step()
            del out
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    reset_cache_length(cache)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    t0 = time.perf_counter()
    with eager_mask_decisions(eager_masks), torch.cuda.graph(g):
        out = step()
    torch.cuda.synchronize()
    capture_s = time.perf_counter() - t0
    try:
        for _ in range(3):
            reset_cache_length(cache)
            g.replay()
        torch.cuda.synchronize()
        walls, gpus = [], []
        for _ in range(GRAPH_REPLAYS):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            reset_cache_length(cache)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            e0.record()
            g.replay()
            e1.record()
            torch.cuda.synchronize()
            walls.append(time.perf_counter() - t0)
            gpus.append(e0.elapsed_time(e1) / 1e3)
        b2b = None
        if decode:
            reset_cache_length(cache)
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(GRAPH_REPLAYS):
                g.replay()
            e1.record()
            torch.cuda.synchronize()
            b2b = e0.elapsed_time(e1) / GRAPH_REPLAYS
        nodes = None
        try:
            # Not every torch build exposes the node count; it is a check, not a result.
            nodes = g.num_nodes() if hasattr(g, "num_nodes") else None
        except Exception:
            nodes = None
        return {
            "wall_ms": stats_ms(walls),
            "gpu_event_ms": stats_ms(gpus),
            "back_to_back_mean_ms": b2b,
            "capture_s": round(capture_s, 3),
            "graph_nodes": nodes,
        }
    finally:
        del out
        del g


def dispatch_calibration(device: str) -> dict:
    """Measure the eager cost of tiny ops and their per-kernel time replayed in a CUDA graph.

    ops: x.add_(1) on a 1-element fp32 tensor; a [1,64]x[64,64] bf16 matmul (cuBLAS); x.view(1) (no kernel).
    Each is run 2000 times in a loop; wall clock per op (synchronize before and after the loop) in us,
    CUDA-event time of the loop per op in us, and, for the two that launch kernels, the CUDA-event time
    per op of one graph holding all 2000, replayed (median of 5)."""
    n = 2000
    x = torch.zeros(1, device=device)
    a = torch.randn(1, 64, device=device, dtype=torch.bfloat16)
    w = torch.randn(64, 64, device=device, dtype=torch.bfloat16)
    ops = {
        "add_inplace_1elem": lambda: x.add_(1),
        "mm_1x64x64_bf16": lambda: torch.mm(a, w),
        "view_no_kernel": lambda: x.view(1),
    }
    res = {"n_ops": n}
    for name, fn in ops.items():
        for _ in range(200):
            fn()
        sync(device)
        walls, gpus = [], []
        for _ in range(5):
            if device == "cuda":
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            t_host = time.perf_counter() - t0
            if device == "cuda":
                e1.record()
            sync(device)
            walls.append((time.perf_counter() - t0) / n)
            if device == "cuda":
                gpus.append(e0.elapsed_time(e1) / 1e3 / n)
        rec = {
            "eager_wall_us_per_op": {"median": statistics.median(walls) * 1e6, "min": min(walls) * 1e6},
            "eager_host_loop_us_per_op_last": t_host / n * 1e6,
        }
        if gpus:
            rec["eager_gpu_event_us_per_op"] = {"median": statistics.median(gpus) * 1e6, "min": min(gpus) * 1e6}
        if device == "cuda" and name != "view_no_kernel":
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(s)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(n):
                    fn()
            g.replay()
            torch.cuda.synchronize()
            per = []
            for _ in range(5):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                g.replay()
                e1.record()
                torch.cuda.synchronize()
                per.append(e0.elapsed_time(e1) / 1e3 / n)
            rec["graph_gpu_us_per_kernel"] = {"median": statistics.median(per) * 1e6, "min": min(per) * 1e6}
            del g
        res[name] = rec
    return res


def host_step(name: str, device: str) -> dict:
    """The host-side calibration of model `name` in this process: one eager decode step (batch 1,
    64 tokens of context) of its shrunk config that keeps every layer (hidden 256), i.e. the
    full model's Python, module calls and ATen dispatches on tiny tensors, so host time alone.
    Returns the shrunk config (to trace the same step) and the step's eager timing."""
    global KEEP_LAYERS
    keep, KEEP_LAYERS = KEEP_LAYERS, True
    try:
        cfg = load_config(name, tiny=True)
    finally:
        KEEP_LAYERS = keep
    model = build_model(cfg, device)
    c = {"phase": "decode", "batch": 1, "context": 64}
    with torch.no_grad():
        step, cache = make_step(model, cfg, c, device)
        rec = {"case": case_id(c), **c, "config": json.loads(cfg.to_json_string()),
               "eager": time_eager(step, cache, device)}
    del model, step, cache
    free_memory()
    return rec


def run_timing(args, device: str, out_path: Path) -> None:
    """Run the timing part over every selected model and case, rewriting `out_path` after each case."""
    doc = {"part": "timing", "meta": environment(), "calibration": {}, "models": {}}
    doc["calibration"]["start"] = dispatch_calibration(device)
    write_json(out_path, doc)
    print(f"[calibration] {json.dumps(doc['calibration']['start'])}", flush=True)
    for name in args.models:
        mrec = doc["models"].setdefault(name, {"cases": {}})
        try:
            cfg = load_config(name, args.tiny)
            t0 = time.perf_counter()
            model = build_model(cfg, device)
            sync(device)
            mrec["model"] = model_summary(model, cfg, time.perf_counter() - t0)
            mrec["model"]["memory_after_build"] = mem_numbers()
        except Exception as exc:
            mrec["model"] = failure(exc, "build")
            print(f"[{name}] build failed: {mrec['model']['status']} {mrec['model']['message'][:200]}", flush=True)
            free_memory()
            write_json(out_path, doc)
            continue
        print(f"[{name}] built in {mrec['model']['build_s']} s: {mrec['model']['parameters']:,} params", flush=True)
        for c in cases(args.tiny, args.phases):
            cid = case_id(c)
            rec = dict(c)
            rec["kv_cache_gb"] = round(kv_cache_bytes(cfg, c["batch"], c.get("context", c.get("seq"))) / 1e9, 3)
            rec["status"] = "ok"
            t_case = time.perf_counter()
            if device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            step = cache = None
            try:
                with torch.no_grad():
                    step, cache = make_step(model, cfg, c, device)
                    rec["eager"] = time_eager(step, cache, device)
            except Exception as exc:
                rec.update(failure(exc, "eager"))
            if rec["status"] == "ok" and device == "cuda" and not args.no_graph:
                try:
                    with torch.no_grad():
                        rec["graph"] = time_graph(step, cache, c["phase"] == "decode")
                        rec["graph"]["mask_decisions"] = "eager (masking_utils.is_tracing -> False during capture)"
                except Exception as exc:
                    rec["graph"] = failure(exc, "graph")
                if c["phase"] == "prefill":
                    # What transformers itself captures: the causal mask is materialised.
                    free_memory()
                    try:
                        with torch.no_grad():
                            rec["graph_transformers_capture"] = time_graph(step, cache, False, eager_masks=False)
                    except Exception as exc:
                        rec["graph_transformers_capture"] = failure(exc, "graph_transformers_capture")
            del step, cache
            free_memory()
            if rec["status"] == "ok" and c["phase"] == "prefill":
                # Zero ids make every activation of a model whose pad token is 0 (gemma3) zero, and
                # GEMMs on zeros run faster: time the same step on random ids too (eager only).
                try:
                    with torch.no_grad():
                        step, cache = make_step(model, cfg, c, device, random_ids=True)
                        rec["eager_random_ids"] = time_eager(step, cache, device, n=10)
                except Exception as exc:
                    rec["eager_random_ids"] = failure(exc, "eager_random_ids")
                step = cache = None
                free_memory()
            rec["memory"] = mem_numbers()
            rec["case_s"] = round(time.perf_counter() - t_case, 2)
            mrec["cases"][cid] = rec
            write_json(out_path, doc)
            e = rec.get("eager", {}).get("wall_ms", {}).get("median")
            gr = rec.get("graph", {}).get("gpu_event_ms", {}).get("median")
            print(f"[{name}] {cid}: {rec['status']} eager {e} ms graph {gr} ms ({rec['case_s']} s)", flush=True)
        del model
        free_memory()
        if not args.tiny:
            try:
                mrec["host_step"] = host_step(name, device)
                print(f"[{name}] host step (shrunk, every layer): "
                      f"{mrec['host_step']['eager']['wall_ms']['median']:.2f} ms", flush=True)
            except Exception as exc:
                mrec["host_step"] = failure(exc, "host_step")
        mrec["calibration_after"] = dispatch_calibration(device)["add_inplace_1elem"]
        write_json(out_path, doc)
    doc["calibration"]["end"] = dispatch_calibration(device)
    doc["meta"]["nvidia_smi_end"] = nvidia_smi("clocks.sm,clocks.mem,power.draw,temperature.gpu")
    doc["meta"]["finished_utc"] = utc_now()
    write_json(out_path, doc)


# --------------------------------------------------------------------------- profile part


def _category(name: str, activity_type: str | None = None) -> str | None:
    """Return 'kernel', 'memcpy' or 'memset' for a device-side profiler event, None for other device events
    (GPU-side user annotations, synchronizations)."""
    at = (activity_type or "").lower()
    if "memcpy" in at or name.startswith("Memcpy"):
        return "memcpy"
    if "memset" in at or name.startswith("Memset"):
        return "memset"
    if at and at not in ("kernel", "concurrent_kernel"):
        return None
    return "kernel"


def analyse_profile(events, device_type) -> tuple[dict, list[str]]:
    """Attribute the device events of one profiled step to the top-level ATen op that launched them.

    The profiler links each device event to the CPU op active when it was launched (the innermost one;
    FunctionEvent.kernels); walking up that op's parents, the outermost aten:: op is the top-level op.
    Totals are counted from the device-side events themselves, so a launch that no CPU op claims shows as
    'unattributed'. Returns the summary (counts, per-op aggregation) and the launch-ordered sequence
    'op:kernels[+Nc memcpys][+Ns memsets]' of the top-level ATen ops."""
    from torch.autograd import DeviceType

    cpu = [e for e in events if e.device_type == DeviceType.CPU]
    dev = [e for e in events if e.device_type == device_type] if device_type != DeviceType.CPU else []

    def top_aten(e):
        top = None
        while e is not None:
            if e.name.startswith("aten::"):
                top = e
            e = e.cpu_parent
        return top

    aten = [e for e in cpu if e.name.startswith("aten::")]
    top_level = [e for e in aten if top_aten(e.cpu_parent) is None]
    per_top: dict[int, dict] = {id(t): {"kernel": [], "memcpy": [], "memset": [], "inner": [], "us": []}
                                for t in top_level}
    attributed_outside: dict[str, int] = {}
    ignored_links: dict[str, int] = {}
    for e in cpu:
        if getattr(e, "is_legacy", False) or not e.kernels:
            continue
        if not e.name.startswith("aten::"):
            # CUPTI's own markers ('Activity Buffer Request', 'Command Buffer Full') come back as CPU
            # events that the profiler links to device events already linked to the launching aten op
            # (seen on torch 2.11): counting them would count those kernels twice.
            ignored_links[e.name] = ignored_links.get(e.name, 0) + len(e.kernels)
            continue
        top = top_aten(e)
        for k in e.kernels:
            cat = _category(k.name)
            if top is None:
                key = f"{cat}: {e.name}"
                attributed_outside[key] = attributed_outside.get(key, 0) + 1
                continue
            slot = per_top[id(top)]
            slot[cat].append(k.name)
            if cat == "kernel":
                slot["inner"].append(e.name)
                slot["us"].append(k.duration)

    activity_hist: dict[str, int] = {}
    counts = {"kernel": 0, "memcpy": 0, "memset": 0, "other_device_events": 0}
    kernel_time_us = 0.0
    for d in dev:
        at = getattr(d, "activity_type", None)
        activity_hist[str(at)] = activity_hist.get(str(at), 0) + 1
        cat = _category(d.name, at)
        if cat is None:
            counts["other_device_events"] += 1
            continue
        counts[cat] += 1
        if cat == "kernel":
            kernel_time_us += d.time_range.end - d.time_range.start

    agg: dict[str, dict] = {}
    seq = []
    timeline: list = []
    n_attr = {"kernel": 0, "memcpy": 0, "memset": 0}
    for t in sorted(top_level, key=lambda e: e.time_range.start):
        slot = per_top[id(t)]
        a = agg.setdefault(t.name, {"calls": 0, "kernels": 0, "memcpys": 0, "memsets": 0, "kernels_per_call": {},
                                    "kernel_names": {}, "launching_ops": {}, "kernel_us": 0.0,
                                    "kernel_us_by_name": {}})
        a["calls"] += 1
        k = len(slot["kernel"])
        for cat in n_attr:
            n_attr[cat] += len(slot[cat])
        a["kernels"] += k
        a["memcpys"] += len(slot["memcpy"])
        a["memsets"] += len(slot["memset"])
        a["kernels_per_call"][str(k)] = a["kernels_per_call"].get(str(k), 0) + 1
        for kn, us in zip(slot["kernel"], slot["us"]):
            kn = kn if len(kn) <= 240 else kn[:240] + "..."
            a["kernel_names"][kn] = a["kernel_names"].get(kn, 0) + 1
            a["kernel_us"] += us
            a["kernel_us_by_name"][kn] = a["kernel_us_by_name"].get(kn, 0.0) + us
        # the step's timeline: each top-level op with its kernels' device times (us), launch order
        timeline.append([t.name, [round(us, 2) for us in slot["us"]]])
        for inner in slot["inner"]:
            a["launching_ops"][inner] = a["launching_ops"].get(inner, 0) + 1
        extra = "".join(f"+{len(slot[c])}{c[3]}" for c in ("memcpy", "memset") if slot[c])
        seq.append(f"{t.name}:{k}{extra}")
    launch_names = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                    "cudaLaunchCooperativeKernel")
    runtime_hist: dict[str, int] = {}
    for e in cpu:
        if e.name.startswith("cu"):
            runtime_hist[e.name] = runtime_hist.get(e.name, 0) + 1
    summary = {
        "kernels": counts["kernel"],
        "memcpys": counts["memcpy"],
        "memsets": counts["memset"],
        "other_device_events": counts["other_device_events"],
        "device_activity_types": activity_hist,
        "kernel_time_sum_ms": kernel_time_us / 1e3,
        "top_level_aten_ops": len(top_level),
        "top_level_aten_ops_launching_kernels": sum(1 for t in top_level if per_top[id(t)]["kernel"]),
        "aten_ops_total": len(aten),
        "attributed_to_top_level": n_attr,
        "launched_outside_aten_ops": attributed_outside,
        "ignored_non_aten_links": ignored_links,
        "cpu_launch_calls": sum(v for k, v in runtime_hist.items() if k in launch_names),
        "cuda_runtime_calls": dict(sorted(runtime_hist.items(), key=lambda kv: -kv[1])),
        "per_op": dict(sorted(agg.items(), key=lambda kv: -kv[1]["kernels"])),
        "timeline": timeline,
    }
    return summary, seq


def profile_once(step, activities, dtype, device: str) -> tuple[dict, list[str]]:
    """Profile one call of `step` (CPU and CUDA activities); return analyse_profile's summary and sequence."""
    from torch.profiler import profile

    sync(device)
    with profile(activities=activities) as prof:
        out = step()
        sync(device)
    del out
    t1 = time.perf_counter()
    summary, seq = analyse_profile(prof.events(), dtype)
    summary["analyse_s"] = round(time.perf_counter() - t1, 2)
    return summary, seq


def brief(summary: dict) -> dict:
    """Return the counts of a profile summary with, per top-level op, only calls, kernels, memcpys, memsets."""
    out = {k: v for k, v in summary.items()
           if k not in ("per_op", "cuda_runtime_calls", "device_activity_types", "timeline")}
    out["per_op"] = {k: {f: v[f] for f in ("calls", "kernels", "memcpys", "memsets")}
                     for k, v in summary["per_op"].items()}
    return out


def run_profile(args, device: str, out_path: Path, seq_path: Path) -> None:
    """Profile one eager step per selected model and case, rewriting the JSON files after each case."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    dtype = DeviceType.CUDA if device == "cuda" else DeviceType.CPU
    doc = {"part": "profile", "meta": environment(), "models": {}}
    seqs: dict = {"models": {}}
    for name in args.models:
        mrec = doc["models"].setdefault(name, {"cases": {}})
        try:
            cfg = load_config(name, args.tiny)
            t0 = time.perf_counter()
            model = build_model(cfg, device)
            sync(device)
            mrec["model"] = model_summary(model, cfg, time.perf_counter() - t0)
        except Exception as exc:
            mrec["model"] = failure(exc, "build")
            free_memory()
            write_json(out_path, doc)
            continue
        for c in cases(args.tiny, args.phases):
            cid = case_id(c)
            rec = dict(c)
            rec["status"] = "ok"
            t_case = time.perf_counter()
            step = cache = None
            try:
                with torch.no_grad():
                    step, cache = make_step(model, cfg, c, device)
                    for _ in range(WARMUP):
                        reset_cache_length(cache)
                        out = step()
                        del out
                    # The step that is timed and traced: a warmed-up model, an empty (reset) cache.
                    reset_cache_length(cache)
                    rec["profile"], seq = profile_once(step, activities, dtype, device)
                    seqs["models"].setdefault(name, {})[cid] = seq
                    if c["phase"] == "decode" and (c["batch"] == 1 or args.tiny or "gemma" in name):
                        # What a real decode step at the cache's last slot launches (gemma3's sliding
                        # layers take their 'full window' path there): counts only.
                        reset_cache_length(cache, c["context"] - 1)
                        p_last, _ = profile_once(step, activities, dtype, device)
                        rec["profile_last_position"] = brief(p_last)
                    if c["phase"] == "prefill":
                        # The program a CUDA-graph capture of this step runs (mask materialised), eagerly.
                        reset_cache_length(cache)
                        with capture_mask_decisions():
                            p_cap, _ = profile_once(step, activities, dtype, device)
                        rec["profile_capture_program"] = brief(p_cap)
                    if cid in ("decode_b1_ctx1024", "prefill_b1_seq512") or args.tiny:
                        # The very first call on a brand-new StaticCache, which also allocates and
                        # zeroes the cache (lazy initialization): counts only, one case per phase.
                        del step, cache
                        step = cache = None
                        free_memory()
                        step, cache = make_step(model, cfg, c, device)
                        p_first, _ = profile_once(step, activities, dtype, device)
                        rec["profile_first_call"] = brief(p_first)
            except Exception as exc:
                rec.update(failure(exc, "profile"))
            del step, cache
            free_memory()
            rec["case_s"] = round(time.perf_counter() - t_case, 2)
            mrec["cases"][cid] = rec
            write_json(out_path, doc)
            write_json(seq_path, seqs)
            p = rec.get("profile", {})
            print(f"[{name}] {cid}: {rec['status']} kernels {p.get('kernels')} memcpy {p.get('memcpys')} "
                  f"memset {p.get('memsets')} top-level aten {p.get('top_level_aten_ops')} ({rec['case_s']} s)",
                  flush=True)
        del model
        free_memory()
    doc["meta"]["finished_utc"] = utc_now()
    write_json(out_path, doc)


# --------------------------------------------------------------------------- merge and table


def merge(out_dir: Path, prefix: str, timing_files: list[Path] | None = None, profile_file: Path | None = None) -> Path:
    """Join the timing and profile JSONs into <out_dir>/<prefix>.json; return its path.

    Defaults: <prefix>-timing.json and <prefix>-profile.json in out_dir. With several timing files, a
    case in a later file replaces the same case of an earlier one (a re-run of some cases)."""
    timing_files = timing_files or [out_dir / f"{prefix}-timing.json"]
    profile_file = profile_file or out_dir / f"{prefix}-profile.json"
    timing: dict = {}
    for tf in timing_files:
        if not tf.exists():
            continue
        t = json.loads(tf.read_text())
        if not timing:
            timing = t
            timing["meta"] = dict(t.get("meta") or {}, source=tf.name)
            continue
        timing.setdefault("reruns", []).append({"source": tf.name, "meta": t.get("meta"),
                                                "calibration": t.get("calibration"),
                                                "cases": {n: list(m.get("cases", {})) for n, m in t["models"].items()}})
        for n, m in t.get("models", {}).items():
            tm = timing["models"].setdefault(n, {"cases": {}})
            tm["cases"].update(m.get("cases", {}))
    prof = json.loads(profile_file.read_text()) if profile_file.exists() else {}
    if prof:
        prof["meta"] = dict(prof.get("meta") or {}, source=profile_file.name)
    doc = {
        "what": "Hugging Face transformers models, random bf16 weights, sdpa attention, StaticCache: eager and "
                "CUDA-graph step times and profiler kernel counts of one eager step (lab/hf_eager/measure.py)",
        "meta": {"timing": timing.get("meta"), "profile": prof.get("meta"), "timing_reruns": timing.get("reruns")},
        "calibration": timing.get("calibration"),
        "settings": {"warmup": WARMUP, "eager_steps": EAGER_STEPS, "graph_replays": GRAPH_REPLAYS},
        "models": {},
    }
    names = list(dict.fromkeys(list(timing.get("models", {})) + list(prof.get("models", {}))))
    for name in names:
        tm = timing.get("models", {}).get(name, {})
        pm = prof.get("models", {}).get(name, {})
        m = {"model": tm.get("model") or pm.get("model"), "calibration_after": tm.get("calibration_after"),
             "host_step": tm.get("host_step"),
             "cases": {}}
        for cid in dict.fromkeys(list(tm.get("cases", {})) + list(pm.get("cases", {}))):
            rec = dict(tm.get("cases", {}).get(cid, {}))
            p = pm.get("cases", {}).get(cid)
            if p is not None:
                rec.setdefault("phase", p.get("phase"))
                rec.setdefault("batch", p.get("batch"))
                for k in ("context", "seq"):
                    if k in p:
                        rec.setdefault(k, p[k])
                if "profile" in p:
                    for k in ("profile", "profile_last_position", "profile_first_call", "profile_capture_program"):
                        if k in p:
                            rec[k] = p[k]
                    if p.get("status", "ok") != "ok":
                        rec["profile_failure"] = {k: p[k] for k in ("status", "stage", "message", "memory") if k in p}
                else:
                    rec["profile"] = {k: p[k] for k in ("status", "stage", "message", "memory") if k in p}
            m["cases"][cid] = rec
        doc["models"][name] = m
    path = out_dir / f"{prefix}.json"
    write_json(path, doc)
    return path


def table(path: Path) -> str:
    """Return a markdown table of a merged JSON: per model and case, eager and graph ms, kernels, ATen ops."""
    doc = json.loads(path.read_text())
    rows = ["| model | case | eager wall ms (median) | eager GPU-event ms | graph replay ms | graph as transformers "
            "captures ms | kernels | memcpy+memset | top-level ATen ops |", "|---|---|---|---|---|---|---|---|---|"]

    def f(x):
        return f"{x:.3f}" if isinstance(x, (int, float)) else "-"

    for name, m in doc["models"].items():
        for cid, r in m["cases"].items():
            st = r.get("status", "")
            e = r.get("eager", {})
            g = r.get("graph", {})
            p = r.get("profile", {})
            gms = f(g.get("gpu_event_ms", {}).get("median")) if "gpu_event_ms" in g else (g.get("status", "-") if g else "-")
            ecol = f(e.get("wall_ms", {}).get("median")) if e else st or "-"
            mm = f"{p.get('memcpys')}+{p.get('memsets')}" if "kernels" in p else "-"
            gt = r.get("graph_transformers_capture", {})
            gtc = f(gt.get("gpu_event_ms", {}).get("median")) if "gpu_event_ms" in gt else (gt.get("status", "=") if gt else "=")
            rows.append(f"| {name} | {cid} | {ecol} | {f(e.get('gpu_event_ms', {}).get('median'))} | {gms} | {gtc} | "
                        f"{p.get('kernels', p.get('status', '-'))} | {mm} | {p.get('top_level_aten_ops', '-')} |")
    return "\n".join(rows)


def main() -> None:
    """Parse the command line and run the chosen part (or merge)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["timing", "profile", "all"], default="all")
    ap.add_argument("--models", default=",".join(MODEL_ORDER), help="comma-separated bundled names")
    ap.add_argument("--phases", default="decode,prefill")
    ap.add_argument("--cases", default=None,
                    help="comma-separated case ids to keep (e.g. decode_b1_ctx1024,prefill_b1_seq512)")
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--prefix", default=None, help="file prefix; default h200-<UTC date> (tiny-<date> with --tiny)")
    ap.add_argument("--tiny", action="store_true", help="shrunk configs on the CPU, no graphs")
    ap.add_argument("--shrink", action="store_true", help="the --tiny configs and cases, but on the GPU with graphs")
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--shrink-keep-layers", action="store_true",
                    help="with --shrink/--tiny: keep every layer (the host-side cost of a full step)")
    ap.add_argument("--merge", action="store_true", help="only merge the two parts' JSON and print the table")
    ap.add_argument("--timing-files", default=None, help="with --merge: comma-separated timing JSONs, later ones win")
    ap.add_argument("--profile-file", default=None, help="with --merge: the profile JSON")
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.phases = args.phases.split(",")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")
    prefix = args.prefix or (f"tiny-{date}" if args.tiny else f"h200-{date}")
    if args.merge:
        tfiles = [Path(x) for x in args.timing_files.split(",")] if args.timing_files else None
        path = merge(out_dir, prefix, tfiles, Path(args.profile_file) if args.profile_file else None)
        print(table(path))
        return
    if args.cases:
        keep = set(args.cases.split(","))
        global cases
        _all_cases = cases
        cases = lambda tiny, phases: [c for c in _all_cases(tiny, phases) if case_id(c) in keep]  # noqa: E731
    device = "cpu" if args.tiny or not torch.cuda.is_available() else "cuda"
    args.tiny = args.tiny or args.shrink
    global KEEP_LAYERS
    KEEP_LAYERS = args.shrink_keep_layers
    if device == "cpu":
        args.no_graph = True
    torch.manual_seed(0)
    if args.part in ("timing", "all"):
        run_timing(args, device, out_dir / f"{prefix}-timing.json")
    if args.part in ("profile", "all"):
        run_profile(args, device, out_dir / f"{prefix}-profile.json", out_dir / f"{prefix}-sequences.json")
    if args.part == "all":
        print(table(merge(out_dir, prefix)))


if __name__ == "__main__":
    main()
