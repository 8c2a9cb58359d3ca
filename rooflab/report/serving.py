"""The terminal table of `rooflab serve` / `rooflab sweep`: one row per configuration."""

from __future__ import annotations

import math

from rooflab.report.table import grid
from rooflab.sweep_table import ServeTable
from rooflab.terminal import printable
from rooflab.units import format_bytes, format_time


def _t(v: float) -> str:
    return "-" if math.isnan(v) else format_time(v)


def _rate(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:,.0f}"


def render(table: ServeTable, title: str = "") -> str:
    """`title` (after the model's name and its GPU; default: the schedule and launch mode),
    then the columns: the configuration (names left-aligned), TTFT, TPOT, latency, tokens/s
    (per GPU and per request) and memory against HBM; a configuration that does not fit says
    why."""
    several = {c: len(set(table.columns[c])) > 1 for c in ("gpu", "schedule", "launch", "variant")}
    cols = [c for c in ("gpu", "schedule", "launch", "variant") if several[c]]
    several_gpus = bool(any(table.columns["gpus"] > 1))
    if several_gpus:
        cols.append("gpus")
    head = cols + ["batch", "input", "output", "TTFT", "TPOT", "latency", "tok/s/GPU",
                   "tok/s/req"] + (["tok/s all"] if several_gpus else []) + ["memory", ""]
    body = []
    for r in table.rows():
        mem = f"{format_bytes(r['memory_bytes'])} / {format_bytes(r['hbm_bytes'])}"
        body.append([str(r[c]) for c in cols] + [
            str(r["batch"]), str(r["input_tokens"]), str(r["output_tokens"]),
            _t(r["ttft_s"]), _t(r["tpot_s"]), _t(r["latency_s"]), _rate(r["tokens_per_s"]),
            _rate(r["tokens_per_s_per_request"])] + (
            [_rate(r["total_tokens_per_s"])] if several_gpus else []) + [mem,
            "" if r["fits"] else f"does not fit: {r['why']}"])
    meta = table.meta
    # one GPU has no column of its own: the title names it
    subject = meta.get("model", "") + (f" on {table.columns['gpu'][0]}"
                                       if len(table) and not several["gpu"] else "")
    lines = [printable(f"{subject}: {title}" if title else
                       f"{subject}: serving, {meta.get('schedule', '')} schedule, "
                       f"{meta.get('launch', '')} launch ({meta.get('method', '')})")]
    # names read left-aligned, numbers (the GPU count among them) right-aligned
    names = len(cols) - several_gpus
    lines.append(grid(head, body, left=set(range(names)) | {len(head) - 1}))
    groups = [(f"{meta[k]} {what}") for k, what in (("tp", "tensor-parallel"),
              ("ep", "expert-parallel groups"), ("dp", "data-parallel replicas"))
              if meta.get(k, 1) > 1]
    if groups:
        lines.append(printable(f"GPUs: {' x '.join(groups)}"
                               + (", sequence parallel" if meta.get("sp") else "")
                               + "; memory and tok/s/GPU per GPU, tok/s all of every GPU; "
                               "a request's TTFT, TPOT and latency do not depend on replicas"))
    fits = meta.get("largest_batch", [])
    if fits:
        # what bounds the fit beside the KV cache: the prefill's activations, of every prompt
        lines.append("memory: weights, KV cache, workspace, and the activations of prefilling "
                     + ("every prompt of the batch at once (static batching; --chunk N takes "
                        "N tokens of each at a time)" if not meta.get("chunk") else
                        f"at most {meta['chunk']} tokens of every prompt of the batch at a "
                        "time"))
    # a sweep's answers differ by schedule and variant: named where the sweep has several
    named = [k for k in ("schedule", "variant") if len({f.get(k) for f in fits}) > 1]
    for fit in fits:
        of = ", ".join(str(fit[k]) for k in named)
        lines.append(printable(f"largest batch that fits on {fit['gpu']} at {fit['input_tokens']} + "
                               f"{fit['output_tokens']} tokens{f' ({of})' if of else ''}: "
                               + (f"{fit['batch']}" if fit["batch"] else
                                  "none (not one sequence fits)")))
    lines += [printable(f"note: {n}") for n in meta.get("notes", [])]
    return "\n".join(lines)
