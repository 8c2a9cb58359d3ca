"""A recorded Trace as a rooflab Graph: every call through its rule in `aten_map.RULES`, each
emitted op checked against rooflab's own shape rule, and an `opaque` op (with a note) for a
call that has no rule or whose shapes the rule refuses."""

from __future__ import annotations

from collections import Counter

from rooflab import ops as oplib
from rooflab.dtypes import lookup
from rooflab.graph import Graph, Op, Tensor
from rooflab.trace.aten_map import DTYPES, RULES, Unmapped
from rooflab.trace.record import Call, Trace, TraceError


class Builder:
    """Turns calls into ops: names tensors (values) and ops, checks each op's shapes."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Op] = []
        self.op_names: Counter = Counter()
        self.notes: list[str] = []
        self.opaque: Counter = Counter()
        self.value_name: dict[int, str] = {}
        self.call: Call | None = None
        self.launches = 1

    # -- tensors -----------------------------------------------------------------------
    def name(self, v: int) -> str:
        """The tensor name of value `v`, declaring it on first use."""
        n = self.value_name.get(v)
        if n is None:
            val = self.trace.values[v]
            n = val.name or f"v{v}"
            self.value_name[v] = n
            dtype = _dtype(val.dtype)
            if dtype is None:
                where = f" ({self.call.target} in module {self.call.module or 'the top level'})" \
                    if self.call else ""
                raise TraceError(f"a torch.{val.dtype} tensor{where}: rooflab has no "
                                 f"{val.dtype} dtype to price it with (complex RoPE can be "
                                 "written with real cos and sin, as transformers does)")
            self.tensors[n] = Tensor(n, val.shape, dtype, val.strides)
        return n

    def value(self, v: int):
        return self.trace.values[v]

    def fresh(self, shape, dtype) -> str:
        """A new tensor for an intermediate a rule needs between two ops it emits."""
        n = f"t{len(self.tensors)}"
        while n in self.tensors:
            n += "_"
        self.tensors[n] = Tensor(n, tuple(shape), dtype)
        return n

    # -- ops ---------------------------------------------------------------------------
    def op(self, kind: str, inputs, outputs, launches: int | None = None, **attrs) -> None:
        """Emit one op over tensor names (ints are value numbers); its outputs' recorded
        shapes must be what rooflab's shape rule infers, else Unmapped."""
        ins = [self.name(t) if isinstance(t, int) else t for t in inputs]
        outs = [self.name(t) if isinstance(t, int) else t for t in outputs]
        rule = oplib.KINDS.get(kind)
        if rule is None:
            raise Unmapped(f"rooflab has no op kind '{kind}'")
        lo, hi = rule.arity
        if not lo <= len(ins) <= hi:
            raise Unmapped(f"{kind} takes {lo} to {hi} inputs, the call has {len(ins)}")
        probe = Op("probe", kind, tuple(ins), tuple(outs), attrs)
        try:
            got = rule.infer(probe, [self.tensors[t] for t in ins])
        except (oplib.ShapeError, ValueError, KeyError, TypeError) as e:
            raise Unmapped(f"{kind}: {e}") from None
        for out, (shape, dt) in zip(outs, got):
            t = self.tensors[out]
            if tuple(shape) != t.shape or dt.name != t.dtype.name:
                raise Unmapped(f"{kind} infers {list(shape)} {dt.name}, the trace has "
                               f"{list(t.shape)} {t.dtype.name}")
        if len(got) != len(outs):
            raise Unmapped(f"{kind} has {len(got)} outputs, the call {len(outs)}")
        self.pending.append((kind, tuple(ins), tuple(outs), attrs,
                             self.launches if launches is None else launches))

    def convert(self, call: Call) -> None:
        self.call = call
        self.pending: list = []
        key = _rule_key(call)
        rule = RULES.get(key)
        reason = f"no rule for ATen op {call.target}"
        if rule is not None:
            self.launches = rule.launches(call, self) if callable(rule.launches) else rule.launches
            try:
                rule.emit(call, self)
            except Unmapped as e:
                reason = f"{call.target}: {e}"
                self.pending = []
            else:
                self._commit(call, self.pending)
                return
        self._opaque(call, reason)

    def _commit(self, call: Call, pending) -> None:
        # every op a rule emits launches the rule's count of kernels, unless the rule says (views: 0)
        # an op's name is its module path, a dot, then its own name: a call that emits several
        # ops names them <call>_<kind>, so that no part of the path is taken for a module
        # (the eager host model charges each module entered)
        base = f"{call.module}.{call.packet}" if call.module else call.packet
        for j, (kind, ins, outs, attrs, launches) in enumerate(pending):
            name = base if len(pending) == 1 else f"{base}_{kind}"
            self.op_names[name] += 1
            if self.op_names[name] > 1:
                name = f"{name}_{self.op_names[name] - 1}"
            block = _block(call.module)
            self.ops.append(Op(name, kind, ins, outs, attrs, block, None, False,
                               0 if oplib.KINDS[kind].role is oplib.Role.VIEW else launches))

    def _opaque(self, call: Call, reason: str) -> None:
        ins = [self.name(v) for v in call.inputs]
        outs = [self.name(v) for v in call.outputs]
        nbytes = sum(self.tensors[t].nbytes for t in dict.fromkeys(ins + outs))
        flops = call.flops or 0
        fam = self.tensors[ins[0]].dtype.name if ins and flops else None
        attrs = {"flops": flops, "bytes": nbytes, "reason": reason}
        if fam in ("bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "int8"):
            attrs["tensor_dtype"] = "fp8" if fam.startswith("fp8") else fam
        self.opaque[call.target] += 1
        self.pending = [("opaque", tuple(ins[:16]), tuple(outs), attrs, 1)]
        self._commit(call, self.pending)

    def graph(self, name: str, description: str, params: dict[str, int]) -> Graph:
        for target, n in sorted(self.opaque.items()):
            self.notes.append(f"{n} × {target} traced as opaque (no rooflab kind): priced by its "
                              "tensors' bytes and torch's flop count")
        # eager PyTorch writes every output, read or not: unread tensors are outputs (as in a
        # workload file that declares no `outputs:`); state written in place and read later
        # (a KV cache) is written because a later kernel reads it. A view, or a copy into one,
        # names another tensor's bytes: it is not an output (its write always counts)
        read = {t for op in self.ops for t in op.inputs}
        dead = {t for op in self.ops for t in op.outputs if op.kind != "copy_into"
                and oplib.KINDS[op.kind].role is not oplib.Role.VIEW} - read
        outputs = frozenset({self.name(v) for v in self.trace.outputs} | dead)
        return Graph(name, dict(self.tensors), tuple(self.ops), outputs, dict(params), "",
                     description)


def _dtype(torch_name: str):
    """The rooflab dtype of a torch dtype's name, or None where rooflab has none (complex)."""
    return lookup(DTYPES.get(torch_name, ""))


def _rule_key(call: Call) -> str:
    p = call.packet
    return p[:-1] if p.endswith("_") and not p.startswith("_") else p


def _block(module: str) -> str:
    """The repeated block of a module path, its first item of a named module list:
    "model.layers.3.mlp" -> "model.layers.3"; "" outside any (and for the children of a
    top-level Sequential, "0", "1", which are rarely alike)."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.isdigit() and i > 0:
            return ".".join(parts[:i + 1])
    return ""


def convert(trace: Trace, name: str, description: str = "",
            params: dict[str, int] | None = None) -> tuple[Graph, tuple[str, ...]]:
    """The rooflab Graph of a Trace, and notes (ops traced as opaque, with counts)."""
    b = Builder(trace)
    for call in trace.calls:
        b.convert(call)
    g = b.graph(name, description, params or {})
    return g, tuple(b.notes)
