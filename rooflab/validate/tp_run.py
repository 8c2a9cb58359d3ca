"""A tensor-parallel step of a Hugging Face model timed on this machine's GPUs, one process per GPU.

Each of `tp` processes builds, with random weights, what one GPU holds under Megatron-style
tensor parallelism (rooflab.trace.zoo.shard_config: heads, KV heads, MLP columns and vocabulary
divided), and adds the collectives where rooflab's sharding puts them
(rooflab.trace.sharding.block_collective): an all_reduce of every attention and MLP block's
output and of the vocab-parallel embedding's, an all_gather of lm_head's logits. The forward
call is the tracer's (rooflab.trace.hf.step_inputs). So the GPUs run the kernels transformers
runs on the sharded shapes and NCCL's collectives, as many and as large as the model prices.

Per case (batch x context for decode, batch x seq for prefill) four times, each the slowest
rank's median: the eager step and the CUDA-graph replay, each with the collectives and without
them (the same step with every collective skipped: its compute; the difference is the link
time a step without overlap spends). A one-element eager add on rank 0 (the run's own dispatch
cost, compared with like for like) is timed in the same processes.

NVLink multicast is off in every process (nccl_bench.MULTICAST_OFF). `run` returns a
rooflab.tp-run/1 document; rooflab.validate.tp_compare compares it with the prediction. On a
machine without GPUs, backend "gloo" runs it on CPU processes (eager only: the tests).
"""

from __future__ import annotations

import os
import statistics
import time

from rooflab.errors import RooflabError
from rooflab.validate.tp_compare import SCHEMA
from rooflab.validate.nccl_bench import MULTICAST_OFF, free_port, provenance, spawn

PHASES = ("decode", "prefill")
WARMUP, STEPS = 3, 10
TIMES = ("eager_s", "eager_s_compute", "graph_s", "graph_s_compute")


def _hooks(model, dist, world: int, state: dict) -> int:
    """Put tensor parallelism's collectives after the blocks that need them; returns how many
    modules got one. `state["link"]` False skips them all."""
    import torch
    from rooflab.trace.sharding import block_collective

    def all_reduce(module, args, out):
        if state["link"]:
            dist.all_reduce(out[0] if isinstance(out, tuple) else out)

    # all_gather_single is all_gather_into_tensor's newer name (torch 2.13)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor

    def all_gather(module, args, out):
        if not state["link"]:
            return None
        # the shards stacked along the first dimension: the gather's traffic, left unpermuted
        gathered = torch.empty((world * out.shape[0],) + tuple(out.shape[1:]), dtype=out.dtype,
                               device=out.device)
        gather(gathered, out.contiguous())
        return gathered

    n = 0
    for name, module in model.named_modules():
        kind = block_collective(name)
        if kind:
            module.register_forward_hook(all_reduce if kind == "all_reduce" else all_gather)
            n += 1
    return n


def _reset(cache) -> None:
    """Every cache layer back to empty, so each timed step is the traced one (transformers'
    StaticCache writes at its own cumulative_length, which each step advances)."""
    import torch
    for layer in getattr(cache, "layers", []):
        if isinstance(getattr(layer, "cumulative_length", None), torch.Tensor):
            layer.cumulative_length.fill_(0)
        if hasattr(layer, "cumulative_length_int"):
            layer.cumulative_length_int = 0


def _median_s(fn, cache, sync, align) -> float:
    """Median seconds of `fn` over STEPS calls after WARMUP, each started by `align` (every
    rank at once, so that no rank's time holds its wait for a slower one) and ended by `sync`."""
    for _ in range(WARMUP):
        _reset(cache)
        fn()
    times = []
    for _ in range(STEPS):
        _reset(cache)
        align()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _capture(step, cache, sync):
    """`step` captured in a CUDA graph (warm-up on a side stream first); RuntimeError where
    torch or NCCL refuses the capture."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(WARMUP):
            _reset(cache)
            step()
    torch.cuda.current_stream().wait_stream(s)
    sync()
    _reset(cache)
    g = torch.cuda.CUDAGraph()
    # thread_local: NCCL's watchdog thread may query events while this thread captures
    with torch.cuda.graph(g, capture_error_mode="thread_local"):
        step()
    return g


def _time_graph(row: dict, suffix: str, step, cache, sync, align, dist, torch, device) -> None:
    """row["graph_s" + suffix]: the median replay of `step` captured in a CUDA graph, where
    every rank captured it; else row["graph_error"], on every rank (a rank that replays NCCL
    calls the others do not would hang them)."""
    graph, error = None, "the capture failed on another rank"
    try:
        graph = _capture(step, cache, sync)
    except RuntimeError as e:
        error = f"{type(e).__name__}: {e}"[:300]
    captured = torch.tensor([1 if graph is not None else 0], device=device)
    dist.all_reduce(captured, op=dist.ReduceOp.MIN)
    if int(captured.item()):
        row["graph_s" + suffix] = _median_s(graph.replay, cache, sync, align)
    else:
        row["graph_error"] = error
        row.pop("graph_s", None)


def _dispatch_s(torch, device, sync, ops: int = 200) -> float:
    """Seconds of host time per eager one-element add, `ops` back to back (the median of five
    such loops): the run's own dispatch cost."""
    x = torch.zeros(1, device=device)
    loops = []
    for _ in range(6):
        sync()
        t0 = time.perf_counter()
        for _ in range(ops):
            x.add_(1)
        sync()
        loops.append((time.perf_counter() - t0) / ops)
    return statistics.median(loops[1:])


def _rank_main(rank: int, world: int, port: int, backend: str, source: str, phase: str,
               cases, layers: int, queue) -> None:
    os.environ.update(MULTICAST_OFF)
    import torch
    import torch.distributed as dist
    from transformers import AutoConfig, AutoModelForCausalLM

    from rooflab.trace import hf, zoo
    cuda = backend == "nccl"
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def align():
        sync()
        dist.barrier()
        sync()
    try:
        _, config, _ = zoo.resolve_config(source)
        fields = {k: v for k, v in zoo.shard_config(zoo.first_layers(config, layers),
                                                    world).items() if not k.startswith("_")}
        cfg = AutoConfig.for_model(fields.pop("model_type"), **fields)
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16,
                                                     attn_implementation="sdpa").eval()
        state = {"link": True}
        hooked = _hooks(model, dist, world, state)
        dispatch_s = _dispatch_s(torch, device, sync) if rank == 0 else 0.0
        rows = []
        for batch, tokens in cases:
            kwargs, _ = hf.step_inputs(model.config, phase, batch, tokens, tokens, str(device))
            cache = kwargs["past_key_values"]
            row = {"batch": batch, "tokens": tokens}
            with torch.no_grad():
                for link in (True, False):
                    state["link"] = link
                    suffix = "" if link else "_compute"
                    row["eager_s" + suffix] = _median_s(lambda: model(**kwargs), cache, sync,
                                                        align)
                    if cuda and "graph_error" not in row:
                        _time_graph(row, suffix, lambda: model(**kwargs), cache, sync, align,
                                    dist, torch, device)
            # the slowest rank's times; -1 stands for a time not taken (no graphs on CPUs)
            slowest = torch.tensor([row.get(k, -1.0) for k in TIMES], dtype=torch.float64,
                                   device=device)
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            row.update({k: float(v) for k, v in zip(TIMES, slowest.tolist()) if v >= 0})
            rows.append(row)
        if rank == 0:
            queue.put({"rows": rows, "collective_modules": hooked, "dispatch_s": dispatch_s})
    finally:
        dist.destroy_process_group()


def run(source: str, tps, cases, phase: str = "decode", backend: str = "nccl",
        command: str = "", layers: int = 0) -> dict:
    """The rooflab.tp-run/1 document of `source` (a bundled model name or a config.json path)
    at each tensor-parallel degree of `tps`, per case (batch, tokens), the model cut to its first
    `layers` decoder layers where that is not 0 (zoo.first_layers: one sharded layer's step):
    {schema, source, phase, layers, provenance, runs: [{tp, collective_modules, dispatch_s, rows: [{batch, tokens, eager_s,
    eager_s_compute, graph_s, graph_s_compute}]}]}; times in seconds, graph times only on GPUs."""
    import torch.multiprocessing as mp
    os.environ.update(MULTICAST_OFF)
    runs = []
    for tp in tps:
        queue = mp.get_context("spawn").SimpleQueue()
        spawn(_rank_main, tp, (tp, free_port(), backend, str(source), phase,
                               tuple(map(tuple, cases)), layers, queue))
        runs.append({"tp": tp, **queue.get()})
    import transformers
    prov = provenance(max(tps), backend, command)
    prov["transformers"] = transformers.__version__
    return {"schema": SCHEMA, "source": str(source), "phase": phase, "layers": layers,
            "provenance": prov, "runs": runs}


def cases(phase: str, sets: dict) -> list[tuple[int, int]]:
    """The (batch, tokens) cases a run times: the one `sets` names (batch, and context for
    decode or seq for prefill), else decode batches 1, 16 and 64 at context 1024 and batch 16
    at 4096, or prefills of 512 and 2048 tokens at batch 1. RooflabError for another phase, a
    size that is not a positive whole number, or a --set the run does not use."""
    if phase not in PHASES:
        raise RooflabError(f"--phase {phase}: a tensor-parallel run times "
                           f"{' or '.join(PHASES)}")
    size = "context" if phase == "decode" else "seq"
    unused = sorted(set(sets) - {"batch", size, "layers"})
    if unused:
        raise RooflabError(f"--set {unused[0]}: a {phase} run takes batch, {size} and layers")
    sets = {k: v for k, v in sets.items() if k != "layers"}
    for key in ("batch", size):
        v = sets.get(key, 1)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise RooflabError(f"--set {key}={v}: expected a positive whole number")
    if sets:
        return [(sets.get("batch", 1), sets.get(size, 1024 if size == "context" else 512))]
    if phase == "decode":
        return [(1, 1024), (16, 1024), (64, 1024), (16, 4096)]
    return [(1, 512), (1, 2048)]
