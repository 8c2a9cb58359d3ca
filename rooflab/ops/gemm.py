"""GEMM op kinds: (batched) matmul with transposes, and quantized matmul (weight-only int4/int8
with group scales, fp8 x fp8, fp4 x fp4 with block scales)."""

from __future__ import annotations

from rooflab.dtypes import DType, lookup
from rooflab.graph import Op, Tensor
from rooflab.ops.base import (DTYPE_ATTR, Attr, OpCost, OpKind, Role, ShapeError, TritonHook,
                              broadcast, numel, out_dtype, read_write_once, register)

_TRANSPOSE_A = Attr("bool", "a is stored [..., K, M]")
_TRANSPOSE_B = Attr("bool", "b is stored [..., N, K]")


def mm_dims(op: Op, a: Tensor, b: Tensor):
    """(batch shape, M, N, K) of a (batched) matmul with optional transposes."""
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ShapeError(f"matmul needs 2-D or more operands, got {list(a.shape)} and "
                         f"{list(b.shape)}")
    m, k = a.shape[-2:][::-1] if op.attrs.get("transpose_a") else a.shape[-2:]
    k2, n = b.shape[-2:][::-1] if op.attrs.get("transpose_b") else b.shape[-2:]
    if k != k2:
        ta = "ᵀ" if op.attrs.get("transpose_a") else ""
        tb = "ᵀ" if op.attrs.get("transpose_b") else ""
        raise ShapeError(f"inner dimensions differ: {a.name}{ta} {list(a.shape)} has K={k}, "
                         f"{b.name}{tb} {list(b.shape)} has K={k2}")
    batch = broadcast(a.shape[:-2], b.shape[:-2])
    return batch, m, n, k


def gemm_tiles(batch: tuple[int, ...], m: int, n: int, b: Tensor) -> tuple[int, int, int]:
    """(M, N, batch) of the GEMM a library runs for a matmul: with a 2-D `b` (a weight), the
    leading dims of `a` fold into M (torch.matmul views [..., M, K] as [prod(...) * M, K] and
    makes one cuBLAS call), so [32, 1, K] @ [K, N] is one GEMM of M = 32, not 32 of M = 1."""
    if len(b.shape) == 2:
        return numel(batch) * m, n, 1
    return m, n, numel(batch)


def gemm_family(a: DType, b: DType, op: Op) -> str | None:
    """The tensor-core family a matmul of these dtypes runs at; None for fp32 on vector units."""
    if a.compute != b.compute:
        raise ShapeError(f"matmul operands differ in dtype ({a.name} vs {b.name}); "
                         "cast one, or use qmatmul for mixed-precision weights")
    if a.compute == "fp32":
        return "tf32" if op.attrs.get("tf32", False) else None
    return a.compute


def qmatmul_family(x: DType, w: DType) -> str:
    """Compute family of a quantized matmul: weight-only (int4/int8 weights, 16-bit
    activations) runs at the activations' dtype; otherwise at the shared low-precision family."""
    if not w.is_float and x.is_float and x.bits >= 16:
        return x.compute
    if x.compute != w.compute:
        raise ShapeError(f"qmatmul of {x.name} activations and {w.name} weights is neither "
                         "weight-only (int weights, 16-bit activations) nor one low-precision dtype")
    return x.compute


def _transposed(op, a, b):
    if op.attrs.get("transpose_a"):
        a = a.transpose(-1, -2)
    if op.attrs.get("transpose_b"):
        b = b.transpose(-1, -2)
    return a, b


# ----------------------------------------------------------------------------- matmul
def _matmul_infer(op, ins):
    a, b = ins
    batch, m, n, _ = mm_dims(op, a, b)
    gemm_family(a.dtype, b.dtype, op)
    default = lookup("int32") if not a.dtype.is_float else (
        lookup("bf16") if a.dtype.bits < 16 else a.dtype)
    return [(batch + (m, n), out_dtype(op, default))]


def _matmul_cost(op, ins, outs):
    a, b = ins
    batch, m, n, k = mm_dims(op, a, b)
    flops = 2 * numel(batch) * m * n * k
    fam = gemm_family(a.dtype, b.dtype, op)
    reads, writes = read_write_once(ins, outs)
    mnb = gemm_tiles(batch, m, n, b)
    if fam is None:
        return OpCost(vector_flops=flops, reads=reads, writes=writes, gemm_mnb=mnb)
    return OpCost(tensor_flops=flops, tensor_dtype=fam, reads=reads, writes=writes, gemm_mnb=mnb)


def _matmul_ref(op, xs, c):
    a, b = _transposed(op, *xs)
    return a @ b


register(OpKind(
    "matmul", Role.GEMM, "gemm", (2, 2),
    "(batched) a @ b with `transpose_a`/`transpose_b`, batch dims broadcast. "
    "FLOPs 2*batch*M*N*K on tensor cores at the operands' dtype (fp32: vector units, or "
    "tf32 tensor cores with `tf32: true`). Output dtype: `dtype`, default the inputs' "
    "(int32 for int8).",
    _matmul_infer, _matmul_cost,
    {"transpose_a": _TRANSPOSE_A, "transpose_b": _TRANSPOSE_B,
     "tf32": Attr("bool", "fp32 operands run on tf32 tensor cores"), "dtype": DTYPE_ATTR},
    _matmul_ref, TritonHook(template="gemm")))


# ----------------------------------------------------------------------------- qmatmul
def _qmatmul_infer(op, ins):
    x, w = ins
    if len(w.shape) != 2:
        raise ShapeError(f"qmatmul weight must be 2-D, got {list(w.shape)}")
    batch, m, n, _ = mm_dims(op, x, w)
    qmatmul_family(x.dtype, w.dtype)
    return [(batch + (m, n), out_dtype(op, lookup("bf16")))]


def _qmatmul_cost(op, ins, outs):
    x, w = ins
    batch, m, n, k = mm_dims(op, x, w)
    fam = qmatmul_family(x.dtype, w.dtype)
    scale_bytes = 0
    if not w.dtype.is_float:
        group = op.attrs.get("group_size", 128)
        scale_bytes = 2 * (-(-k // group)) * n
    reads = ((0, x.nbytes), (1, w.nbytes + scale_bytes))
    return OpCost(tensor_flops=2 * numel(batch) * m * n * k, tensor_dtype=fam,
                  vector_flops=(w.numel if not w.dtype.is_float else 0),
                  dequant_elems=(w.numel if not w.dtype.is_float else 0),
                  reads=reads, writes=((0, outs[0].nbytes),), gemm_mnb=gemm_tiles(batch, m, n, w))


def _qmatmul_ref(op, xs, c):
    x, w = xs
    if not c.in_dtypes[1].is_float:
        w = c.dequant(1, op.attrs.get("group_size", 128))
    if op.attrs.get("transpose_b"):
        w = w.t()
    return x @ w


register(OpKind(
    "qmatmul", Role.GEMM, "quantized", (2, 2),
    "Quantized x[..., K] @ w[K, N] (`transpose_b` for [N, K]), dequantising on the fly. "
    "int4/int8 weights with bf16/fp16 x are weight-only: group scales (bf16, one per "
    "`group_size` weights along K, default 128) are read too; fp8 x fp8 and fp4 x fp4 run "
    "on low-precision tensor cores (fp4 block scales are part of the dtype). Output: "
    "`dtype`, default bf16.",
    _qmatmul_infer, _qmatmul_cost,
    {"transpose_a": _TRANSPOSE_A, "transpose_b": _TRANSPOSE_B, "dtype": DTYPE_ATTR,
     "group_size": Attr("int", "int weights along K sharing one bf16 scale (default 128)", min=1)},
    _qmatmul_ref, TritonHook(template="qgemm")))
