"""Measure greedy generation with Hugging Face transformers on one GPU: TTFT, TPOT, end-to-end latency.

Issue 15's measurement: for each bundled model (models/*.json, random bf16 weights, sdpa attention), each
batch and input length, a StaticCache of input + output tokens, greedy argmax sampling on the device:

  prefill  model(input_ids=[b, input], past_key_values=cache, cache_position=arange(input),
                 use_cache=True, logits_to_keep=1), then argmax of the last logits.
           TTFT = wall clock of that call plus the argmax, between synchronizes; median of a few repeats
           (the cache's length is reset to 0 before each one).
  decode   output - 1 steps, one token each at cache_position input + i, the argmax fed back.
           Eager: every step timed between synchronizes (as generate() does on CUDA, whose stop check
           reads a device flag on the host every step), with CUDA events too.
           Graph: one decode step (forward, argmax, token and position written back into static
           buffers) captured in a CUDA graph and replayed output - 1 times: timed per step between
           synchronizes, and once more back to back (events between replays, no host wait).
           Prefill is captured and replayed too (static shapes), with the mask decision of the eager call.
  end to end  TTFT + the sum of the decode steps; output tokens/s = batch * output / end to end.

Once per run: the eager dispatch cost of tiny ops and their per-kernel time in a graph
(lab/hf_eager/measure.py's dispatch_calibration), the device memory free after CUDA initialisation,
before any model; per case the peak allocated memory of prefill and of decode. Provenance (date, GPU,
driver, versions, host, git commit or the script's hash, command line) goes in the JSON, which is
rewritten after every case so a stopped run keeps what finished: <out>/<prefix>.json.

`--tiny` shrinks the configs (lab/hf_eager's shrink: 2 layers, hidden 256, vocab 1024) and the sizes, and
runs on the CPU without graphs, to check the script anywhere; `--shrink` does the same on the GPU with
graphs.

Needs only torch, transformers and the standard library.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HF_EAGER_PATH = ROOT / "lab" / "hf_eager" / "measure.py"


def _load_hf_eager():
    """Import lab/hf_eager/measure.py under its own module name (both scripts are called measure.py)."""
    spec = importlib.util.spec_from_file_location("hf_eager_measure", HF_EAGER_PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


HF = _load_hf_eager()

MODELS = ["llama3.2-1b", "llama3-8b"]
BATCHES = [1, 8, 32]
INPUTS = [512, 2048]
OUTPUT = 128
TINY_BATCHES = [1, 2]
TINY_INPUTS = [16, 32]
TINY_OUTPUT = 8

PREFILL_WARMUP = 2
PREFILL_REPEATS = 5
# A prefill stage stops repeating once its samples add up to this many seconds (with at least 3 samples):
# llama3-8b at batch 32 x 2048 tokens is about 1 PFLOP, over a second a call.
PREFILL_BUDGET_S = 4.0
DECODE_WARMUP = 3


# --------------------------------------------------------------------------- provenance


def git_info() -> dict:
    """Return the checkout's commit and the count of modified tracked files, or why they are unknown.

    The device machine gets a copy of the working tree, which may have no .git: then 'commit' is None and
    'error' says why; ROOFLAB_COMMIT in the environment, when set, is recorded as 'commit_from_env'."""
    rec: dict = {"commit": None}
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=20)
        if r.returncode == 0:
            rec["commit"] = r.stdout.strip()
            s = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=20)
            rec["modified_tracked_files"] = len([ln for ln in s.stdout.splitlines() if ln.strip()])
        else:
            rec["error"] = (r.stderr.strip() or f"git exited {r.returncode}")[:300]
    except Exception as exc:  # no git on the machine
        rec["error"] = repr(exc)[:300]
    if os.environ.get("ROOFLAB_COMMIT"):
        rec["commit_from_env"] = os.environ["ROOFLAB_COMMIT"]
    return rec


def file_sha256(path: Path) -> str:
    """Return the hex SHA-256 of a file's bytes (identifies the script when git cannot)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def provenance() -> dict:
    """Return hf_eager's environment record (host, date, GPU, driver, versions, argv) plus git and hashes."""
    env = HF.environment()
    env["git"] = git_info()
    env["script_sha256"] = {"lab/serve_h200/measure.py": file_sha256(Path(__file__).resolve()),
                            "lab/hf_eager/measure.py": file_sha256(HF_EAGER_PATH)}
    env["cwd"] = os.getcwd()
    if torch.cuda.is_available():
        b = torch.backends.cuda
        env["sdpa_backends_enabled"] = {"flash": b.flash_sdp_enabled(), "mem_efficient": b.mem_efficient_sdp_enabled(),
                                        "cudnn": b.cudnn_sdp_enabled(), "math": b.math_sdp_enabled()}
    return env


def device_memory(label: str) -> dict:
    """Return torch.cuda.mem_get_info in GB (free, total, used = total - free) with the allocator's counts."""
    free, total = torch.cuda.mem_get_info()
    return {"when": label, "free_gb": round(free / 1e9, 3), "total_gb": round(total / 1e9, 3),
            "used_gb": round((total - free) / 1e9, 3),
            "allocated_gb": round(torch.cuda.memory_allocated() / 1e9, 3),
            "reserved_gb": round(torch.cuda.memory_reserved() / 1e9, 3)}


# --------------------------------------------------------------------------- one step


def forward_logits(model, ids, cache, pos):
    """Run one forward as generate() does for a StaticCache; return the logits of the last token, [b, 1, vocab].

    transformers 5.17 takes the positions from the cache's own length (a device tensor), not from
    `cache_position`; it is passed for versions that read it."""
    out = model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True, logits_to_keep=1)
    return out.logits


def greedy(logits):
    """Return the argmax token of the last position of each sequence, [b] int64, on the logits' device."""
    return logits[:, -1, :].argmax(dim=-1)


class Timer:
    """Wall clock between synchronizes, and CUDA-event time on the GPU, of one region; seconds."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        self.device = device

    def __enter__(self):
        HF.sync(self.device)
        if self.cuda:
            self.e0, self.e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.t0 = time.perf_counter()
        if self.cuda:
            self.e0.record()
        return self

    def __exit__(self, *exc):
        if self.cuda:
            self.e1.record()
        HF.sync(self.device)
        self.wall = time.perf_counter() - self.t0
        self.gpu = self.e0.elapsed_time(self.e1) / 1e3 if self.cuda else None
        return False


def step_stats_ms(values_s: list[float]) -> dict:
    """Return mean, median, min, max, first, last, sum and every sample of per-step durations, in ms."""
    ms = [v * 1e3 for v in values_s]
    return {"mean": statistics.fmean(ms), "median": statistics.median(ms), "min": min(ms), "max": max(ms),
            "first": ms[0], "last": ms[-1], "sum": sum(ms), "n": len(ms), "samples": [round(v, 4) for v in ms]}


def cache_bytes(cache) -> int:
    """Return the bytes held by a StaticCache's key and value tensors (0 before its lazy allocation)."""
    total = 0
    for layer in getattr(cache, "layers", []):
        for name in ("keys", "values"):
            t = getattr(layer, name, None)
            if isinstance(t, torch.Tensor):
                total += t.numel() * t.element_size()
    return total


class recorded_mask_decisions:
    """Context manager: record what masking_utils._ignore_causal_mask_sdpa answers (record=True), or answer
    the recorded values in order, cycling (record=False), and make masking_utils.is_tracing answer False.

    Under stream capture transformers' is_tracing() is true and the prefill would build a
    [b, 1, input, input + output] mask; made to answer False, the decision would read the cache's length
    from the device (`q_offset == 0`, a host sync, which a capture forbids). Replaying the eager call's
    answers makes the captured prefill the eager program: no mask, SDPA with is_causal=True."""

    def __init__(self, answers: list, record: bool):
        self.answers, self.record, self.i = answers, record, 0

    def __enter__(self):
        import transformers.masking_utils as mu

        self._mu, self._orig, self._orig_tracing = mu, mu._ignore_causal_mask_sdpa, mu.is_tracing

        def decide(*a, **k):
            if self.record:
                ans = bool(self._orig(*a, **k))
                self.answers.append(ans)
                return ans
            ans = self.answers[self.i % len(self.answers)]
            self.i += 1
            return ans

        mu._ignore_causal_mask_sdpa = decide
        if not self.record:
            mu.is_tracing = lambda tensor=None: False
        return self

    def __exit__(self, *exc):
        self._mu._ignore_causal_mask_sdpa = self._orig
        self._mu.is_tracing = self._orig_tracing
        return False


# --------------------------------------------------------------------------- stages


def prefill_eager(model, cache, ids, pos, device: str, repeats: int) -> tuple[dict, torch.Tensor, list]:
    """Time eager prefill + argmax: PREFILL_WARMUP untimed calls, then up to `repeats` timed ones.

    Returns (record in ms, the first tokens [b], the mask decisions the call made). The cache's length is
    reset to 0 before every call, outside the timed region."""
    decisions: list = []
    for i in range(PREFILL_WARMUP):
        HF.reset_cache_length(cache, 0)
        if i == 0:
            with recorded_mask_decisions(decisions, record=True):
                tok = greedy(forward_logits(model, ids, cache, pos))
        else:
            tok = greedy(forward_logits(model, ids, cache, pos))
    walls, gpus = [], []
    for _ in range(repeats):
        HF.reset_cache_length(cache, 0)
        with Timer(device) as t:
            tok = greedy(forward_logits(model, ids, cache, pos))
        walls.append(t.wall)
        if t.gpu is not None:
            gpus.append(t.gpu)
        if sum(walls) > PREFILL_BUDGET_S and len(walls) >= 3:
            break
    rec = {"wall_ms": HF.stats_ms(walls)}
    if gpus:
        rec["gpu_event_ms"] = HF.stats_ms(gpus)
    rec["mask_skipped_is_causal"] = decisions
    return rec, tok, decisions


def decode_eager(model, cache, tok0, n_in: int, steps: int, device: str) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """Time `steps` eager decode steps from position `n_in`, each forward + argmax between synchronizes.

    DECODE_WARMUP untimed steps first, then the cache's length is set back to `n_in` and the first token
    to `tok0`. The position advances on the device (pos + 1) inside each timed step, as generate() does.
    Returns (record in ms, the generated tokens [b, steps], the first step's logits [b, 1, vocab])."""
    b = tok0.shape[0]
    HF.reset_cache_length(cache, n_in)
    tok, pos = tok0.clone(), torch.tensor([n_in], device=tok0.device)
    for _ in range(DECODE_WARMUP):
        tok = greedy(forward_logits(model, tok.view(b, 1), cache, pos))
        pos = pos + 1
    HF.reset_cache_length(cache, n_in)
    tok, pos = tok0.clone(), torch.tensor([n_in], device=tok0.device)
    walls, gpus, toks, first_logits = [], [], [], None
    for _ in range(steps):
        with Timer(device) as t:
            logits = forward_logits(model, tok.view(b, 1), cache, pos)
            tok = greedy(logits)
            pos = pos + 1
        walls.append(t.wall)
        toks.append(tok)
        first_logits = logits if first_logits is None else first_logits
        if t.gpu is not None:
            gpus.append(t.gpu)
    rec = {"wall_ms": step_stats_ms(walls), "timing": "per step: wall clock between synchronizes"}
    if gpus:
        rec["gpu_event_ms"] = step_stats_ms(gpus)
    return rec, torch.stack(toks, dim=1), first_logits


_SIDE_STREAM = None


def side_stream():
    """Return the one side stream of the run for capture warm-ups: each new stream would get its own
    cuBLAS workspace, which the allocator keeps for the rest of the process."""
    global _SIDE_STREAM
    if _SIDE_STREAM is None:
        _SIDE_STREAM = torch.cuda.Stream()
    return _SIDE_STREAM


def _capture(fn, warm, mask_ctx):
    """Run `warm()` then `fn()` warm-up on a side stream, then capture `fn()` in a CUDA graph; return
    (graph, fn's captured output, capture seconds)."""
    s = side_stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            warm()
            fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    warm()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    t0 = time.perf_counter()
    with mask_ctx, torch.cuda.graph(g):
        out = fn()
    torch.cuda.synchronize()
    return g, out, time.perf_counter() - t0


def prefill_graph(model, cache, ids, pos, decisions: list, repeats: int, tok0) -> dict:
    """Capture prefill + argmax in a CUDA graph (with the eager call's mask decisions) and time replays.

    The cache's length is reset to 0 before the capture and before each replay, outside the timed region.
    Returns wall clock and CUDA-event time in ms, the capture time, and whether the replay's first tokens
    equal `tok0`, the eager prefill's."""
    g, tok, cap_s = _capture(lambda: greedy(forward_logits(model, ids, cache, pos)),
                             lambda: HF.reset_cache_length(cache, 0),
                             recorded_mask_decisions(decisions, record=False))
    try:
        HF.reset_cache_length(cache, 0)
        g.replay()
        walls, gpus = [], []
        for _ in range(repeats):
            HF.reset_cache_length(cache, 0)
            with Timer("cuda") as t:
                g.replay()
            walls.append(t.wall)
            gpus.append(t.gpu)
            if sum(walls) > PREFILL_BUDGET_S and len(walls) >= 3:
                break
        return {"wall_ms": HF.stats_ms(walls), "gpu_event_ms": HF.stats_ms(gpus), "capture_s": round(cap_s, 3),
                "mask_decisions": "replayed from the eager call", "first_tokens_equal_eager": bool(torch.equal(tok, tok0))}
    finally:
        del g, tok


def decode_graph(model, cache, tok0, n_in: int, steps: int) -> tuple[dict, torch.Tensor, torch.Tensor]:
    """Capture one decode step (forward, argmax, the token and position written back into their static
    buffers) in a CUDA graph; replay it `steps` times from position `n_in`, twice.

    'synced': each replay timed between synchronizes (wall clock and CUDA events), as the eager loop is.
    'back_to_back': `steps` replays queued with an event between each and no host wait; per-step CUDA-event
    times and the wall clock of the whole loop. Returns (both in ms and the capture time, the tokens
    [b, steps] of the synced replays, the first replay's logits [b, 1, vocab])."""
    b = tok0.shape[0]
    tok_buf = tok0.clone().view(b, 1)
    pos_buf = torch.tensor([n_in], device=tok0.device)

    def step():
        logits = forward_logits(model, tok_buf, cache, pos_buf)
        tok_buf.copy_(greedy(logits).view(b, 1))
        pos_buf.add_(1)
        return logits

    def start():
        HF.reset_cache_length(cache, n_in)
        tok_buf.copy_(tok0.view(b, 1))
        pos_buf.fill_(n_in)

    g, out, cap_s = _capture(step, start, HF.eager_mask_decisions())
    try:
        start()
        walls, gpus, toks, first_logits = [], [], [], None
        for _ in range(steps):
            with Timer("cuda") as t:
                g.replay()
            walls.append(t.wall)
            gpus.append(t.gpu)
            toks.append(tok_buf[:, 0].clone())
            first_logits = out.clone() if first_logits is None else first_logits
        synced = {"wall_ms": step_stats_ms(walls), "gpu_event_ms": step_stats_ms(gpus)}
        start()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(steps + 1)]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        ev[0].record()
        for i in range(steps):
            g.replay()
            ev[i + 1].record()
        torch.cuda.synchronize()
        wall = time.perf_counter() - t0
        per = [ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(steps)]
        b2b = {"gpu_event_ms": step_stats_ms(per), "loop_wall_ms": wall * 1e3, "mean_wall_ms": wall * 1e3 / steps}
        return ({"synced": synced, "back_to_back": b2b, "capture_s": round(cap_s, 3)}, torch.stack(toks, dim=1),
                first_logits)
    finally:
        del g, out


# --------------------------------------------------------------------------- one case


def end_to_end(ttft_ms: float, decode_sum_ms: float, batch: int, output: int) -> dict:
    """Return end-to-end latency (TTFT + decode steps) in ms and output tokens/s for the batch and per request."""
    e2e = ttft_ms + decode_sum_ms
    return {"e2e_ms": e2e, "output_tokens_per_s": batch * output / (e2e / 1e3),
            "output_tokens_per_s_per_request": output / (e2e / 1e3)}


def run_case(model, cfg, c: dict, args, device: str) -> dict:
    """Measure one (batch, input, output) case in the selected modes; return its record.

    A stage that fails (out of memory or otherwise) records why; stages after it that need it are
    skipped, the others still run."""
    from transformers import StaticCache

    b, n_in, n_out = c["batch"], c["input"], c["output"]
    rec = dict(c, status="ok", max_cache_len=n_in + n_out,
               kv_cache_bytes_expected=HF.kv_cache_bytes(cfg, b, n_in + n_out))
    cuda = device == "cuda"
    gen = torch.Generator(device="cpu").manual_seed(1000 * b + n_in)
    ids = torch.randint(1, cfg.vocab_size, (b, n_in), generator=gen).to(device)
    pos = torch.arange(n_in, device=device)
    steps = n_out - 1
    cache = tok0 = eager_toks = eager_logits = None
    peaks: dict = {}

    def stage_done(stage: str) -> None:
        # The allocator's peak since the previous stage ended, then a fresh count for the next one.
        if cuda:
            peaks[stage] = round(torch.cuda.max_memory_allocated() / 1e9, 3)
            rec["peak_allocated_gb"] = dict(peaks, case=max(peaks.values()))
            torch.cuda.reset_peak_memory_stats()

    if cuda:
        torch.cuda.reset_peak_memory_stats()
        rec["memory_before"] = device_memory("before case")
    try:
        with torch.no_grad(), torch.device(device):
            cache = StaticCache(config=cfg, max_cache_len=n_in + n_out)
        with torch.no_grad():
            e, tok0, decisions = prefill_eager(model, cache, ids, pos, device,
                                               args.prefill_repeats if "eager" in args.modes else 1)
        rec["kv_cache_bytes_allocated"] = cache_bytes(cache)
        if "eager" in args.modes:
            rec["prefill_eager"] = e
        stage_done("prefill_eager")
    except Exception as exc:
        rec.update(HF.failure(exc, "prefill_eager"))
        stage_done("prefill_eager")
        del cache, tok0
        HF.free_memory()
        return rec
    if "eager" in args.modes:
        try:
            with torch.no_grad():
                rec["decode_eager"], eager_toks, eager_logits = decode_eager(model, cache, tok0, n_in, steps, device)
            if args.tiny:
                rec["eager_tokens_equal_no_cache_reference"] = bool(torch.equal(
                    torch.cat([tok0[:, None], eager_toks], dim=1), reference_tokens(model, ids, n_out)))
            rec["eager"] = end_to_end(rec["prefill_eager"]["wall_ms"]["median"],
                                      rec["decode_eager"]["wall_ms"]["sum"], b, n_out)
        except Exception as exc:
            rec["decode_eager"] = HF.failure(exc, "decode_eager")
        stage_done("decode_eager")
        HF.free_memory()
    if "graph" in args.modes and cuda:
        try:
            with torch.no_grad():
                rec["prefill_graph"] = prefill_graph(model, cache, ids, pos, decisions, args.prefill_repeats, tok0)
        except Exception as exc:
            rec["prefill_graph"] = HF.failure(exc, "prefill_graph")
        stage_done("prefill_graph")
        HF.free_memory()
        try:
            with torch.no_grad():
                rec["decode_graph"], graph_toks, graph_logits = decode_graph(model, cache, tok0, n_in, steps)
            if eager_toks is not None:
                rec["graph_vs_eager"] = compare_runs(eager_toks, graph_toks, eager_logits, graph_logits)
            ttft = rec["prefill_graph"]["wall_ms"]["median"] if "wall_ms" in rec["prefill_graph"] else None
            if ttft is not None:
                rec["graph"] = end_to_end(ttft, rec["decode_graph"]["synced"]["wall_ms"]["sum"], b, n_out)
                rec["graph_back_to_back"] = end_to_end(ttft, rec["decode_graph"]["back_to_back"]["loop_wall_ms"],
                                                       b, n_out)
        except Exception as exc:
            rec["decode_graph"] = HF.failure(exc, "decode_graph")
        stage_done("decode_graph")
        HF.free_memory()
    if cuda:
        rec["memory_after"] = device_memory("after case, cache still held")
    del cache, tok0, eager_toks, eager_logits
    HF.free_memory()
    return rec


def compare_runs(toks_a, toks_b, logits_a, logits_b) -> dict:
    """Compare two decode loops from the same start: tokens [b, steps] and first-step logits [b, 1, vocab].

    Random weights give near-tied logits, so a rounding difference can flip an argmax and the sequences
    then part (on the H200 the decode step at batch > 1 is not bit-reproducible even eagerly: NOTES.md);
    the first step's logits (same cache, same token) show how far apart the numbers are. Returns equality, the fraction of equal tokens, the first step
    where any sequence differs, the largest logit difference, the largest |logit|, and the smallest gap
    between the top two logits of loop a's first step."""
    eq = toks_a == toks_b
    steps_all_equal = eq.all(dim=0)
    first_bad = None if bool(steps_all_equal.all()) else int((~steps_all_equal).nonzero()[0, 0])
    la, lb = logits_a[:, -1, :].float(), logits_b[:, -1, :].float()
    top2 = la.topk(2, dim=-1).values
    return {"tokens_equal": bool(eq.all()), "tokens_equal_fraction": round(float(eq.float().mean()), 4),
            "first_mismatch_step": first_bad,
            "first_step_argmax_equal": bool(torch.equal(la.argmax(-1), lb.argmax(-1))),
            "first_step_logits_max_abs_diff": float((la - lb).abs().max()),
            "first_step_logits_abs_max": float(la.abs().max()),
            "first_step_top2_gap_min": float((top2[:, 0] - top2[:, 1]).min())}


def reference_tokens(model, ids, n_out: int) -> torch.Tensor:
    """Return the `n_out` greedy tokens [b, n_out] of `ids` computed without a cache (each step a full
    forward over the prompt and the tokens so far): the check that the StaticCache loop is right."""
    seq = ids
    with torch.no_grad():
        for _ in range(n_out):
            nxt = model(input_ids=seq, use_cache=False, logits_to_keep=1).logits[:, -1, :].argmax(dim=-1)
            seq = torch.cat([seq, nxt[:, None]], dim=1)
    return seq[:, ids.shape[1]:]


def case_id(c: dict) -> str:
    """Return the key of a case, e.g. 'b8_in2048_out128'."""
    return f"b{c['batch']}_in{c['input']}_out{c['output']}"


def summary_row(name: str, rec: dict) -> dict:
    """Return the headline numbers of one case (ms, tokens/s, GB), None where a stage did not run."""

    def get(*keys):
        d = rec
        for k in keys:
            if not isinstance(d, dict) or k not in d:
                return None
            d = d[k]
        return d

    return {
        "model": name, "batch": rec.get("batch"), "input": rec.get("input"), "output": rec.get("output"),
        "status": rec.get("status"),
        "ttft_eager_ms": get("prefill_eager", "wall_ms", "median"),
        "tpot_eager_ms": get("decode_eager", "wall_ms", "mean"),
        "e2e_eager_ms": get("eager", "e2e_ms"),
        "tok_s_eager": get("eager", "output_tokens_per_s"),
        "ttft_graph_ms": get("prefill_graph", "wall_ms", "median"),
        "tpot_graph_ms": get("decode_graph", "synced", "wall_ms", "mean"),
        "tpot_graph_b2b_ms": get("decode_graph", "back_to_back", "mean_wall_ms"),
        "e2e_graph_ms": get("graph", "e2e_ms"),
        "tok_s_graph": get("graph", "output_tokens_per_s"),
        "peak_gb": (rec.get("peak_allocated_gb") or {}).get("case"),
        "tokens_check": rec.get("eager_tokens_equal_no_cache_reference"),
        "graph_tokens_equal_fraction": (rec.get("graph_vs_eager") or {}).get("tokens_equal_fraction"),
    }


def table(rows: list[dict]) -> str:
    """Return the summary rows as a markdown table."""
    cols = ["model", "batch", "input", "status", "ttft_eager_ms", "tpot_eager_ms", "e2e_eager_ms", "tok_s_eager",
            "ttft_graph_ms", "tpot_graph_ms", "tpot_graph_b2b_ms", "tok_s_graph", "peak_gb", "tokens_check",
            "graph_tokens_equal_fraction"]

    def f(v):
        return f"{v:.3f}" if isinstance(v, float) else ("-" if v is None else str(v))

    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(f(r.get(k)) for k in cols) + " |" for r in rows]
    return "\n".join(out)


# --------------------------------------------------------------------------- run


def run(args, device: str, path: Path) -> dict:
    """Run every selected model and case, rewriting the JSON at `path` after each; return the document."""
    doc: dict = {
        "what": "greedy generation with Hugging Face transformers, random bf16 weights, sdpa attention, "
                "StaticCache of input + output tokens: TTFT, TPOT, end to end, eager and CUDA graph "
                "(lab/serve_h200/measure.py)",
        "meta": {},
        "settings": {"prefill_warmup": PREFILL_WARMUP, "prefill_repeats": args.prefill_repeats,
                     "prefill_budget_s": PREFILL_BUDGET_S, "decode_warmup": DECODE_WARMUP,
                     "modes": args.modes, "tiny": args.tiny, "device": device,
                     "call": "model(input_ids, past_key_values=StaticCache, cache_position, use_cache=True, "
                             "logits_to_keep=1); argmax of logits[:, -1]"},
        "memory": {}, "calibration": {}, "models": {}, "summary": [],
    }
    if device == "cuda":
        torch.cuda.init()
        doc["memory"]["after_cuda_init"] = device_memory("after CUDA init, before any model")
    doc["meta"] = provenance()
    HF.write_json(path, doc)
    doc["calibration"]["start"] = HF.dispatch_calibration(device)
    if device == "cuda":
        doc["memory"]["after_calibration"] = device_memory("after the dispatch calibration (cuBLAS initialised)")
    HF.write_json(path, doc)
    print(f"[calibration] add_ eager {doc['calibration']['start']['add_inplace_1elem']['eager_wall_us_per_op']}",
          flush=True)
    t_run = time.perf_counter()
    for name in args.models:
        mrec = doc["models"].setdefault(name, {"cases": {}})
        model = None
        try:
            cfg = HF.load_config(name, args.tiny)
            t0 = time.perf_counter()
            model = HF.build_model(cfg, device)
            HF.sync(device)
            mrec["model"] = HF.model_summary(model, cfg, time.perf_counter() - t0)
            if device == "cuda":
                mrec["model"]["memory_after_build"] = device_memory("after model build")
        except Exception as exc:
            mrec["model"] = HF.failure(exc, "build")
            print(f"[{name}] build failed: {mrec['model']['status']}", flush=True)
            del model
            HF.free_memory()
            HF.write_json(path, doc)
            continue
        print(f"[{name}] built in {mrec['model']['build_s']} s: {mrec['model']['parameters']:,} params", flush=True)
        for b in args.batches:
            for n_in in args.inputs:
                c = {"batch": b, "input": n_in, "output": args.output}
                t_case = time.perf_counter()
                rec = run_case(model, cfg, c, args, device)
                rec["case_s"] = round(time.perf_counter() - t_case, 2)
                mrec["cases"][case_id(c)] = rec
                row = summary_row(name, rec)
                doc["summary"].append(row)
                HF.write_json(path, doc)
                print(f"[{name}] {case_id(c)}: {rec['status']} TTFT eager {row['ttft_eager_ms']} graph "
                      f"{row['ttft_graph_ms']} ms; TPOT eager {row['tpot_eager_ms']} graph {row['tpot_graph_ms']} "
                      f"ms; peak {row['peak_gb']} GB ({rec['case_s']} s, run {time.perf_counter() - t_run:.0f} s)",
                      flush=True)
        del model
        HF.free_memory()
    doc["calibration"]["end"] = HF.dispatch_calibration(device)
    if device == "cuda":
        doc["meta"]["nvidia_smi_end"] = HF.nvidia_smi("clocks.sm,clocks.mem,power.draw,temperature.gpu")
    doc["meta"]["finished_utc"] = HF.utc_now()
    doc["meta"]["run_s"] = round(time.perf_counter() - t_run, 1)
    HF.write_json(path, doc)
    return doc


def int_list(text: str) -> list[int]:
    """Parse '1,8,32' into [1, 8, 32]."""
    return [int(x) for x in text.split(",") if x.strip()]


def main() -> None:
    """Parse the command line, run, print the summary table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated bundled names (models/*.json)")
    ap.add_argument("--batches", default=None, help=f"comma-separated; default {BATCHES} ({TINY_BATCHES} tiny)")
    ap.add_argument("--inputs", default=None, help=f"prompt lengths; default {INPUTS} ({TINY_INPUTS} tiny)")
    ap.add_argument("--output", type=int, default=None, help=f"output tokens; default {OUTPUT} ({TINY_OUTPUT} tiny)")
    ap.add_argument("--modes", default="eager,graph", help="eager, graph or both (graph needs CUDA)")
    ap.add_argument("--prefill-repeats", type=int, default=PREFILL_REPEATS)
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--prefix", default=None, help="file name without .json; default h200-serve-<UTC date>")
    ap.add_argument("--tiny", action="store_true", help="shrunk configs and sizes on the CPU, no graphs")
    ap.add_argument("--shrink", action="store_true", help="the --tiny configs and sizes, on the GPU with graphs")
    args = ap.parse_args()
    small = args.tiny or args.shrink
    args.models = [m for m in args.models.split(",") if m]
    args.batches = int_list(args.batches) if args.batches else (TINY_BATCHES if small else BATCHES)
    args.inputs = int_list(args.inputs) if args.inputs else (TINY_INPUTS if small else INPUTS)
    args.output = args.output or (TINY_OUTPUT if small else OUTPUT)
    args.modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in args.modes if m not in ("eager", "graph")]
    if bad or args.output < 2 or min(args.batches + args.inputs) < 1:
        sys.exit(f"measure.py: bad arguments: modes {bad}, output {args.output} (>= 2), batches and inputs >= 1")
    device = "cpu" if args.tiny or not torch.cuda.is_available() else "cuda"
    args.tiny = small
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    date = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d")
    prefix = args.prefix or (f"tiny-serve-{date}" if device == "cpu" else f"h200-serve-{date}")
    torch.manual_seed(0)
    path = out_dir / f"{prefix}.json"
    doc = run(args, device, path)
    print(table(doc["summary"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
