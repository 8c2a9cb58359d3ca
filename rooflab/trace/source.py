"""Workload sources that are programs, not YAML: `hf:NAME_OR_CONFIG` and `py:FILE.py:FACTORY`.

Wherever a workload file is accepted, these are too. `hf:` traces a Hugging Face model (a
bundled name or a config.json path) for `phase` with `batch`, `seq`, `context` and
`logit_tokens` (prefill: how many trailing positions get logits; default 1) taken from `--set`;
`py:` imports FILE.py, calls FACTORY() under the meta device and traces the module it
returns on the `--input` tensors (`x=[16,4096]:bf16`; dimensions may be expressions over
`--set` values, `x=[batch,4096]:bf16`). A factory may also return (module, inputs). Traces are
cached for the process, so comparing several GPUs or schedules traces once, and hf: traces on
disk too (rooflab/trace/cache.py).
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from pathlib import Path

from rooflab.dtypes import lookup
from rooflab.errors import RooflabError
from rooflab.expr import ExprError, evaluate
from rooflab.graph import Graph
from rooflab.trace.record import first_line
from rooflab.trace.stored_dtypes import kv_dtype, weight_dtype, with_kv_dtype

PREFIXES = ("hf:", "py:")
_INPUT = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*\[([^\]]*)\]\s*(?::\s*(\w+))?\s*$")
# rooflab dtype name -> torch dtype attribute
_TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp64": "float64",
                 "int64": "int64", "int32": "int32", "int8": "int8", "bool": "bool",
                 "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}


def is_program(source: str) -> bool:
    """Whether `source` names a program to trace rather than a workload file."""
    return isinstance(source, str) and source.startswith(PREFIXES)


def as_program(source: str) -> str:
    """`source` with the py: prefix a FILE.py:FACTORY written without one lacks; a Python file
    named without its FACTORY is a RooflabError (YAML it is not)."""
    head = source.rpartition(":")[0] if ":" in source else source
    if is_program(source) or not head.endswith(".py"):
        return source
    if head == source:
        raise RooflabError(f"{source}: a Python file is traced as py:{source}:FACTORY, FACTORY "
                           "being the function in it that returns the module")
    return "py:" + source


def parse_input(spec: str, sets: dict[str, int]) -> tuple[str, tuple[int, ...], str]:
    """`name=[d0,d1,...]:dtype` (dtype default bf16) -> (name, shape, rooflab dtype name)."""
    m = _INPUT.match(spec)
    if not m:
        raise RooflabError(f"--input {spec!r}: expected name=[d0,d1,...]:dtype, like "
                           "x=[16,4096]:bf16")
    name, dims, dtype = m.group(1), m.group(2), m.group(3) or "bf16"
    shape = []
    for d in (d.strip() for d in dims.split(",") if d.strip()):
        try:
            v = evaluate(int(d) if d.isdigit() else d, sets)
        except ExprError as e:
            raise RooflabError(f"--input {spec!r}: dimension '{d}': {e}") from None
        if v < 1:
            raise RooflabError(f"--input {spec!r}: dimension '{d}' must be positive")
        shape.append(v)
    if lookup(dtype) is None or lookup(dtype).name not in _TORCH_DTYPES:
        raise RooflabError(f"--input {spec!r}: unknown dtype '{dtype}' (one of "
                           f"{', '.join(_TORCH_DTYPES)})")
    return name, tuple(shape), lookup(dtype).name


def load(source: str, sets: dict[str, int] | None = None, phase: str = "decode",
         inputs: tuple[str, ...] = ()) -> Graph:
    """The Graph of a program source (see the module docstring); RooflabError on bad input."""
    sets = dict(sets or {})
    if source.startswith("hf:"):
        if inputs:
            raise RooflabError("--input is for py: sources; an hf: model's inputs come from "
                               "--phase and --set batch/seq/context/logit_tokens")
        unknown = set(sets) - {"batch", "seq", "context", "logit_tokens", "tp", "ep", "sp",
                               "layers", "weight_dtype", "kv_dtype"}
        if unknown:
            raise RooflabError(f"--set {sorted(unknown)[0]}: an hf: model takes batch, seq, "
                               "context, logit_tokens, layers, weight_dtype, kv_dtype, tp and "
                               "ep (and sp, as --sp sets it)")
        # a size the phase's step does not read would be silently ignored
        unused = {"decode": ("seq", "a decode step reads one new token after context cached "
                             "ones; seq is for --phase prefill or extend"),
                  "prefill": ("context", "a prefill step caches its seq tokens; context is "
                              "for --phase decode or extend")}.get(phase)
        if unused and unused[0] in sets:
            raise RooflabError(f"--set {unused[0]}: {unused[1]}")
        for key in ("batch", "seq", "context", "logit_tokens", "layers"):
            if isinstance(sets.get(key), str):
                raise RooflabError(f"--set {key}={sets[key]}: expected a number of "
                                   f"{'layers' if key == 'layers' else 'tokens or sequences'}")
        if "weight_dtype" in sets:
            sets["weight_dtype"] = weight_dtype(sets["weight_dtype"]).name
        if "kv_dtype" in sets:
            sets["kv_dtype"] = kv_dtype(sets["kv_dtype"]).name
        for key in ("tp", "ep"):
            if key in sets and (not isinstance(sets[key], int) or sets[key] < 1):
                raise RooflabError(f"--{key} {sets[key]}: expected a positive number of GPUs")
        tp = sets.get("tp", 1)
        sp = sets.get("sp", 0)
        if sp not in (0, 1):
            raise RooflabError(f"--set sp={sp}: sequence parallelism is on (1) or off (0)")
        if sp and tp == 1:
            raise RooflabError("--sp: sequence parallelism splits the tensor-parallel group's "
                               "tokens; give --tp 2 or more")
        # expert and sequence parallelism reshape the traced graph; the trace does not change
        # expert and sequence parallelism reshape the traced graph, as the weights' and the
        # cache's dtypes retype it; the trace does not change
        traced = tuple(sorted((k, v) for k, v in sets.items()
                              if k not in ("ep", "sp", "weight_dtype", "kv_dtype")))
        graph = _traced_hf(source[3:], phase, traced, sets.get("weight_dtype"))
        if "kv_dtype" in sets:
            graph = with_kv_dtype(graph, sets["kv_dtype"])
        from rooflab.trace.sharding import expert_parallel, sequence_parallel, tensor_parallel
        graph = tensor_parallel(graph, tp)
        if sp:
            graph = sequence_parallel(graph, tp)
        return expert_parallel(graph, sets.get("ep", 1))
    path, factory = split_py(source)
    return _traced_py(str(path.resolve()), path.stat().st_mtime_ns, factory, tuple(inputs),
                      tuple(sorted(sets.items())))


@functools.lru_cache(maxsize=16)
def _traced_hf(name: str, phase: str, sets: tuple, weight_dtype: str | None) -> Graph:
    """The traced step, its weights stored as `weight_dtype` (None: as its checkpoint stores
    them, stored_dtypes.checkpoint_weight_dtype), with zoo's note on its quantization."""
    # zoo and cache need no torch: a cached trace loads without importing it
    from rooflab.trace import cache, zoo
    from rooflab.trace.hf import DEFAULTS, PHASES
    from rooflab.trace.stored_dtypes import (checkpoint_skipped, checkpoint_weight_dtype,
                                             with_weight_dtype)
    if phase not in PHASES:
        raise RooflabError(f"--phase must be one of {', '.join(PHASES)}, got '{phase}'")
    sizes = {**DEFAULTS, **dict(sets)}
    model, config, path = zoo.resolve_config(name)
    k = cache.key(path, phase, sizes)
    graph = cache.load(k)
    if graph is None:
        from rooflab.trace.hf import trace_hf
        graph = trace_hf(name, phase, **sizes)
        cache.store(k, graph)
    if weight_dtype:            # asked for: every layer's weights
        graph = with_weight_dtype(graph, weight_dtype)
    elif checkpoint_weight_dtype(config):
        graph = with_weight_dtype(graph, checkpoint_weight_dtype(config),
                                  checkpoint_skipped(config))
    note = zoo.quantization_note(model, config, weight_dtype)
    return graph.with_notes((note,)) if note else graph


def split_py(source: str) -> tuple[Path, str]:
    """(file, factory) of a `py:FILE.py:FACTORY` source; RooflabError when it is not one or
    the file is missing."""
    file, sep, factory = source[3:].rpartition(":")
    if not source.startswith("py:") or not sep or not file or not factory.isidentifier():
        raise RooflabError(f"{source}: expected py:FILE.py:FACTORY, like py:model.py:build")
    path = Path(file)
    if not path.is_file():
        raise RooflabError(f"{file}: no such file", file=None)
    return path, factory


def build_module(file: str, factory: str, device: str = "meta"):
    """Import FILE and call FACTORY() under `device` (meta: no memory, as tracing wants);
    returns (module, example inputs or None). RooflabError naming the file when it fails."""
    try:
        import torch
    except ImportError:
        raise RooflabError("a py: module needs torch: pip install 'rooflab[trace]'") from None
    spec = importlib.util.spec_from_file_location(Path(file).stem, file)
    if spec is None or spec.loader is None:
        raise RooflabError(f"{file}: not a Python file (a py: source names a .py file, "
                           "like py:mymodel.py:build)")
    mod = importlib.util.module_from_spec(spec)
    folder = str(Path(file).parent)
    sys.path.insert(0, folder)         # the module may import its neighbours
    step = "importing it"
    try:
        with torch.device(device):
            spec.loader.exec_module(mod)
            step = f"{factory}()"
            fn = getattr(mod, factory, None)
            if not callable(fn):
                found = sorted(n for n, v in vars(mod).items()
                               if callable(v) and not n.startswith("_") and
                               getattr(v, "__module__", None) == mod.__name__)
                raise RooflabError(f"{file}: no factory '{factory}'"
                                   + (f" (it defines: {', '.join(found)})" if found else ""))
            made = fn()
    except RooflabError:
        raise
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the user's module failing
        raise RooflabError(f"{file}: {step} failed: {type(e).__name__}: {first_line(e)}") \
            from None
    finally:
        sys.path.remove(folder)
    model, example = (made if isinstance(made, tuple) else (made, None))
    if not isinstance(model, torch.nn.Module):
        raise RooflabError(f"{file}: {factory}() returned {type(model).__name__}, not an "
                           "nn.Module (or a (module, inputs) pair)")
    return model, example


@functools.lru_cache(maxsize=16)
def _traced_py(file: str, _mtime: int, factory: str, inputs: tuple, sets: tuple) -> Graph:
    import torch
    from rooflab.trace.module import trace_module
    model, example = build_module(file, factory, "meta")
    given, names = [], []
    for item in inputs:
        name, shape, dtype = parse_input(item, dict(sets))
        try:
            given.append(torch.empty(shape, dtype=getattr(torch, _TORCH_DTYPES[dtype]),
                                     device="meta"))
        except RuntimeError as e:       # a shape whose size overflows torch's storage
            raise RooflabError(f"--input {item!r}: {str(e).splitlines()[0]}") from None
        names.append(name)
    if example is None and not given:
        raise RooflabError(f"{file}: give the forward's inputs with --input, like "
                           "--input \"x=[16,4096]:bf16\"")
    # --input tensors are the forward's positional arguments, in the order given
    args = tuple(given) or (tuple(example) if isinstance(example, (tuple, list)) else (example,))
    from rooflab.trace.record import TraceError
    try:
        return trace_module(model, args, name=f"{Path(file).stem}.{factory}",
                            input_names=names or None)
    except TraceError as e:
        raise RooflabError(f"{file}: {e}") from None
