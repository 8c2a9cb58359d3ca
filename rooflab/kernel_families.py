"""Which library kernel runs an op when eager PyTorch runs it, and the families those kernels
fall into.

An op of a workload graph is one ATen call when PyTorch runs it eagerly; ATen's kernels for a
family of calls (contiguous elementwise, broadcasting elementwise, row reductions, softmax, ...)
share their code and their achieved bandwidth. rooflab's own Triton kernels reach copy bandwidth
on large tensors; ATen's softmax and norms do not (about 1 and 2.5 TB/s on the H200 where a
copy runs at 4.3). So a kernel is priced for the implementation that runs it:

    `rooflab`  rooflab's generated kernels (the Triton validation suite): the spec's copy curve
    `aten`     eager PyTorch's ATen kernels: the family's curve from the spec's
               `kernel_families` (measured by calibration), else the copy curve (noted)
    `inductor` torch.compile's: its extern calls (a cuBLAS GEMM, SDPA, a library op or a
               collective: EXTERN_ROLES) run ATen's kernels and are priced as `aten`; the
               Triton kernels it generates are priced as `rooflab`'s
    `rooflab+library`  a fusing schedule's: `rooflab`'s kernels, but a GEMM that fuses
               nothing (one call) stays the cuBLAS call eager PyTorch makes, priced as `aten`,
               so a GEMM changes price only where a fusion changes it

`eager_family(op, ins, outs, roots)` names the family of a one-op kernel (None where no
family's curve prices the op: attention, collectives, views). A 16-bit GEMM's family,
GEMM_FAMILY, is priced by a FLOP curve besides its byte curve. FAMILIES documents
each family; a spec's `kernel_families` curves are keyed by these names. Where ATen picks a
kernel by shape (a softmax's row length, index_select's index count) each kernel is a family.
`attention_backend(op, ins)` names the SDPA backend of an attention op (ATTENTION_BACKENDS),
priced at the spec's efficiency for it.
"""

from __future__ import annotations

from math import prod

import numpy as np

from rooflab.graph import Graph, Op, Tensor
from rooflab.ops import KINDS, Role

IMPLEMENTATIONS = ("rooflab", "aten", "inductor", "rooflab+library")

# The kernels torch.compile does not generate but calls through ATen (Inductor's extern kernels)
EXTERN_ROLES = (Role.GEMM, Role.ATTENTION, Role.OPAQUE, Role.COLLECTIVE)


def one_call(graph: Graph, ops: tuple[int, ...]) -> bool:
    """Whether a kernel of `graph`'s `ops` is one call: one op, and any that launch none of
    their own (addmm's bias in the GEMM's epilogue)."""
    return not any(graph.ops[i].launches for i in ops[1:])


def extern_call(graph: Graph, ops: tuple[int, ...], anchor: Role) -> bool:
    """Whether the kernel of `graph`'s `ops` built around `anchor` is a library call
    (EXTERN_ROLES), not generated code: a GEMM with an op fused in that launches its own is a
    generated GEMM template (rooflab's, or Inductor's under max-autotune)."""
    if anchor not in EXTERN_ROLES:
        return False
    return anchor is not Role.GEMM or one_call(graph, ops)


def priced_as(kernels: str, kernel, graph: Graph) -> str:
    """The implementation ("rooflab" or "aten") whose prices `kernel` (a schedule.Kernel of
    `graph`) takes when `kernels` (IMPLEMENTATIONS) runs the schedule."""
    if kernels == "inductor":
        return "aten" if kernel.anchor in EXTERN_ROLES else "rooflab"
    if kernels == "rooflab+library":
        # its attention is its own FlashAttention kernel, reading shared KV heads in place
        library = kernel.anchor is Role.GEMM and one_call(graph, kernel.ops)
        return "aten" if library else "rooflab"
    return kernels

FAMILIES: dict[str, str] = {
    "elementwise": "pointwise op on same-shaped contiguous tensors (add, mul, copy)",
    "elementwise_transcendental": "a one-input pointwise op computing a transcendental per "
                                  "element (silu, gelu, exp, sigmoid, tanh, rsqrt): its fp32 "
                                  "math, not its bytes, bounds it at L2-resident sizes",
    "cast": "a dtype conversion (x.float(), x.to(torch.bfloat16)): ATen's is not vectorised as add's",
    "elementwise_broadcast": "pointwise op ATen cannot vectorise, its kernel indexing each "
                             "operand through its strides: an input broadcasts (x[T, D] + b[D], "
                             "x * s[T, 1]), or an operand is not dense or not laid out like the "
                             "others (a slice, a transposed view: strides.vectorised)",
    "copy_broadcast": "a copy out of an expanded view (transformers' repeat_kv: the KV heads "
                      "written out once per query head)",
    "reduce_row": "sum / mean / max over the last axis",
    "reduce_column": "sum / mean / max over an axis that is not the last",
    "reduce_all": "a reduction to one value (x.sum() of a tensor): ATen splits it over the grid",
    "softmax_warp": "softmax over rows of at most 2048: ATen's softmax_warp_forward, a warp per row",
    "softmax": "softmax over rows of 2049 to 6144: ATen's cunn_SoftMaxForwardReg, a row in "
               "a block's registers, at most 6 per thread",
    "softmax_wide_row": "softmax over rows of 6145 to 9216: cunn_SoftMaxForwardReg with 7 to 9 "
                        "registers of the row per thread (on the H100, rows of 7168 to 9216 "
                        "take 4.0 to 4.5 ns per element where rows of 4096 to 6144 take 3.2 "
                        "to 3.5)",
    "softmax_long_row": "softmax over rows longer than 9216 (a vocabulary): ATen's "
                        "cunn_SoftMaxForward and its shared-memory variant",
    "layer_norm": "layer_norm over the last axis",
    "rms_norm": "rms_norm over the last axis",
    "embedding": "rows gathered by index (embedding, index_select, gather)",
    "embedding_small_index": "at most 16 rows gathered by embedding or index_select: ATen's "
                             "indexSelectSmallIndex, each thread looping over the indices",
    "index_copy": "rows written by index into an existing tensor (index_copy_, KV-cache writes)",
    "foreach_copy": "torch._foreach_copy_ of tensors sharing a dtype: ATen's multi_tensor_apply "
                    "kernel, each block copying 64 Ki-element chunks (the copy torch.compile's "
                    "reduce-overhead runs each call to bring its inputs into its CUDA graph)",
    "cat": "torch.cat of row-major tensors along an axis",
    "cat_strided": "torch.cat where an input is not row-major (rotary embedding's cat of a "
                   "negated half with a sliced half): ATen's CatArrayBatchedCopy indexing "
                   "every element through its strides",
    "grouped_mm": "a 16-bit grouped expert GEMM (torch._grouped_mm, transformers' MoE experts): "
                  "ATen's CUTLASS grouped kernel and the kernel that prepares its problem list, "
                  "priced by its bytes (the weights of the experts that get a row)",
    "gemm_cublas": "a 16-bit GEMM as ATen calls cuBLAS / cuBLASLt (mm, bmm, linear; addmm's "
                   "bias in its epilogue; a split-K GEMM's reduce kernel): priced by a time curve "
                   "in its FLOPs (`gflop_points`) and one in its bytes (`points`), each adding "
                   "`overlap` of the other; without them, by the tile model",
}

# The family of ATen's cuBLAS GEMMs: its spec entry carries a FLOP curve beside the byte curve
GEMM_FAMILY = "gemm_cublas"
_CUBLAS_DTYPES = ("bf16", "fp16")

# ATen's kernel choices by shape (aten/src/ATen/native/cuda/SoftMax.cu, Indexing.cu): a softmax
# row of at most 2048 goes to the warp kernel; above it the block kernel (1024 threads) holds
# the row in registers while ceil(row / 1024) < 10, a template instance per count; index_select
# takes its small-index kernel for at most 16 indices. The profiler's kernel names in the torch
# suite's runs show each choice. The register kernel's instances run at one rate per element
# up to 6 registers of the row a thread and a slower one from 7 (a shape study on the H100:
# lab/leases/h100-2026-12-06-study), so they are two families.
SOFTMAX_WARP_MAX_ROW = 2048
SOFTMAX_REG_FAST_MAX_ROW = 6144
SOFTMAX_REG_MAX_ROW = 9216
SMALL_INDEX_MAX = 16

# Row kernels: a block (or warp) reduces each row serially, so however few the rows a kernel
# takes at least one row's time, which grows with the row's bytes (a row sum over 16 rows of
# 4096 bf16 takes 4.9 µs, over 2048 rows 5.6 µs). Their spec curves carry that floor
# (`row_floor`, against the row's bytes in its storage dtype).
ROW_FAMILIES = ("reduce_row", "softmax_warp", "softmax", "softmax_wide_row", "softmax_long_row",
                "layer_norm", "rms_norm")


def floor_at(pts, row):
    """A row kernel's floor at rows `row` long (a number or an array), from its measured
    [(row length, time), ...] (row lengths increasing, in any one unit): interpolated
    linearly, flat below the shortest row, growing in proportion beyond the longest."""
    rb, ts = np.array([b for b, _ in pts], dtype=float), np.array([t for _, t in pts])
    inside = np.interp(row, rb, ts)
    beyond = ts[-1] * np.asarray(row, dtype=float) / rb[-1]
    out = np.where(np.asarray(row) > rb[-1], beyond, inside)
    return out if isinstance(row, np.ndarray) else float(out)


# Row gathers (embedding, index_select) pay a fixed cost per index besides their bytes: 8192
# rows of 512 B take 6.3 µs on the H200 where 512 rows of 8 KB, the same bytes, take 2.8. Their
# spec curves carry it (`per_index_ns`); the curve then holds the rest of the time.
PER_INDEX_FAMILIES = ("embedding",)
_ROW_GATHERS = ("embedding", "index_select")

# Families whose time follows the elements they touch, not their bytes: ATen's block softmax
# computes in fp32 whatever the storage dtype (a 4096² softmax takes 55 µs in bf16 and 56 µs in
# fp32). Their curves are read at, and fitted on, these bytes per element read or written.
CURVE_ELEMENT_BYTES = {"softmax": 4, "softmax_wide_row": 4, "softmax_long_row": 4}

# The SDPA backend eager PyTorch runs a one-op attention kernel with, each priced at its own
# share of the tensor (or, in fp32, the FP32) peak: the spec's `efficiency.attention_by_backend`
# (measured by calibration); a spec without it prices attention at `efficiency.attention`.
ATTENTION_BACKENDS: dict[str, str] = {
    "sdpa_flash": "16-bit SDPA, causal or unmasked: a FlashAttention kernel (cuDNN's on the "
                  "H200 under torch 2.11)",
    "sdpa_masked": "16-bit SDPA with a mask input (a float mask, or a boolean one SDPA turns "
                   "into a float mask first): a mask tile added to every score tile, no block "
                   "skipped",
    "sdpa_fp32": "fp32 SDPA: the memory-efficient (CUTLASS) kernel on the FP32 units",
}

_REDUCE = ("sum", "mean", "max")
_BY_KIND = {"cast": "cast", "layernorm": "layer_norm", "rmsnorm": "rms_norm",
            "concat": "cat", "embedding": "embedding", "index_select": "embedding",
            "gather": "embedding", "index": "embedding", "index_copy": "index_copy",
            "index_put": "index_copy", "copy_into": "elementwise",
            "foreach_copy": "foreach_copy"}


def eager_family(op: Op, ins: list[Tensor], outs: list[Tensor],
                 roots: list[Tensor] | None = None, strided: bool = False) -> str | None:
    """The ATen kernel family eager PyTorch runs `op` with, or None when no family's curve
    prices it (attention, collective, view and opaque ops, sorts, GEMMs other than 16-bit
    cuBLAS and grouped ones).
    `roots`: the tensors the inputs are views of (default: the inputs themselves); an input
    viewing fewer elements than it shows is an expanded (broadcast) view. `strided`: an
    operand is read or written through strides ATen's vectorised kernels do not take (for a
    pointwise op: strides.vectorised is False; for a cat: an input is not row-major)."""
    kind = KINDS[op.kind]
    roots = roots or ins
    if op.kind == "matmul":
        same = ins[0].dtype.name == ins[1].dtype.name
        return GEMM_FAMILY if same and ins[0].dtype.name in _CUBLAS_DTYPES else None
    if op.kind == "grouped_matmul":
        same = ins[0].dtype.name == ins[1].dtype.name
        return "grouped_mm" if same and ins[0].dtype.name in _CUBLAS_DTYPES else None
    if op.kind == "softmax":
        return softmax_family(ins[0].shape[op.attrs.get("axis", -1)])
    if op.kind in _ROW_GATHERS and prod(ins[1].shape) <= SMALL_INDEX_MAX:
        return "embedding_small_index"
    if op.kind == "concat" and strided:
        return "cat_strided"
    if op.kind in _BY_KIND:
        return _BY_KIND[op.kind]
    if op.kind in _REDUCE:
        x = ins[0]
        if prod(outs[0].shape) == 1:
            return "reduce_all"
        axis = op.attrs.get("axis", -1) % len(x.shape)
        return "reduce_row" if axis == len(x.shape) - 1 else "reduce_column"
    if kind.role is Role.POINTWISE:
        n = prod(outs[0].shape)
        if len(ins) == 1 and prod(ins[0].shape) == n and kind.cost(op, ins, outs).sfu_ops:
            return "elementwise_transcendental"
        if any(prod(t.shape) != n for t in ins):
            return "elementwise_broadcast"
        if any(prod(r.shape) < n for r in roots):
            # a same-shaped input that is an expand of a smaller tensor: ATen's copy reads it
            # through strides of zero, unvectorised
            return "copy_broadcast" if op.kind == "copy" else "elementwise_broadcast"
        return "elementwise_broadcast" if strided else "elementwise"
    return None


def foreach_copy_kind(dtypes, same_layout: bool = True) -> str:
    """The op kind of each copy of a torch._foreach_copy_ over tensors of `dtypes` (every
    destination and source; `same_layout`: each pair has one shape and one set of strides, and
    all are dense): "foreach_copy" where they share one dtype too (ATen's fast route, the
    multi_tensor_apply kernel over the list), else "copy" (its slow route: copy_ for each pair;
    foreach_tensor_copy_list_kernel_cuda_, aten/src/ATen/native/cuda/ForeachUnaryOp.cu)."""
    return "foreach_copy" if same_layout and len(set(dtypes)) == 1 else "copy"


# ATen's multi_tensor_apply (aten/src/ATen/native/cuda/MultiTensorApply.cuh) gives each block
# one chunk of 64 Ki elements and each launch at most 320 blocks (4 KB of kernel arguments), so a
# large copy launches several kernels: torch 2.11 (CUDA 13) launched 2, 4 and 7 for 32, 64 and
# 128 Mi bf16 elements (reports/validation/torch/h100-80gb-hbm3-2026-12-07-r4.json). torch 2.13's
# header allows 2240 blocks a launch in CUDA 13 builds; no run has measured one.
FOREACH_CHUNK_ELEMENTS = 65536
FOREACH_BLOCKS_PER_LAUNCH = 320


def foreach_copy_launches(numel: int) -> int:
    """CUDA kernels ATen's multi_tensor_apply launches to copy a tensor of `numel` elements:
    at least 1, as every traced copy is a kernel of its own (ATen launches none for an empty
    list)."""
    chunks = -(-numel // FOREACH_CHUNK_ELEMENTS)
    return max(1, -(-chunks // FOREACH_BLOCKS_PER_LAUNCH))


def softmax_family(row: int) -> str:
    """The family of ATen's softmax kernel for rows of `row` elements."""
    if row <= SOFTMAX_WARP_MAX_ROW:
        return "softmax_warp"
    if row <= SOFTMAX_REG_FAST_MAX_ROW:
        return "softmax"
    return "softmax_wide_row" if row <= SOFTMAX_REG_MAX_ROW else "softmax_long_row"


def attention_backend(op: Op, ins: list[Tensor]) -> str | None:
    """The ATTENTION_BACKENDS name of the SDPA backend eager PyTorch runs an attention op with
    (None for any other op)."""
    if op.kind != "attention":
        return None
    if ins[0].dtype.compute == "fp32":
        return "sdpa_fp32"
    return "sdpa_masked" if len(ins) > 3 else "sdpa_flash"


def gathered_rows(op: Op, ins: list[Tensor]) -> int:
    """The rows a row gather (embedding, index_select) reads: its index count; 0 for any other
    op."""
    return prod(ins[1].shape) if op.kind in _ROW_GATHERS else 0


def curve_bytes(family: str, moved_bytes: float, element_bytes: float) -> float:
    """The bytes a family's curve is read at for a kernel moving `moved_bytes` in elements of
    `element_bytes`: the moved bytes, or for a family in CURVE_ELEMENT_BYTES its elements at
    that family's width."""
    width = CURVE_ELEMENT_BYTES.get(family)
    return moved_bytes * width / element_bytes if width else moved_bytes
