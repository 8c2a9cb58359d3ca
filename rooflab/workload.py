"""Workload YAML -> core `Graph`: parameters, repeated blocks, name resolution, cycle check and
shape inference. Everything a user can get wrong here becomes a one-line RooflabError that
names the file, the YAML line and the op or tensor.

File layout (see docs/workloads.md):
    name: mlp
    params: {B: 8, S: 1024, D: 4096}          # integers or expressions; --set overrides
    tensors:                                   # inputs and weights; op outputs may be declared
      x: {shape: [B, S, D], dtype: bf16}       # too (then their inferred shape is checked)
    ops:
      - {kind: matmul, inputs: [x, w1], outputs: [h]}
      - repeat: layers                         # a block written once, run `layers` times
        name: layer
        carry: {x: x_next}                     # each iteration's x is the previous x_next
        tensors: {w: {shape: [D, D], dtype: bf16}}   # one per iteration (weights)
        ops: [...]
    outputs: [y]                               # optional; default: tensors nothing reads
"""

from __future__ import annotations

import keyword
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rooflab import bundled
from rooflab import ops as oplib
from rooflab.dtypes import known_names, lookup
from rooflab.errors import RooflabError
from rooflab.expr import MAX_VALUE, ExprError, check_magnitude, evaluate
from rooflab.graph import Graph, Op, Tensor
from rooflab.yamlio import Located, did_you_mean, format_loc, load_yaml, raise_first

WORKLOAD_DIR = bundled.WORKLOAD_DIR     # the bundled workloads (rooflab/bundled.py says where)

# Largest graph built: ops (and, apart, tensors) after every repeat is expanded. The count is
# worked out from the repeat counts before expanding, so `repeat: 1000000000` is refused at
# once instead of filling memory. predict takes about 10 s and 1 GB per 100,000 ops.
MAX_OPS = 1_000_000
# Largest tensor, in bytes.
MAX_TENSOR_BYTES = 2 ** 63


class _Strict(BaseModel):
    # strict: YAML's true/yes is not the integer 1, nor 2.0 the integer 2
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class TensorSpec(_Strict):
    shape: list[int | str]
    dtype: str


class OpSpec(BaseModel):
    """Common op fields; the op's attributes are the extra keys, checked per kind."""
    model_config = ConfigDict(extra="allow", frozen=True, strict=True)
    kind: str
    name: str | None = None
    inputs: list[str] = []
    outputs: list[str] = Field(min_length=1)
    data_dependent: bool = False
    # CUDA kernels it launches when run alone; 0: it runs in the kernel of the op it follows
    # (a library GEMM's bias epilogue)
    launches: int = Field(default=1, ge=0, le=64)


class RepeatSpec(_Strict):
    repeat: int | str
    name: str
    carry: dict[str, str] = {}
    tensors: dict[str, TensorSpec] = {}
    ops: list[dict[str, Any]]


class WorkloadFile(_Strict):
    name: str
    description: str = ""
    params: dict[str, int | str] = {}
    tensors: dict[str, TensorSpec] = {}
    ops: list[dict[str, Any]] = Field(min_length=1)
    outputs: list[str] = []


def resolve_params(declared: dict[str, int | str], overrides: dict[str, int],
                   doc: Located | None = None) -> dict[str, int]:
    """Parameter values in declaration order, `overrides` (from --set) replacing defaults."""
    for i, k in enumerate(declared):
        if not (isinstance(k, str) and k.isidentifier()) or keyword.iskeyword(k):
            raise _err(doc, f"parameter name '{k}' is not an identifier (letters, digits and _, "
                       "not starting with a digit), so no expression could use it", ("params", k))
    for k in overrides:
        if k not in declared:
            known = ", ".join(declared) or "none"
            raise RooflabError(f"--set {k}: unknown parameter '{k}'" + did_you_mean(k, declared)
                               + f"; this workload's parameters: {known}",
                               file=doc.file if doc else None)
    values: dict[str, int] = {}
    for k, raw in declared.items():
        if is_dtype_param(raw):
            if k in overrides and not isinstance(overrides[k], str):
                raise _err(doc, f"--set {k}={overrides[k]}: '{k}' is a dtype parameter "
                           f"(default {raw}); give a dtype name", ("params", k))
            continue
        if isinstance(overrides.get(k), str):
            raise _err(doc, f"--set {k}={overrides[k]}: '{k}' is an integer parameter, not a "
                       "dtype", ("params", k))
        try:
            v = (check_magnitude(overrides[k], f"--set {k}") if k in overrides
                 else evaluate(raw, values))
        except ExprError as e:
            raise _err(doc, str(e), ("params", k)) from None
        if v <= 0:
            raise _err(doc, f"parameter '{k}' must be positive, got {v}", ("params", k))
        values[k] = v
    return values


def is_dtype_param(raw: int | str) -> bool:
    """A parameter whose value is a dtype name (`kv_dtype: bf16`): tensors and `dtype`
    attributes may name it instead of a dtype, and --set may change it (--set kv_dtype=fp8)."""
    return isinstance(raw, str) and lookup(raw) is not None


def resolve_dtype_params(declared: dict[str, int | str],
                         overrides: dict[str, int | str]) -> dict[str, str]:
    """The dtype parameters (name -> dtype name), `overrides` replacing defaults."""
    return {k: lookup(str(overrides.get(k, raw))).name for k, raw in declared.items()
            if is_dtype_param(raw)}


def _err(doc: Located | None, problem: str, loc: tuple, place: str | None = None):
    if doc is None:
        return RooflabError(problem, place=place or format_loc(loc))
    return doc.error(problem, loc, place)


class _Builder:
    """Expands repeats, resolves names, sorts topologically and infers shapes."""

    def __init__(self, spec: WorkloadFile, doc: Located, params: dict[str, int],
                 dtypes: dict[str, str] | None = None):
        self.spec, self.doc, self.params = spec, doc, params
        self.dtypes = dtypes or {}       # dtype parameters: name -> dtype name
        self.declared: dict[str, tuple[TensorSpec, tuple]] = {}   # global name -> spec, loc
        self.raw_ops: list[tuple[OpSpec, tuple, dict[str, Any], str, tuple[str, ...], tuple[str, ...]]] = []
        self.produced: dict[str, int] = {}
        self.op_names: set[str] = set()
        self._parsed: dict[int, list] = {}
        self._lines: dict[tuple, int | None] = {}

    # -- expansion ---------------------------------------------------------------------
    def expand(self) -> None:
        self._check_size(self.spec.ops, ("ops",))
        top = {}
        for name, ts in self.spec.tensors.items():
            self.declared[name] = (ts, ("tensors", name))
            top[name] = name
        self._scope(self.spec.ops, ("ops",), top, prefix="", block="")

    def _scope(self, items, loc, outer: dict[str, str], prefix: str, block: str,
               local_tensors: dict[str, TensorSpec] | None = None, tensors_loc=()) -> dict[str, str]:
        """Expand one scope's ops; returns the scope's name map (local -> global)."""
        names = dict(outer)
        for name, ts in (local_tensors or {}).items():
            g = prefix + name
            self.declared[g] = (ts, tensors_loc + (name,))
            names[name] = g
        parsed = self._parsed.get(id(items))
        if parsed is None:
            parsed = self._parsed[id(items)] = self._parse_items(items, loc)
        # Outputs of this scope's ops are visible to every op of the scope (forward references
        # are allowed, so a cycle is reported as a cycle, not as an unknown name).
        for what, spec, iloc in parsed:
            if what == "op":
                for out in spec.outputs:
                    names[out] = prefix + out
        for what, spec, iloc in parsed:
            if what == "repeat":
                self._repeat(spec, iloc, names, prefix, block)
            else:
                self._op(spec, iloc, names, prefix, block)
        return names

    def _parse_items(self, items, loc) -> list:
        """Validate a scope's raw op mappings (once, however often a repeat runs them)."""
        parsed = []
        for i, item in enumerate(items):
            iloc = loc + (i,)
            if not isinstance(item, dict):
                raise _err(self.doc, "expected a mapping (an op or a repeat block)", iloc)
            if "repeat" in item:
                parsed.append(("repeat", self._validate(RepeatSpec, item, iloc), iloc))
            else:
                parsed.append(("op", self._validate_op(item, iloc), iloc))
        return parsed

    def _check_size(self, items, loc) -> tuple[int, int]:
        """(ops, tensors) that `items` expand to; RooflabError, at the repeat that crosses it,
        when either exceeds MAX_OPS. Nothing is expanded to find out."""
        parsed = self._parsed.get(id(items))
        if parsed is None:
            parsed = self._parsed[id(items)] = self._parse_items(items, loc)
        ops = tensors = 0
        for what, spec, iloc in parsed:
            if what == "op":
                ops += 1
                continue
            count = self._repeat_count(spec, iloc)
            inner_ops, inner_tensors = self._check_size(spec.ops, iloc + ("ops",))
            ops += count * inner_ops
            tensors += count * (inner_tensors + len(spec.tensors))
            if ops > MAX_OPS or tensors > MAX_OPS:
                raise _err(self.doc, f"the workload would expand to more than {MAX_OPS:,} "
                           f"{'ops' if ops > MAX_OPS else 'tensors'} ({count:,} repeats of "
                           f"{inner_ops:,} ops here)", iloc + ("repeat",))
        return ops, tensors

    def _repeat_count(self, spec: RepeatSpec, loc) -> int:
        try:
            count = evaluate(spec.repeat, self.params)
        except ExprError as e:
            raise _err(self.doc, str(e), loc + ("repeat",)) from None
        if count <= 0:
            raise _err(self.doc, f"repeat count must be positive, got {count}", loc + ("repeat",))
        return count

    def _repeat(self, spec: RepeatSpec, loc, names: dict[str, str], prefix: str, block: str):
        count = self._repeat_count(spec, loc)
        for outer_name in spec.carry:
            if outer_name not in names:
                raise _err(self.doc, f"carry names '{outer_name}', which is not a tensor outside "
                           "the block" + did_you_mean(outer_name, names), loc + ("carry",))
        current = dict(names)
        for it in range(count):
            iprefix = f"{prefix}{spec.name}[{it}]."
            iblock = f"{block}{spec.name}[{it}]" if not block else f"{block}.{spec.name}[{it}]"
            inner = self._scope(spec.ops, loc + ("ops",), current, iprefix, iblock,
                                spec.tensors, loc + ("tensors",))
            current = dict(names)
            for outer_name, inner_name in spec.carry.items():
                if inner_name not in inner or inner[inner_name] == names.get(inner_name):
                    raise _err(self.doc, f"carry: '{inner_name}' is not produced inside the "
                               "block" + did_you_mean(inner_name, inner), loc + ("carry",))
                current[outer_name] = inner[inner_name]
        names.update({k: current[k] for k in spec.carry})

    def _validate(self, model, item, loc):
        try:
            return model.model_validate(item)
        except ValidationError as err:
            raise_first(err, self.doc, prefix=loc)

    def _validate_op(self, item, loc) -> OpSpec:
        kind = item.get("kind")
        if kind is None:
            raise _err(self.doc, "op has no `kind`", loc)
        if not isinstance(kind, str) or kind not in oplib.KINDS:
            raise _err(self.doc, f"unknown op kind '{kind}'" + did_you_mean(str(kind), oplib.KINDS),
                       loc + ("kind",))
        spec = self._validate(OpSpec, item, loc)
        allowed = oplib.KINDS[kind].attrs
        for key in spec.model_extra or {}:
            if key not in allowed:
                raise _err(self.doc, f"{kind} op has no attribute '{key}'"
                           + (f" (it takes: {', '.join(sorted(allowed))})" if allowed else ""),
                           loc + (key,))
        for key, attr in allowed.items():
            if attr.required and key not in (spec.model_extra or {}):
                raise _err(self.doc, f"{kind} needs `{key}:` ({attr.doc})", loc)
        return spec

    def _op(self, spec: OpSpec, loc, names: dict[str, str], prefix: str, block: str):
        base = spec.name or f"{spec.kind}_{len(self.raw_ops)}"
        name = f"{block}.{base}" if block else base
        if name in self.op_names:
            raise _err(self.doc, f"duplicate op name '{name}'", loc + ("name",))
        self.op_names.add(name)
        ins = []
        for j, t in enumerate(spec.inputs):
            if t not in names:
                raise _err(self.doc, f"unknown tensor '{t}'" + did_you_mean(t, names),
                           loc + ("inputs", j), place=f"op {name}")
            ins.append(names[t])
        outs = tuple(prefix + t for t in spec.outputs)
        for j, g in enumerate(outs):
            if g in self.produced:
                other = self.raw_ops[self.produced[g]][3]
                raise _err(self.doc, f"tensor '{spec.outputs[j]}' is already written by op "
                           f"{other}; each tensor has one producer", loc + ("outputs", j),
                           place=f"op {name}")
            self.produced[g] = len(self.raw_ops)
        attrs = {}
        for key, val in (spec.model_extra or {}).items():
            attrs[key] = self._attr(spec.kind, key, val, loc + (key,), name)
        self.raw_ops.append((spec, loc, attrs, name, tuple(ins), outs, block))

    def _attr(self, kind, key, val, loc, op_name):
        """An attribute's value, type-checked by its kind's schema (expressions evaluated)."""
        if isinstance(val, str) and val in self.dtypes:
            val = self.dtypes[val]
        try:
            return oplib.KINDS[kind].attrs[key].check(key, val, lambda v: evaluate(v, self.params))
        except (ExprError, oplib.AttrError) as e:
            raise _err(self.doc, str(e), loc, place=f"op {op_name}") from None

    # -- ordering and shapes ----------------------------------------------------------
    def build(self) -> Graph:
        self.expand()
        order = self._toposort()
        tensors: dict[str, Tensor] = {}
        for g, (ts, loc) in self.declared.items():
            if g not in self.produced:
                tensors[g] = self._tensor(g, ts, loc)
        ops = []
        infer_cache: dict[tuple, list] = {}
        for idx in order:
            spec, loc, attrs, name, ins, outs, block = self.raw_ops[idx]
            rule = oplib.KINDS[spec.kind]
            lo, hi = rule.arity
            if not lo <= len(ins) <= hi:
                want = str(lo) if lo == hi else f"{lo} to {hi}"
                raise _err(self.doc, f"{spec.kind} takes {want} inputs, got {len(ins)}",
                           loc + ("inputs",), place=f"op {name}")
            line = self._lines.get(loc, -1)
            if line == -1:
                line = self._lines[loc] = self.doc.line_of(loc)
            op = Op(name, spec.kind, ins, outs, attrs, block, line, spec.data_dependent,
                    spec.launches)
            in_t = [tensors[t] for t in ins]
            if spec.kind == "opaque":
                inferred = None
            else:
                # the same op of every repeat iteration infers the same shapes: do it once
                key = (loc, *[(t.shape, t.dtype.name) for t in in_t])
                inferred = infer_cache.get(key)
                if inferred is None:
                    try:
                        inferred = infer_cache[key] = rule.infer(op, in_t)
                    except oplib.ShapeError as e:
                        raise _err(self.doc, str(e), loc, place=f"op {name}") from None
                if len(inferred) != len(outs):
                    raise _err(self.doc, f"{spec.kind} has {len(inferred)} output(s), "
                               f"got {len(outs)}", loc + ("outputs",), place=f"op {name}")
            for j, g in enumerate(outs):
                if g in self.declared:
                    ts, tloc = self.declared[g]
                    t = self._tensor(g, ts, tloc)
                    if inferred and (t.shape, t.dtype) != inferred[j]:
                        shp, dt = inferred[j]
                        raise _err(self.doc, f"output '{g}' is declared {list(t.shape)} "
                                   f"{t.dtype.name} but the op makes {list(shp)} {dt.name}",
                                   loc, place=f"op {name}")
                elif inferred is None:
                    raise _err(self.doc, f"opaque op output '{g}' must be declared in `tensors:`",
                               loc + ("outputs", j), place=f"op {name}")
                else:
                    shp, dt = inferred[j]
                    t = Tensor(g, shp, dt)
                tensors[g] = t
            ops.append(op)
        outputs = self._outputs(tensors, ops)
        return Graph(self.spec.name, tensors, tuple(ops), outputs, self.params, self.doc.file,
                     self.spec.description)

    def _tensor(self, g: str, ts: TensorSpec, loc) -> Tensor:
        dt = lookup(self.dtypes.get(ts.dtype, ts.dtype))
        if dt is None:
            raise _err(self.doc, f"unknown dtype '{ts.dtype}'" + did_you_mean(ts.dtype, known_names()),
                       loc + ("dtype",), place=f"tensor {g}")
        shape = []
        for j, d in enumerate(ts.shape):
            try:
                v = evaluate(d, self.params)
            except ExprError as e:
                raise _err(self.doc, str(e), loc + ("shape", j), place=f"tensor {g}") from None
            if v <= 0:
                given = "" if str(d) == str(v) else f" ({d})"     # the expression, if one
                raise _err(self.doc, f"dimension {j} is {v}{given}; dimensions must be positive",
                           loc + ("shape", j), place=f"tensor {g}")
            shape.append(v)
        numel = 1
        for v in shape:
            numel *= v
        if dt.nbytes(numel) > MAX_TENSOR_BYTES:
            raise _err(self.doc, f"shape {shape} {dt.name} is {dt.nbytes(numel):.3g} bytes; a "
                       "tensor may have at most 2**63 bytes", loc + ("shape",),
                       place=f"tensor {g}")
        return Tensor(g, tuple(shape), dt)

    def _toposort(self) -> list[int]:
        n = len(self.raw_ops)
        deps = [[self.produced[t] for t in r[4] if t in self.produced] for r in self.raw_ops]
        users: list[list[int]] = [[] for _ in range(n)]
        indeg = [0] * n
        for i, ds in enumerate(deps):
            for d in ds:
                users[d].append(i)
                indeg[i] += 1
        # Kahn's algorithm, preferring the written order so schedules read like the file.
        import heapq
        ready = [i for i in range(n) if indeg[i] == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            i = heapq.heappop(ready)
            order.append(i)
            for u in users[i]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    heapq.heappush(ready, u)
        if len(order) < n:
            stuck = [i for i in range(n) if indeg[i] > 0]
            cycle = self._find_cycle(stuck, deps)
            names = " -> ".join(self.raw_ops[i][3] for i in cycle)
            raise _err(self.doc, f"the ops form a cycle: {names}", self.raw_ops[cycle[0]][1],
                       place=f"op {self.raw_ops[cycle[0]][3]}")
        return order

    @staticmethod
    def _find_cycle(stuck: list[int], deps: list[list[int]]) -> list[int]:
        stuck_set = set(stuck)
        node, seen = stuck[0], []
        while node not in seen:
            seen.append(node)
            node = next(d for d in deps[node] if d in stuck_set)
        cyc = seen[seen.index(node):]
        return list(reversed(cyc)) + [cyc[-1]]

    def _outputs(self, tensors, ops) -> frozenset[str]:
        if self.spec.outputs:
            outs = set()
            for j, t in enumerate(self.spec.outputs):
                if t not in tensors:
                    raise _err(self.doc, f"unknown tensor '{t}'" + did_you_mean(t, tensors),
                               ("outputs", j))
                outs.add(t)
            return frozenset(outs)
        read = {t for op in ops for t in op.inputs}
        return frozenset(t for op in ops for t in op.outputs if t not in read)


def load_file(path: str | Path, overrides: dict[str, int] | None = None) -> Graph:
    """Parse, expand and shape-check a workload file; RooflabError on any problem."""
    doc = load_yaml(path, "workload")
    try:
        spec = WorkloadFile.model_validate(doc.data)
    except ValidationError as err:
        raise_first(err, doc)
    return _build(spec, doc, overrides or {})


def _build(spec: WorkloadFile, doc: Located, overrides: dict[str, int]) -> Graph:
    """The Graph of a validated file at `overrides`; a problem the overrides brought about
    (a --set kv_dtype no kernel reads) names them beside the line it shows up on."""
    params = resolve_params(spec.params, overrides, doc)
    try:
        return _Builder(spec, doc, params, resolve_dtype_params(spec.params, overrides)).build()
    except RooflabError as err:
        if not overrides or err.file is None:
            raise
        given = ", ".join(f"{k}={v}" for k, v in overrides.items())
        raise RooflabError(f"{err.problem} (with --set {given})", file=err.file, line=err.line,
                           place=err.place) from None


def load_yaml_data(name_or_path: str) -> dict:
    """The raw mapping of a workload file (bundled name or path), for re-running it elsewhere."""
    return load_yaml(bundled.workload_file(name_or_path), "workload").data


def load_dict(data: dict, overrides: dict[str, int] | None = None,
              source: str = "<dict>") -> Graph:
    """Build a workload from an already-parsed mapping (the YAML file's structure)."""
    doc = Located(data, None, source)
    try:
        spec = WorkloadFile.model_validate(data)
    except ValidationError as err:
        raise_first(err, doc)
    return _build(spec, doc, overrides or {})


def load(name_or_path: str, overrides: dict[str, int] | None = None) -> Graph:
    """A workload by path, or by the stem of a bundled file in workloads/."""
    return load_file(bundled.workload_file(name_or_path), overrides)


def parse_sets(items: list[str]) -> dict[str, int]:
    """`--set name=value` strings to a dict; RooflabError on a malformed one."""
    out = {}
    for item in items:
        key, sep, val = item.partition("=")
        key, val = key.strip(), val.strip()
        shown = item if len(item) <= 60 else item[:40] + f"… ({len(item)} characters)"
        if not sep or not key:
            raise RooflabError(f"--set {shown}: expected name=value")
        if key in out:
            raise RooflabError(f"--set {key}: given twice")
        if lookup(val) is not None:          # a dtype: for a workload's dtype parameter
            out[key] = lookup(val).name
            continue
        # 1k = 1024, as serve's --batch and --input read sizes
        scale = 1024 if val[-1:] in ("k", "K") else 1
        number = val[:-1] if scale > 1 else val
        # 19 digits bound 2**63; refusing longer text first keeps int() off 5,000-digit input
        digits = number.lstrip("+-").replace("_", "")
        if len(digits) > 19 or not digits.isdigit():
            if digits.isdigit():
                raise RooflabError(f"--set {shown}: value exceeds 2**63")
            raise RooflabError(f"--set {shown}: value must be an integer (1k = 1024) or a dtype "
                               "name" + did_you_mean(val, known_names())
                               + f" ({', '.join(known_names())})")
        try:
            out[key] = int(number) * scale
        except ValueError:
            raise RooflabError(f"--set {shown}: value must be an integer") from None
        if out[key] <= 0:
            # transformers' logits_to_keep=0 means all; a workload's count cannot be 0
            hint = ("; to keep every position's logits give the prompt length or more "
                    "(--set logit_tokens=SEQ)" if key == "logit_tokens" else "")
            raise RooflabError(f"--set {shown}: value must be positive{hint}")
        if out[key] > MAX_VALUE:
            raise RooflabError(f"--set {shown}: value exceeds 2**63")
    return out
