"""A Hugging Face decode step under torch.compile, as a user compiles it: how long one call takes
and which kernels it launches, beside the eager step and its CUDA-graph replay.

One process per step (dynamo's state and the compile cache stay apart):
    python lab/compiled_steps/measure.py MODEL BATCH CONTEXT OUT.json \
        [--modes default,reduce-overhead]
MODEL is a bundled config (models/MODEL.json, random bf16 weights, SDPA), the forward call is the
one rooflab's tracer traces (lab/hf_eager/measure.py make_step: one token against a StaticCache of
CONTEXT tokens). Per mode, `torch.compile(model, mode=...)` is warmed (compiled) and then timed
in windows of back-to-back calls with CUDA events (torch_run's clock, as the torch suite times a
compiled call), each window from an emptied cache; the default mode's call is profiled last
(kernel names and device µs, one call). Writes OUT.json; prints one line per measurement.
"""
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from rooflab.validate.torch_run import (_Clock, _graph, _profile, host_constants,
                                        per_call_kernels, provenance)

# lab/hf_eager/measure.py builds the models and the traced call (a module of the same file name)
_spec = importlib.util.spec_from_file_location(
    "hf_eager_measure", Path(__file__).resolve().parents[1] / "hf_eager" / "measure.py")
hf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hf)

WINDOWS = 5
CALLS = 20          # a window; WINDOWS x CALLS steps stay inside a cache of 1024 tokens
WARM = 4


def timed(clock, step, cache) -> dict:
    """Windows of CALLS back-to-back steps, each from an emptied cache: µs per step."""
    out = []
    for _ in range(WINDOWS):
        hf.reset_cache_length(cache)
        out.extend(clock.windows_us(step, CALLS, 1))
    return {"median_us": round(statistics.median(out), 3), "min_us": round(min(out), 3),
            "windows_us": [round(w, 3) for w in out]}


def main(model_name: str, batch: int, context: int, path: str, modes: list[str]) -> None:
    cfg = hf.load_config(model_name, tiny=False)
    model = hf.build_model(cfg, "cuda")
    case = {"phase": "decode", "batch": batch, "context": context}
    step, cache = hf.make_step(model, cfg, case, "cuda")
    ids, pos = _cell(step, "ids"), _cell(step, "pos")      # the traced call's own inputs
    clock = _Clock(torch, "cuda")
    doc = {"provenance": provenance(torch, "cuda", " ".join(sys.argv)),
           "model": model_name, "batch": batch, "context": context,
           "host": host_constants(torch, "cuda")}
    with torch.no_grad():
        hf.reset_cache_length(cache)
        clock.warm(step, WARM)
        doc["eager"] = timed(clock, step, cache)
        print("eager", doc["eager"]["median_us"], flush=True)
        hf.reset_cache_length(cache)
        g = _graph(torch, step)
        doc["graph"] = timed(clock, g.replay, cache)
        print("graph", doc["graph"]["median_us"], flush=True)
        del g
        for mode in modes:
            torch._dynamo.reset()
            cm = torch.compile(model, mode=None if mode == "default" else mode)

            def call():
                return cm(input_ids=ids, past_key_values=cache, cache_position=pos,
                          use_cache=True)
            hf.reset_cache_length(cache)
            t0 = time.perf_counter()
            clock.warm(call, WARM)
            entry = {"warmup_s": round(time.perf_counter() - t0, 1)}
            entry.update(timed(clock, call, cache))
            from torch._dynamo.utils import counters
            entry["graphs"] = counters["stats"]["unique_graphs"]
            entry["graph_breaks"] = sum(counters["graph_break"].values())
            if mode == "default":
                hf.reset_cache_length(cache)
                per = per_call_kernels(_profile(torch, call, 1), 1) or []
                entry["kernels"] = [k["name"] for k in per]
                entry["kernel_us"] = [k["us"] for k in per]
            doc[mode] = entry
            print(mode, entry["median_us"], "warm", entry["warmup_s"], "s", "graphs",
                  entry["graphs"], "kernels", len(entry.get("kernels", [])), flush=True)
            Path(path).write_text(json.dumps(doc, indent=1))
            del cm
    Path(path).write_text(json.dumps(doc, indent=1))


def _cell(step, name):
    """The tensor `name` that make_step's step() closes over."""
    return step.__closure__[step.__code__.co_freevars.index(name)].cell_contents


if __name__ == "__main__":
    args = sys.argv[1:]
    modes = ["default", "reduce-overhead"]
    if "--modes" in args:
        i = args.index("--modes")
        modes = args[i + 1].split(",")
        del args[i:i + 2]
    main(args[0], int(args[1]), int(args[2]), args[3], modes)
