"""A traced step with its weights or its KV cache stored in a narrower dtype than the model
computes in: an FP8 checkpoint (DeepSeek-V3's), `--set weight_dtype=fp8` / `nvfp4`, or
`--set kv_dtype=fp8`, asked of any hf: model.

Which weights a low-precision checkpoint stores narrow (`stored_narrow`): the matrices of the
decoder layers' linear layers and expert stacks. The embedding, the lm_head, norms, biases and
the MoE router (`gate`, `router`) stay in the model's dtype, as FP8 checkpoints and serving
engines keep them (vLLM's FP8 layers skip the router and lm_head), and so do the modules a
checkpoint's `quantization_config` lists as not converted (`checkpoint_skipped`). The FP8
checkpoints priced as stored (`checkpoint_weight_dtype`): `quant_method` fp8 (DeepSeek-V3's
block-scaled e4m3), fbgemm_fp8 (Meta's Llama-3.1-405B FP8: per-channel weights, per-token
activations) and compressed-tensors whose weight groups are all 8-bit floats.

How a narrow weight is multiplied (`with_weight_dtype`): W8A8 / W4A4. The GEMM's activation is
quantized to the weight's dtype first (one `quantize` kernel per activation, shared by the
projections that read it: q/k/v, gate/up) and the GEMM runs on that dtype's tensor cores,
writing the model's dtype. The per-block scales of a weight (one fp32 per 128x128 block) and of an
activation (one per 128 values) are under 1/64 of the bytes they scale and are not counted;
nvfp4's and mxfp4's own block scales are part of the dtype. A GPU without tensor cores for the
dtype runs it as rooflab.lowering says (dequantized to 16 bits first: no speedup).

Weight-only int4 / int8 (AWQ, GPTQ: Marlin-style kernels that split K over the SMs) is not
offered: rooflab's own weight-only GEMM does not split K, so a decode step's skinny GEMMs would be
priced as filling a fraction of the SMs.

An fp8 KV cache (`with_kv_dtype`): the cache tensors (`kv_cache.*`) are stored in fp8, the new
keys and values are quantized before the step writes them in, and whatever reads the cache reads
one byte per element: the attention kernel dequantizes K and V in registers (rooflab.ops.
attention), a repeat_kv copy moves fp8 bytes. Per-tensor scales are not counted.
"""

from __future__ import annotations

import re
from dataclasses import replace

from rooflab.dtypes import DType, lookup
from rooflab.errors import RooflabError
from rooflab.graph import Graph, Op, Tensor
from rooflab.ops import KINDS, Role, view_regions, view_roots

WEIGHT_DTYPES = ("fp8_e4m3", "nvfp4", "mxfp4")
KV_DTYPES = ("fp8_e4m3", "fp8_e5m2")
_SIXTEEN_BITS = ("bf16", "fp16")
_GEMMS = ("matmul", "grouped_matmul")
_ROUTERS = ("gate", "router")      # an MoE block's router module names (not gate_proj)


def stored_narrow(param: str, ndim: int, skipped: tuple[str, ...] = ()) -> bool:
    """Whether a low-precision checkpoint stores parameter `param` (a named_parameters() name,
    of `ndim` dimensions) narrow: a 2-D or 3-D (expert stack) tensor of a decoder layer
    (`layers.N.`) that is not a router's, nor in a module of `skipped` (module paths, or
    `re:` patterns a module path matches whole, as compressed-tensors writes them)."""
    parts = param.split(".")
    if ndim < 2 or "layers" not in parts or any(r in parts for r in _ROUTERS):
        return False
    module = param.rpartition(".")[0]
    return not any(re.fullmatch(s[3:], module) if s.startswith("re:")
                   else module == s or module.startswith(s + ".") for s in skipped)


def checkpoint_weight_dtype(config: dict) -> str | None:
    """The dtype a config's `quantization_config` stores its layers' weights in, where rooflab
    prices it (the FP8 methods of the module docstring: fp8_e4m3); None for a config without
    one or another method (whose note says it is priced at the config's dtype)."""
    q = config.get("quantization_config")
    if not isinstance(q, dict):
        return None
    method = q.get("quant_method")
    if method == "fp8":
        return "fp8_e4m3" if str(q.get("fmt", "e4m3")) == "e4m3" else None
    if method == "fbgemm_fp8":
        return "fp8_e4m3"
    groups = q.get("config_groups")
    if method == "compressed-tensors" and isinstance(groups, dict) and groups and all(
            isinstance(g, dict) and isinstance(g.get("weights"), dict)
            and (g["weights"].get("type"), g["weights"].get("num_bits")) == ("float", 8)
            for g in groups.values()):
        return "fp8_e4m3"
    return None


def checkpoint_skipped(config: dict) -> tuple[str, ...]:
    """The modules a config's `quantization_config` keeps unquantized (fbgemm_fp8's
    `modules_to_not_convert`, compressed-tensors' `ignore`), as stored_narrow takes them."""
    q = config.get("quantization_config")
    listed = (q.get("modules_to_not_convert") or q.get("ignore") or []) \
        if isinstance(q, dict) else []
    return tuple(str(s) for s in listed) if isinstance(listed, list) else ()


def weight_dtype(given: str, file: str = "") -> DType:
    """The DType of a `--set weight_dtype=` value; RooflabError naming the ones priced."""
    d = lookup(str(given))
    if d is None or d.name not in WEIGHT_DTYPES + _SIXTEEN_BITS:
        hint = (" (weight-only int GEMMs are not priced: rooflab/trace/stored_dtypes.py)"
                if d is not None and not d.is_float else "")
        raise RooflabError(f"--set weight_dtype={given}: one of {', '.join(WEIGHT_DTYPES)}, or "
                           f"bf16 / fp16 for 16-bit weights{hint}", file=file or None)
    return d


def with_weight_dtype(graph: Graph, dtype: str, skipped: tuple[str, ...] = ()) -> Graph:
    """`graph` (a traced step) with the weights `stored_narrow` keeps stored as `dtype` (but
    those of the modules in `skipped`), their GEMMs rewritten as the module docstring says; the
    same graph when `dtype` is not narrower than the weights."""
    to = weight_dtype(dtype)
    root = view_roots(graph)
    made = graph.producers()
    narrow: set[str] = set()
    for op in graph.ops:
        if op.kind not in _GEMMS:
            continue
        w = root.get(op.inputs[1], op.inputs[1])
        t = graph.tensors[w]
        if (w not in made and t.dtype.is_float and t.dtype.bits > to.bits
                and stored_narrow(w, len(t.shape), skipped)):
            narrow.add(w)
    # a weight another op also reads (not through a view) keeps its dtype for that op
    for op in graph.ops:
        if KINDS[op.kind].role is not Role.VIEW:
            for j, t in enumerate(op.inputs):
                if not (op.kind in _GEMMS and j == 1):
                    narrow.discard(root.get(t, t))
    if not narrow:
        return graph
    tensors = dict(graph.tensors)
    for n in narrow:
        tensors[n] = _retyped(tensors[n], to)
    # projections of one activation read it through views of their own (each F.linear
    # reshapes it): one quantize serves every view of the same bytes in the same shape
    region = view_regions(graph)
    ops: list[Op] = []
    quantized: dict[tuple, str] = {}     # (root, region, shape) of an activation -> its copy
    for op in graph.ops:
        if op.kind not in _GEMMS or \
                root.get(op.inputs[1], op.inputs[1]) not in narrow:
            ops.append(_follow_dtypes(op, tensors, graph))
            continue
        x, w = op.inputs
        out_dtype = graph.tensors[op.outputs[0]].dtype.name
        key = (*region.get(x, (x, ())), tensors[x].shape)
        if key not in quantized:
            quantized[key] = f"{x}.{to.name}"
            tensors[quantized[key]] = Tensor(quantized[key], tensors[x].shape, to)
            ops.append(Op(f"{op.name}.quantize_input", "quantize", (x,), (quantized[key],),
                          {"dtype": to.name}, block=op.block))
        ops.append(replace(op, inputs=(quantized[key], w),
                           attrs={**op.attrs, "dtype": out_dtype}))
    return replace(graph, tensors=tensors, ops=tuple(ops))


def kv_dtype(given: str) -> DType:
    """The DType of a `--set kv_dtype=` value; RooflabError naming the ones priced."""
    d = lookup(str(given))
    if d is None or d.name not in KV_DTYPES + _SIXTEEN_BITS:
        raise RooflabError(f"--set kv_dtype={given}: one of {', '.join(KV_DTYPES)}, or bf16 / "
                           "fp16 for a 16-bit cache")
    return d


def with_kv_dtype(graph: Graph, dtype: str) -> Graph:
    """`graph` (a traced step) with its KV cache (the graph inputs named `kv_cache.*`) stored as
    `dtype`, as the module docstring says; the same graph when `dtype` is not narrower."""
    to = kv_dtype(dtype)
    made = graph.producers()
    cache = {n for n, t in graph.tensors.items() if n.startswith("kv_cache.") and n not in made
             and t.dtype.is_float and t.dtype.bits > to.bits}
    if not cache:
        return graph
    roots = view_roots(graph)
    tensors = dict(graph.tensors)
    for n in cache:
        tensors[n] = _retyped(tensors[n], to)
    ops: list[Op] = []
    for op in graph.ops:
        ins = op.inputs
        if KINDS[op.kind].role is Role.SCATTER and roots.get(ins[0], ins[0]) in cache:
            cache.update(op.outputs)             # the cache, updated in place
            # the new keys or values, quantized before the step writes them into the cache
            src = ins[-1]
            q = f"{src}.{to.name}"
            tensors[q] = _retyped(tensors[src], to, q)
            ops.append(Op(f"{op.name}.quantize_input", "quantize", (src,), (q,),
                          {"dtype": to.name}, block=op.block))
            op = replace(op, inputs=ins[:-1] + (q,))
        # views, copies and scatters of the cache are fp8; attention over it writes q's dtype
        ops.append(_follow_dtypes(op, tensors, graph))
    return replace(graph, tensors=tensors, ops=tuple(ops))


def _follow_dtypes(op: Op, tensors: dict[str, Tensor], graph: Graph) -> Op:
    """`op`, its outputs in `tensors` retyped to what its kind infers from its inputs there,
    where an input differs from `graph`'s (retyped or new)."""
    if any(tensors[t] is not graph.tensors.get(t) for t in op.inputs):
        inferred = KINDS[op.kind].infer(op, [tensors[t] for t in op.inputs])
        for name, (_, d) in zip(op.outputs, inferred):
            if d != tensors[name].dtype:
                tensors[name] = _retyped(tensors[name], d)
    return op


def _retyped(t: Tensor, dtype: DType, name: str | None = None) -> Tensor:
    return Tensor(name or t.name, t.shape, dtype, t.strides if name is None else None)
