"""Serving answers: TTFT, TPOT, request latency, throughput and memory fit of a model on a GPU.

A request of `input` prompt tokens that generates `output` tokens runs one prefill (the whole
batch's prompts at once; it also yields the first output token) and then `output - 1` decode
steps. Each decode step is priced at its own context: step i (1 <= i < output) attends over the
input + i tokens the cache then holds (`kv="growing"`, as paged-attention serving engines run;
a generation of more than MAX_DECODE_CONTEXTS steps is priced at that many, spread evenly).
`kv="static"` prices every step at input + output, as a transformers static cache of that length
does (its attention spans the whole cache at every step). Then, per configuration:
    ttft_s     = prefill(batch, seq=input)
    tpot_s     = mean over the decode steps of decode(batch, context)
    latency_s  = ttft_s + (output - 1) * tpot_s
    tokens/s   = batch * output / latency_s      (per request: output / latency_s)
Static batching: the batch's requests start and end together; nothing is shared across GPUs.

Memory on the GPU: the weights, the KV cache of batch x (input + output) tokens, the largest
activation peak of the prefill and the last decode step, their other inputs, and a workspace
allowance (rooflab.memory). A configuration over what one process can allocate on the GPU
(Hardware.allocatable_bytes) is reported as not fitting, with what takes the memory, and is
not priced.

Every step is priced by the one cost model over a grid of sizes at once (rooflab.grid): on one
GPU, the decode step at every batch x every context that any (input, output) pair reaches
(at most MAX_DECODE_CONTEXTS of a pair's) is one prediction, and so are the prefills and the
memory of every batch x length.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from rooflab import api, grid, lowering, memory
from rooflab import schedule as schedule_lib
from rooflab.errors import RooflabError
from rooflab.graph import Graph
from rooflab.hardware import SPEC_DIR, Hardware
from rooflab.sweep_table import COLUMNS, ServeTable
from rooflab.units import format_bytes

KV_MODES = ("growing", "static")


@dataclass(frozen=True)
class Steps:
    """The steps of serving a model, as functions of their sizes (ints or grid Values):
    `prefill(batch, seq)`, `decode(batch, context)`, and where the model has one,
    `extend(batch, seq, context)`: `seq` (an int) new tokens after context - seq cached ones,
    a chunk of a chunked prefill. `notes`: what the answers do not model about the model (a
    quantized checkpoint priced at its config's dtype)."""
    name: str
    prefill: Callable[..., Graph]
    decode: Callable[..., Graph]
    extend: Callable[..., Graph] | None = None
    notes: tuple[str, ...] = ()


def steps_of(source: str, prefill_source: str | None = None,
             sets: dict[str, int] | None = None) -> Steps:
    """The Steps of a model: `hf:NAME` (both phases traced), or a workload YAML that declares
    `batch` and `context` (its decode step; with `seq` too it is also the prefill, run at
    context = seq), with `prefill_source` a YAML declaring `batch` and `seq` for the prefill."""
    sets = dict(sets or {})
    swept = sorted({"batch", "seq", "context"} & set(sets))
    if swept:
        raise RooflabError(f"--set {swept[0]}: serve sets batch with --batch and the lengths "
                           "with --input and --output")
    if source.startswith("hf:"):
        from rooflab.trace import parametric, zoo
        fixed = tuple(sorted(sets.items()))
        name = source[3:]
        pre, dec = (parametric.hf_step(name, p, fixed) for p in ("prefill", "decode"))

        def extend(b, s, c):
            return parametric.hf_step(name, "extend", tuple(sorted({**sets, "seq": s}.items()))
                                      ).graph(b, c)
        note = zoo.quantization_note(*zoo.resolve_config(name)[:2])
        return Steps(name, lambda b, s: pre.graph(b, s), lambda b, c: dec.graph(b, c), extend,
                     (note,) if note else ())
    from rooflab.trace.source import as_program
    if as_program(source).startswith("py:"):
        raise RooflabError(f"{source}: serve needs a model's prefill and decode steps: give an "
                           "hf: model or workload YAMLs (py: modules have no KV cache)")
    from rooflab import workload
    pre_file = prefill_source or source
    decl = set(workload.load_yaml_data(source).get("params") or {})
    pre_decl = set(workload.load_yaml_data(pre_file).get("params") or {})
    for flag in ("tp", "ep"):
        if flag in sets and flag not in decl | pre_decl:
            raise RooflabError(f"{flag} {sets[flag]}: {source} declares no `{flag}` parameter; "
                               "--tp and --ep shard hf: models, a workload is priced as written "
                               "(write it per GPU with a tp parameter, as "
                               "workloads/tp_layer_allreduce.yaml does)")
    unknown = [k for k in sets if k not in decl | pre_decl]
    if unknown:
        api.load_workload(source, sets)       # says which parameter, with the known ones
    # a --set goes to the steps whose file declares it (kv_dtype: the decode step's cache)
    dec_sets = {k: v for k, v in sets.items() if k in decl}
    pre_sets = {k: v for k, v in sets.items() if k in pre_decl}
    _need(source, decl, ("batch", "context"), "its decode step")
    if prefill_source is None and "seq" not in decl:
        raise RooflabError(f"{source}: declares no `seq`, so it has no prefill step: add "
                           "--prefill FILE (a workload declaring batch and seq)")
    _need(pre_file, pre_decl, ("batch", "seq"), "its prefill step")

    def dec(b, c):
        return api.load_workload(source, {**dec_sets, "batch": b, "context": c,
                                          **({"seq": 1} if "seq" in decl else {})})

    def pre(b, s):
        return api.load_workload(pre_file, {**pre_sets, "batch": b, "seq": s,
                                            **({"context": s} if "context" in pre_decl else {})})
    def extend(b, s, c):
        return api.load_workload(source, {**dec_sets, "batch": b, "seq": s, "context": c})
    return Steps(api.load_workload(source, dec_sets).name, pre, dec,
                 extend if "seq" in decl else None)


def _need(file: str, declared: dict, names: tuple[str, ...], what: str) -> None:
    missing = [n for n in names if n not in declared]
    if missing:
        raise RooflabError(f"{file}: serving needs {what} to take parameters "
                           f"{', '.join(names)}; it lacks {', '.join(missing)}")


def _check_sizes(batches, inputs, outputs) -> None:
    for flag, vals in (("--batch", batches), ("--input", inputs), ("--output", outputs)):
        if not vals:
            raise RooflabError(f"{flag}: give at least one value")
        bad = [v for v in vals if int(v) != v or v < 1]
        if bad:
            raise RooflabError(f"{flag}: sizes must be positive integers, got {bad[0]}")


def serve(source: str | Steps, gpus: list[str | Hardware], batches: list[int],
          inputs: list[int], outputs: list[int], schedule: str = "fused",
          launch: str | list[str] = "graph", *, prefill_source: str | None = None,
          sets: dict[str, int] | None = None, kv: str = "growing",
          chunk: int | None = None, tp: int = 1, ep: int = 1, dp: int = 1,
          sp: bool = False) -> ServeTable:
    """The ServeTable of every launch mode x GPU x input x output x batch (in that nesting
    order; `launch` is one mode or a list, the memory columns are worked out once). `dp`:
    data-parallel replicas of the whole (tp x ep) group, each serving its own batch: the
    deployment's throughput (total_tokens_per_s) is dp times one replica's, a request's
    latency and the per-GPU figures do not change; `gpus` counts tp x ep x dp. `sp`:
    sequence parallelism within the tensor-parallel group (hf: models, tp > 1). `chunk`:
    prefill the prompts `chunk` tokens at a time, each chunk attending over the cache so far
    (chunked prefill), instead of in one step. `tp`: each step runs on `tp` GPUs with
    tensor parallelism (hf: models are sharded and get their collectives; a workload must
    declare `tp` and be written per GPU); memory is per GPU, tokens/s per GPU. `ep`: a MoE's
    experts spread over `ep` such groups, each serving its own `batch` (hf: models)."""
    _check_sizes(batches, inputs, outputs)
    for flag, n in (("--tp", tp), ("--ep", ep), ("--dp", dp)):
        if int(n) != n or n < 1:
            raise RooflabError(f"{flag}: a positive number of GPUs, got {n}")
    if sp:
        raise RooflabError("--sp: serving fits its steps from traces at sizes that need not "
                           "divide by --tp; price a sequence-parallel step with rooflab predict")
    if kv not in KV_MODES:
        raise RooflabError(f"--kv must be one of {', '.join(KV_MODES)}, got '{kv}'")
    if not isinstance(source, Steps):
        sets = {**(sets or {}), **({"tp": tp} if tp > 1 else {}),
                **({"ep": ep} if ep > 1 else {}), **({"sp": 1} if sp else {})}
        steps = steps_of(source, prefill_source, sets)
    else:
        steps = source
    if chunk is not None:
        if int(chunk) != chunk or chunk < 1:
            raise RooflabError(f"--chunk: a positive number of tokens, got {chunk}")
        if steps.extend is None:
            raise RooflabError(f"--chunk: {steps.name}'s decode workload declares no `seq`, so "
                               "it cannot run a chunk of several tokens against its cache")
    hws = [api.load_hardware(h) for h in gpus]
    labels = {id(hw): _gpu_label(hw, [h.name for h in hws]) for hw in hws}
    launches = [launch] if isinstance(launch, str) else list(launch)
    pairs = [(n_in, n_out) for n_in in inputs for n_out in outputs]
    b = np.asarray(batches)
    # what fits depends on the schedule (what stays on chip), not on the launch mode
    fit = [(hw, _memory(steps, hw, schedule, b, pairs, chunk),
            largest_batches(steps, hw, schedule, pairs, chunk)) for hw in hws]
    parts = []
    for mode in launches:
        for hw, mem, _ in fit:
            ttft = _prefill_times(steps, hw, b, inputs, chunk, schedule, mode)
            tpot = _decode_times(steps, hw, b, pairs, kv, schedule, mode)
            parts += [_rows(hw, labels[id(hw)], b, n_in, n_out, mem[n_in, n_out], ttft[n_in],
                            tpot[n_in, n_out], schedule, mode, tp, ep, dp) for n_in, n_out in pairs]
    largest = [dict(gpu=labels[id(hw)], input_tokens=n_in, output_tokens=n_out,
                    batch=tops[n_in, n_out]) for hw, _, tops in fit for n_in, n_out in pairs]
    cols = {c: np.concatenate([p[c] for p in parts]) for c in COLUMNS}
    meta = dict(model=steps.name, schedule=schedule, launch=",".join(launches), kv=kv,
                method=(f"every decode step priced at its own context (a generation longer "
                        f"than {MAX_DECODE_CONTEXTS} steps: {MAX_DECODE_CONTEXTS} of them, "
                        "spread evenly)") if kv == "growing"
                else "every decode step priced at input + output (a static cache)",
                chunk=chunk, tp=tp, ep=ep, dp=dp, sp=bool(sp),
                largest_batch=largest, notes=list(steps.notes))
    return ServeTable(cols, meta)


def _gpu_label(hw: Hardware, names: list[str]) -> str:
    """The gpu column's name for `hw`: its spec's name, or where two specs of one GPU are
    compared (the datasheet's and a calibrated one) its file: `measured/h200` for a
    bundled one, else the path."""
    if names.count(hw.name) < 2 or not hw.source_file:
        return hw.name
    path = Path(hw.source_file)
    return path.relative_to(SPEC_DIR).with_suffix("").as_posix() \
        if path.is_relative_to(SPEC_DIR) else str(path)

def _step_times(step: Callable[..., Graph], hw: Hardware, axes: dict, sizes: Callable,
                schedule: str, launch: str) -> np.ndarray:
    """Predicted step time (s) at every point of the grid over `axes`, shaped like the grid;
    `sizes(params)` turns grid params into the step's arguments."""
    return _grid_columns(lambda p: {"time_s": api.predict_graph(
        step(*sizes(p)), hw, schedule, launch).totals.time_s}, axes, ("time_s",))["time_s"]


def _grid_columns(question: Callable[[dict], dict], axes: dict,
                  names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """question(params) over the grid of `axes`, its answer's `names` as arrays shaped like
    the grid."""
    part = grid.grid(axes)
    answers = grid.evaluate(part, question)
    return {k: grid.gather(answers, part.index.size, lambda a, k=k: a[k])
            .reshape(part.index.shape) for k in names}


def _memory(steps: Steps, hw: Hardware, schedule: str, batches: np.ndarray,
            pairs: list[tuple[int, int]], chunk: int | None = None
            ) -> dict[tuple[int, int], dict[str, np.ndarray]]:
    """Memory columns (bytes, per batch) of serving each (input, output) pair of `pairs` under
    `schedule` (a tensor a fused kernel keeps on chip takes no memory). With `chunk`, the
    prefill's activations are those of its last full chunk. The decode step is priced once
    over batch x every input + output, each prefill kind once over batch x its lengths."""
    totals = sorted({n_in + n_out for n_in, n_out in pairs})
    # a tensor's role depends on which sizes its shape follows, not on the batch: worked out
    # once, at batch 1, from probes one size larger
    dec_roles = _roles(steps.decode, totals[0], "context", set())
    kv_names = {t for t, r in dec_roles.items() if r is memory.TensorRole.KV_CACHE}
    dec = _step_memory_grid(steps.decode, dec_roles, hw, schedule, True, batches, "context",
                            totals)
    # the prefill that sets the activation peak: the whole prompt, or its last full chunk
    def chunked(n_in: int) -> bool:
        return chunk is not None and chunk < n_in

    def last_chunk_end(n_in: int) -> int:
        return n_in - n_in % chunk if n_in % chunk else n_in
    pre_at: dict[int, tuple[dict, int]] = {}
    whole = sorted({n_in for n_in, _ in pairs if not chunked(n_in)})
    if whole:
        roles = _roles(steps.prefill, whole[0], "seq", kv_names)
        cols = _step_memory_grid(steps.prefill, roles, hw, schedule, False, batches, "seq", whole)
        pre_at.update({n_in: (cols, i) for i, n_in in enumerate(whole)})
    ends = sorted({last_chunk_end(n_in) for n_in, _ in pairs if chunked(n_in)})
    if ends:
        def extend(b, c):
            return steps.extend(b, chunk, c)
        roles = _roles(extend, ends[0], "context", kv_names)
        cols = _step_memory_grid(extend, roles, hw, schedule, False, batches, "context", ends)
        pre_at.update({n_in: (cols, ends.index(last_chunk_end(n_in)))
                       for n_in, _ in pairs if chunked(n_in)})
    out = {}
    for n_in, n_out in pairs:
        d = totals.index(n_in + n_out)
        pre, p = pre_at[n_in]
        act = np.maximum(pre["activation_peak_bytes"][:, p] + pre["input_bytes"][:, p],
                         dec["activation_peak_bytes"][:, d] + dec["input_bytes"][:, d])
        out[n_in, n_out] = dict(weights_bytes=dec["weights_bytes"][:, d],
                                kv_cache_bytes=dec["kv_cache_bytes"][:, d],
                                activation_bytes=act,
                                workspace_bytes=dec["workspace_bytes"][:, d])
    return out


_STEP_MEMORY = ("weights_bytes", "kv_cache_bytes", "input_bytes", "activation_peak_bytes",
                "workspace_bytes")


# (step, size name, KV names) -> the roles of its tensors: a sweep over prompt x output lengths
# asks for the same step's roles at dozens of sizes
_ROLES: dict[tuple, dict[str, memory.TensorRole]] = {}


def _roles(step: Callable[..., Graph], size: int, size_name: str,
           kv_names: set[str]) -> dict[str, memory.TensorRole]:
    """The role of each tensor of `step(batch, size)`, from probes at batch 2 and at size + 1;
    the tensors named in `kv_names` (what the decode step attends over) are the KV cache. A
    step's tensors are the same at every size (a traced step is one template), and so is which
    sizes each follows: the roles worked out at the first size asked serve every other."""
    key = (step, size_name, frozenset(kv_names))
    if key not in _ROLES:
        if len(_ROLES) >= 64:
            _ROLES.clear()
        roles = memory.tensor_roles(step(1, size), {"batch": step(2, size),
                                                    size_name: step(1, size + 1)})
        roles.update({t: memory.TensorRole.KV_CACHE for t in kv_names if t in roles})
        _ROLES[key] = roles
    return dict(_ROLES[key])


def _step_memory(g: Graph, roles: dict, hw: Hardware, schedule: str,
                 outputs_counted: bool) -> memory.StepMemory:
    """memory.step_memory of step `g` under `schedule` on `hw`."""
    free = memory.on_chip_tensors(schedule_lib.build(lowering.lower(g, hw).graph, schedule, hw))
    if not outputs_counted:
        # a workload's prefill (or chunk) returns the k/v it writes (the KV cache, counted
        # apart) and the last token's logits
        free = free | g.outputs
    return memory.step_memory(g, roles, on_chip=free)


def _step_memory_grid(step: Callable[..., Graph], roles: dict, hw: Hardware, schedule: str,
                      outputs_counted: bool, batches: np.ndarray, size_name: str,
                      sizes: list[int]) -> dict[str, np.ndarray]:
    """_step_memory of step(batch, size) at every batch x size: each StepMemory field (bytes)
    as an array [batch, size]."""
    def question(p):
        m = _step_memory(step(p["batch"], p[size_name]), roles, hw, schedule, outputs_counted)
        return {k: getattr(m, k) for k in _STEP_MEMORY}
    return _grid_columns(question, {"batch": batches, size_name: sizes}, _STEP_MEMORY)


# Largest batch `largest_batches` looks for: beyond it the answer is given as this bound.
MAX_BATCH = 65_536


def largest_batches(steps: Steps, hw: Hardware, schedule: str, pairs: list[tuple[int, int]],
                    chunk: int | None = None) -> dict[tuple[int, int], int]:
    """Per (input, output) pair, the largest batch whose memory fits in what `hw` can allocate
    (0 when not even one sequence fits), found by pricing the memory of every batch up to a
    bound: the batches the KV cache alone leaves room for."""
    out, tops = {}, {}
    for pair, cols in _memory(steps, hw, schedule, np.array([1, 2]), pairs, chunk).items():
        total = sum(cols.values())
        if total[0] > hw.allocatable_bytes:
            out[pair] = 0
            continue
        per_seq = total[1] - total[0]
        room = hw.allocatable_bytes - total[0]
        tops[pair] = MAX_BATCH if per_seq <= 0 else int(min(MAX_BATCH, room // per_seq + 1))
    if tops:
        b = np.arange(1, max(tops.values()) + 1)
        every = _memory(steps, hw, schedule, b, list(tops), chunk)
        for pair, top in tops.items():
            fits = sum(every[pair].values())[:top] <= hw.allocatable_bytes
            out[pair] = int(b[:top][fits].max())
    return out


def _prefill_times(steps: Steps, hw: Hardware, batches: np.ndarray, inputs: list[int],
                   chunk: int | None, schedule: str, launch: str) -> dict[int, np.ndarray]:
    """TTFT (s) per batch of each prompt length: one prefill of the prompts, or with `chunk` a
    prefill of the first chunk and then one extend step per further chunk, each against the
    cache so far. Each kind of step is priced once over batch x the lengths it runs at."""
    def times(step, name, sizes):
        return _step_times(step, hw, {"batch": batches, name: sizes},
                           lambda p: (p["batch"], p[name]), schedule, launch)
    whole = [n for n in inputs if chunk is None or chunk >= n]
    out = {n: t for n, t in zip(whole, times(steps.prefill, "seq", whole).T)} if whole else {}
    split = [n for n in inputs if n not in out]
    if not split:
        return out
    first = times(steps.prefill, "seq", [chunk])[:, 0]
    # the cache length after each further full chunk of every prompt, and a last partial chunk
    ends = sorted({int(e) for n in split for e in chunk * np.arange(2, n // chunk + 1)})
    mid = times(lambda b, c: steps.extend(b, chunk, c), "context", ends) if ends else None
    tails = {}
    for rest in sorted({n % chunk for n in split} - {0}):
        lens = [n for n in split if n % chunk == rest]
        t = times(lambda b, c, rest=rest: steps.extend(b, rest, c), "context", lens)
        tails.update(zip(lens, t.T))
    at = {e: i for i, e in enumerate(ends)}
    for n in split:
        ttft = first
        if n // chunk > 1:
            ttft = ttft + mid[:, [at[e] for e in chunk * np.arange(2, n // chunk + 1)]].sum(axis=1)
        if n % chunk:
            ttft = ttft + tails[n]
        out[n] = ttft
    return out


# a request's decode steps are priced one by one up to this many; a longer generation at this
# many contexts spread evenly over it (a step's time moves smoothly with its context), so that
# pricing a million output tokens takes the time and memory of a thousand
MAX_DECODE_CONTEXTS = 1024


def _decode_contexts(n_in: int, n_out: int, kv: str) -> np.ndarray:
    """The contexts (cached tokens) whose decode steps' mean is a request's TPOT."""
    if kv != "growing":
        return np.array([n_in + n_out])
    if n_out - 1 <= MAX_DECODE_CONTEXTS:
        return np.arange(1, n_out) + n_in
    return np.unique(np.linspace(n_in + 1, n_in + n_out - 1, MAX_DECODE_CONTEXTS).round()
                     .astype(np.int64))


def _decode_times(steps: Steps, hw: Hardware, batches: np.ndarray,
                  pairs: list[tuple[int, int]], kv: str, schedule: str,
                  launch: str) -> dict[tuple[int, int], np.ndarray]:
    """TPOT (s) per batch of each (input, output) pair: the mean of its decode steps, each at
    its own context (kv growing; sampled at MAX_DECODE_CONTEXTS of them for a longer
    generation) or all at input + output (static); NaN with one output token. The decode step
    is priced once over batch x every context the pairs run at."""
    ctx_of = {(n_in, n_out): _decode_contexts(n_in, n_out, kv)
              for n_in, n_out in pairs if n_out > 1}
    out = {pair: np.full(len(batches), np.nan) for pair in pairs}
    if ctx_of:
        ctx = np.unique(np.concatenate(list(ctx_of.values())))
        dec = _step_times(steps.decode, hw, {"batch": batches, "context": ctx},
                          lambda p: (p["batch"], p["context"]), schedule, launch)
        out.update({pair: dec[:, np.searchsorted(ctx, c)].mean(axis=1)
                    for pair, c in ctx_of.items()})
    return out


def _rows(hw: Hardware, label: str, batches: np.ndarray, n_in: int, n_out: int, mem: dict,
          ttft: np.ndarray, tpot: np.ndarray, schedule: str, launch: str,
          tp: int, ep: int, dp: int) -> dict[str, np.ndarray]:
    """The table's columns for one GPU (`label` in its gpu column), input and output, one row
    per batch."""
    n = len(batches)
    total = sum(mem.values())
    fits = total <= hw.allocatable_bytes
    decode_s = np.where(n_out > 1, (n_out - 1) * np.nan_to_num(tpot), 0.0)
    latency = ttft + decode_s
    why = np.array([_why(total[i], hw, {k: v[i] for k, v in mem.items()}) if not fits[i] else ""
                    for i in range(n)], dtype=object)
    priced = lambda v: np.where(fits, v, np.nan)
    return dict(
        gpu=np.array([label] * n, dtype=object), schedule=np.array([schedule] * n, dtype=object),
        launch=np.array([launch] * n, dtype=object), variant=np.array([""] * n, dtype=object),
        gpus=np.full(n, float(tp * ep * dp)), batch=batches.astype(float), input_tokens=np.full(n, float(n_in)),
        output_tokens=np.full(n, float(n_out)), fits=fits, **mem, memory_bytes=total,
        hbm_bytes=np.full(n, float(hw.allocatable_bytes)), ttft_s=priced(ttft), tpot_s=priced(tpot),
        latency_s=priced(latency), tokens_per_s=priced(batches * n_out / latency / tp),
        tokens_per_s_per_request=priced(n_out / latency),
        total_tokens_per_s=priced(batches * n_out / latency * ep * dp), why=why)


def _why(total: float, hw: Hardware, mem: dict) -> str:
    """"needs 154 GB of 80 GB: KV cache 137 GB": the total, what the GPU can allocate, the
    largest part."""
    names = {"weights_bytes": "weights", "kv_cache_bytes": "KV cache",
             "activation_bytes": "activations", "workspace_bytes": "workspace"}
    big = max(names, key=lambda k: mem[k])
    return (f"needs {format_bytes(total)} of {format_bytes(hw.allocatable_bytes)}: "
            f"{names[big]} {format_bytes(mem[big])}")


def best_under(table: ServeTable, max_tpot_s: float | None = None,
               max_ttft_s: float | None = None) -> ServeTable:
    """Per GPU, input and output: the fitting configuration with the most tokens/s whose TPOT
    and TTFT are within the limits (none where no configuration meets them)."""
    c = table.columns
    ok = c["fits"].astype(bool).copy()
    if max_tpot_s is not None:
        ok &= np.nan_to_num(c["tpot_s"], nan=np.inf) <= max_tpot_s
    if max_ttft_s is not None:
        ok &= np.nan_to_num(c["ttft_s"], nan=np.inf) <= max_ttft_s
    keys = list(zip(c["gpu"], c["schedule"], c["launch"], c["variant"], c["input_tokens"],
                    c["output_tokens"]))
    best: dict = {}
    for i in np.flatnonzero(ok):
        if keys[i] not in best or c["tokens_per_s"][i] > c["tokens_per_s"][best[keys[i]]]:
            best[keys[i]] = i
    return table.select(np.array(sorted(best.values()), dtype=int))


def parse_sizes(option: str, text: str) -> list[int]:
    """Sizes from a command line: "1,8,32", "1..256" (the powers of two from 1 to 256), "1k..32k"
    (k = 1024), or a mix ("1,3,8..64"). RooflabError in one line on anything else."""
    out: list[int] = []
    for item in (t.strip() for t in text.split(",")):
        lo, sep, hi = item.partition("..")
        try:
            a = _size(lo)
            b = _size(hi) if sep else a
        except ValueError:
            raise RooflabError(f"{option} {text!r}: '{item}' is not a size (write 8, 1k, or "
                               "1..256 for the powers of two between)") from None
        if a < 1 or b < a:
            raise RooflabError(f"{option} {text!r}: sizes must be positive and ranges go up, "
                               f"got '{item}'")
        v = a
        while v <= b:
            out.append(v)
            v *= 2
        if sep and out[-1] != b:
            out.append(b)
        if len(out) > 100_000:
            raise RooflabError(f"{option} {text!r}: more than 100,000 sizes")
    return sorted(set(out))


def _size(text: str) -> int:
    text = text.strip().lower()
    scale = 1024 if text.endswith("k") else 1
    return int(text[:-1] if scale > 1 else text) * scale


def sweep(source: str, gpus: list[str | Hardware], batches: list[int], inputs: list[int],
          outputs: list[int], schedules: list[str], launches: list[str], *,
          prefill_source: str | None = None, sets: dict[str, int | str] | None = None,
          variants: list[dict[str, int | str]] | None = None, kv: str = "growing",
          chunk: int | None = None, tp: int = 1, ep: int = 1, dp: int = 1,
          sp: bool = False) -> ServeTable:
    """`serve` over every variant (a dict of --set values: {"kv_dtype": "fp8_e4m3"}) x schedule
    x launch mode too: one table of all the configurations."""
    from rooflab.sweep_table import concat
    tables, largest = [], []
    for variant in variants or [{}]:
        steps = steps_of(source, prefill_source,
                         {**(sets or {}), **variant, **({"tp": tp} if tp > 1 else {}),
                          **({"ep": ep} if ep > 1 else {}), **({"sp": 1} if sp else {})})
        label = ",".join(f"{k}={v}" for k, v in variant.items())
        for s in schedules:
            t = serve(steps, gpus, batches, inputs, outputs, s, launches, kv=kv, chunk=chunk,
                      tp=tp, ep=ep, dp=dp, sp=sp)
            t.columns["variant"][:] = label
            tables.append(t)
            largest += [{**fit, "schedule": s, "variant": label}
                        for fit in t.meta["largest_batch"]]
    out = concat(tables)
    return ServeTable(out.columns, {**tables[0].meta, "schedule": ",".join(schedules),
                                    "launch": ",".join(launches), "largest_batch": largest})
