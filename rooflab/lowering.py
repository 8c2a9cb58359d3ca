"""Hardware-dependent rewrites done before scheduling: dtype fallbacks.

A dtype with no tensor-core GEMM path on the chosen GPU is never priced at a peak the GPU lacks.
A GEMM-like op (matmul, qmatmul, attention) whose dtype family has no path is rewritten as
`dequantize` of its low-precision inputs to the fallback dtype (bf16, else fp16) followed by the
op at that dtype; the dequantize ops are marked `fallback` so no policy fuses them into the GEMM
(there is no such kernel), and a note says what happened. An int4/int8 weight-only qmatmul on a
GPU without a fused dequant-in-GEMM kernel is rewritten the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rooflab import ops as oplib
from rooflab.dtypes import lookup
from rooflab.errors import RooflabError
from rooflab.graph import Graph, Op, Tensor, folded_name
from rooflab.hardware import Hardware


@dataclass(frozen=True, slots=True)
class Lowered:
    graph: Graph
    notes: tuple[str, ...]


def _family(op: Op, tensors: dict[str, Tensor]) -> str | None:
    a, b = tensors[op.inputs[0]].dtype, tensors[op.inputs[1]].dtype
    if op.kind == "qmatmul":
        return oplib.qmatmul_family(a, b)
    if op.kind == "attention":
        return oplib.attention_family(*(tensors[t] for t in op.inputs[:3]), op)
    return oplib.gemm_family(a, b, op)


def _fallback_dtype(hw: Hardware) -> str | None:
    for fam in ("bf16", "fp16"):
        if hw.has_gemm_path(fam):
            return fam
    return None


def lower(graph: Graph, hw: Hardware) -> Lowered:
    """Rewrite ops the GPU has no kernel for; returns the new graph and one note per rewrite."""
    new_ops: list[Op] = []
    tensors = dict(graph.tensors)
    notes: list[str] = []
    for op in graph.ops:
        if oplib.role(op.kind) not in (oplib.Role.GEMM, oplib.Role.ATTENTION):
            new_ops.append(op)
            continue
        fam = _family(op, graph.tensors)
        w = graph.tensors[op.inputs[1]].dtype
        weight_only = op.kind == "qmatmul" and not w.is_float
        if fam is None or (hw.has_gemm_path(fam) and (not weight_only
                                                       or w.name in hw.weight_only_gemm)):
            new_ops.append(op)
            continue
        if fam == "tf32":           # no tf32 tensor cores (CDNA4): fp32 on the vector units
            attrs = {k: v for k, v in op.attrs.items() if k != "tf32"}
            new_ops.append(replace(op, attrs=attrs))
            notes.append(f"{op.name}: {hw.name} has no tf32 tensor-core GEMM; priced as fp32 "
                         "on the vector units")
            continue
        target = graph.tensors[op.inputs[0]].dtype.name if weight_only else _fallback_dtype(hw)
        if target is None:
            raise RooflabError(f"{hw.name} has no {fam} GEMM path and no bf16/fp16 fallback",
                               place=f"op {op.name}")
        tgt = lookup(target)
        ins = []
        for t in op.inputs:
            src = tensors[t]
            if src.dtype.bits >= 16 and src.dtype.is_float:
                ins.append(t)
                continue
            name = f"{t}@{target}"
            if name not in tensors:
                tensors[name] = Tensor(name, src.shape, tgt)
                new_ops.append(Op(f"{op.name}.dequant_{t.rsplit('.', 1)[-1]}", "dequantize",
                                  (t,), (name,), {"dtype": target, "fallback": True},
                                  op.block, op.line))
            ins.append(name)
        attrs = {k: v for k, v in op.attrs.items() if k != "group_size"}
        kind = "matmul" if op.kind == "qmatmul" else op.kind
        new_ops.append(replace(op, kind=kind, inputs=tuple(ins), attrs=attrs))
        why = (f"no fused {w.name} dequant-in-GEMM kernel" if weight_only
               else f"no {fam} tensor-core GEMM path")
        notes.append(f"{op.name}: {hw.name} has {why}; priced as dequantize to {target} "
                     f"(written to HBM), then a {target} {kind}")
    if not notes:
        return Lowered(graph, ())
    return Lowered(replace(graph, tensors=tensors, ops=tuple(new_ops)), _dedupe(notes))


def _dedupe(notes: list[str]) -> tuple[str, ...]:
    """Collapse notes that differ only in the repeated block (`layer[3].x` -> one line)."""
    seen: dict[str, int] = {}
    for n in notes:
        key = folded_name(n)
        seen[key] = seen.get(key, 0) + 1
    return tuple(k + (f" (x{c})" if c > 1 else "") for k, c in seen.items())
