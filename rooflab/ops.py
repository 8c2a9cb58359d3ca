"""The op library: for each op kind, its fusion role, shape inference and cost rule.

A cost rule is a pure function of the op and its (already shape-inferred) tensors. It returns
an `OpCost`: FLOPs by unit and dtype family, the bytes it reads from each input tensor and
writes to each output, and anything it moves beyond one pass. Whether a tensor's bytes cross
HBM is decided later, per kernel, by `cost.py`: a tensor made and used inside one fused kernel
costs nothing. Conventions (NB):
  * FLOPs are real FLOPs: an FMA is 2. A transcendental (exp, tanh, erf, rsqrt) counts as 1.
  * All vector (non-tensor-core) math is priced at the fp32 vector rate.
  * A matmul's FLOPs are 2*M*N*K (PyTorch's flop counter convention, not 2K-1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Callable

from rooflab.dtypes import DType, lookup
from rooflab.graph import Op, Tensor


class Role(str, Enum):
    """What an op is to the fusion scheduler (tinygrad's GroupOp idea)."""
    POINTWISE = "pointwise"      # elementwise, broadcasts allowed; fuses anywhere
    GATHER = "gather"            # embedding lookup: reads rows by index
    REDUCTION = "reduction"      # needs a whole row on chip: reduce, softmax, norms
    GEMM = "gemm"                # tensor-core anchor; takes tile epilogues and dequant prologues
    ATTENTION = "attention"      # fused QK^T-softmax-PV
    COLLECTIVE = "collective"    # runs on the interconnect: a fusion barrier
    OPAQUE = "opaque"            # library call with explicit cost: a fusion barrier
    VIEW = "view"                # reshape/permute: metadata only, no kernel


OPAQUE_TRAFFIC = -1     # read position of an opaque op's declared traffic


class ShapeError(ValueError):
    """An op's inputs do not fit together; the message says how."""


@dataclass(frozen=True, slots=True)
class OpCost:
    tensor_flops: int = 0
    tensor_dtype: str | None = None     # tensor-core dtype family: bf16, fp8, fp4, ...
    vector_flops: int = 0
    reads: tuple[tuple[int, int], ...] = ()    # (position in op.inputs, bytes read from it)
    writes: tuple[tuple[int, int], ...] = ()   # (position in op.outputs, bytes written to it)
    reread_bytes: int = 0    # traffic beyond one pass that caches serve (attention K/V re-reads)
    link_bytes: int = 0      # bytes each GPU sends over the interconnect
    row_bytes: int = 0       # fp32 bytes of one reduction row that must stay on chip
    passes_if_spilled: int = 1   # passes over the input when the row does not fit on chip
    gemm_mnb: tuple[int, int, int] | None = None   # a GEMM's (M, N, batch): its output tiles
    sfu_ops: int = 0         # transcendentals (exp, reciprocal, rsqrt) for the special-function units
    dequant_elems: int = 0   # integer weights unpacked and scaled in registers, per pass (a GEMM
                             # that dequantizes them does so once per row tile of its output)


@dataclass(frozen=True, slots=True)
class OpRule:
    kind: str
    role: Role
    infer: Callable[[Op, list[Tensor]], list[tuple[tuple[int, ...], DType]]]
    cost: Callable[[Op, list[Tensor], list[Tensor]], OpCost]
    arity: tuple[int, int]          # (min, max) number of inputs
    doc: str


RULES: dict[str, OpRule] = {}


def register(kinds, role: Role, arity: tuple[int, int], doc: str):
    """Register one infer/cost pair for a family of kinds; duplicates are an error."""
    def wrap(cls):
        for kind in kinds:
            if kind in RULES:
                raise RuntimeError(f"duplicate op rule for '{kind}'")
            RULES[kind] = OpRule(kind, role, cls.infer, cls.cost, arity, doc)
        return cls
    return wrap


def _numel(shape) -> int:
    return math.prod(shape)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of shapes; ShapeError when they do not broadcast."""
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        dims = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ShapeError("shapes " + ", ".join(str(list(s)) for s in shapes)
                             + " do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def _out_dtype(op: Op, default: DType) -> DType:
    name = op.attrs.get("dtype")
    if name is None:
        return default
    dt = lookup(name)
    if dt is None:
        raise ShapeError(f"unknown dtype '{name}'")
    return dt


def _rw(ins: list[Tensor], outs: list[Tensor]):
    """Each input read once and each output written once, as (position, bytes) pairs."""
    return (tuple((i, t.nbytes) for i, t in enumerate(ins)),
            tuple((i, t.nbytes) for i, t in enumerate(outs)))


# ----------------------------------------------------------------------------- pointwise
# FLOPs per output element. gelu: tanh form 0.5x(1+tanh(c(x+0.044715x^3))) = 8;
# silu: x/(1+exp(-x)) = 4; causal_mask: one compare-select.
# Special-function-unit ops per element: one for each activation, as fast kernels evaluate GELU,
# SiLU, sigmoid and tanh through one tanh.approx (MUFU.TANH), exp through ex2.approx and rsqrt
# through rsqrt.approx; a division is a reciprocal and a multiply.
UNARY_SFU = {"gelu": 1, "silu": 1, "sigmoid": 1, "tanh": 1, "exp": 1, "sqrt": 1, "rsqrt": 1}
UNARY_FLOPS = {"relu": 1, "gelu": 8, "silu": 4, "sigmoid": 3, "tanh": 1, "exp": 1, "neg": 1,
               "sqrt": 1, "rsqrt": 1, "square": 1, "abs": 1, "scale": 1, "causal_mask": 1,
               "cast": 0, "copy": 0}
BINARY_FLOPS = {"add": 1, "sub": 1, "mul": 1, "div": 1, "maximum": 1, "minimum": 1}


@register(UNARY_FLOPS, Role.POINTWISE, (1, 1),
          "y = f(x), elementwise. cast/copy move bytes only; `dtype` sets the output dtype.")
class _Unary:
    @staticmethod
    def infer(op, ins):
        x = ins[0]
        return [(x.shape, _out_dtype(op, x.dtype))]

    @staticmethod
    def cost(op, ins, outs):
        reads, writes = _rw(ins, outs)
        n = outs[0].numel
        return OpCost(vector_flops=UNARY_FLOPS[op.kind] * n, reads=reads, writes=writes,
                      sfu_ops=UNARY_SFU.get(op.kind, 0) * n)


@register(BINARY_FLOPS, Role.POINTWISE, (2, 2),
          "y = a (op) b with NumPy broadcasting; a broadcast operand is read once.")
class _Binary:
    @staticmethod
    def infer(op, ins):
        a, b = ins
        return [(broadcast(a.shape, b.shape), _out_dtype(op, a.dtype))]

    @staticmethod
    def cost(op, ins, outs):
        reads, writes = _rw(ins, outs)
        n = outs[0].numel
        return OpCost(vector_flops=n, reads=reads, writes=writes,
                      sfu_ops=n if op.kind == "div" else 0)


@register(["rotary"], Role.POINTWISE, (3, 3),
          "Rotary embedding y = x*cos + rotate_half(x)*sin; cos/sin broadcast to x. 3 FLOPs/elem.")
class _Rotary:
    @staticmethod
    def infer(op, ins):
        x, cos, sin = ins
        if broadcast(x.shape, cos.shape, sin.shape) != x.shape:
            raise ShapeError(f"cos {list(cos.shape)} and sin {list(sin.shape)} must broadcast "
                             f"to x {list(x.shape)}")
        if x.shape[-1] % 2:
            raise ShapeError(f"rotary needs an even last dimension, got {x.shape[-1]}")
        return [(x.shape, x.dtype)]

    @staticmethod
    def cost(op, ins, outs):
        reads, writes = _rw(ins, outs)
        return OpCost(vector_flops=3 * outs[0].numel, reads=reads, writes=writes)


@register(["quantize", "dequantize"], Role.POINTWISE, (1, 1),
          "Convert to `dtype`, block scales included in the bytes. quantize: 2 FLOPs/elem "
          "(amax, scale); dequantize: 1 (scale). Dequantizing int4/int8 weights [K, ...] with "
          "`group_size` also reads one bf16 scale per group of K rows.")
class _Quant:
    @staticmethod
    def infer(op, ins):
        if "dtype" not in op.attrs:
            raise ShapeError(f"{op.kind} needs `dtype:` (the dtype it converts to)")
        return [(ins[0].shape, _out_dtype(op, ins[0].dtype))]

    @staticmethod
    def cost(op, ins, outs):
        reads, writes = _rw(ins, outs)
        x = ins[0]
        if op.kind == "dequantize" and not x.dtype.is_float and "group_size" in op.attrs:
            # int weights [K, ...] with one bf16 scale per `group_size` rows along K
            groups = -(-x.shape[0] // op.attrs["group_size"])
            reads = ((0, x.nbytes + 2 * groups * (x.numel // x.shape[0])),)
        per = 2 if op.kind == "quantize" else 1
        dequant = x.numel if op.kind == "dequantize" and not x.dtype.is_float else 0
        return OpCost(vector_flops=per * outs[0].numel, reads=reads, writes=writes,
                      dequant_elems=dequant)


# ----------------------------------------------------------------------------- gather
@register(["embedding"], Role.GATHER, (2, 2),
          "embedding(table[V, D], ids[...]) -> [..., D]; reads only the rows it gathers.")
class _Embedding:
    @staticmethod
    def infer(op, ins):
        table, ids = ins
        if len(table.shape) != 2:
            raise ShapeError(f"embedding table must be 2-D [vocab, dim], got {list(table.shape)}")
        if ids.dtype.is_float:
            raise ShapeError(f"embedding ids must be an integer dtype, got {ids.dtype.name}")
        return [(ids.shape + (table.shape[1],), table.dtype)]

    @staticmethod
    def cost(op, ins, outs):
        table, ids = ins
        rows_bytes = table.dtype.nbytes(ids.numel * table.shape[1])
        return OpCost(reads=((0, min(rows_bytes, table.nbytes)), (1, ids.nbytes)),
                      writes=((0, outs[0].nbytes),))


# ----------------------------------------------------------------------------- reductions
def _axis(op: Op, x: Tensor) -> int:
    axis = op.attrs.get("axis", -1)
    if not -len(x.shape) <= axis < len(x.shape):
        raise ShapeError(f"axis {axis} out of range for a {len(x.shape)}-D tensor")
    return axis % len(x.shape)


@register(["sum", "mean", "max"], Role.REDUCTION, (1, 1),
          "Reduce over `axis` (default -1), `keepdim` false by default. 1 FLOP per input element.")
class _Reduce:
    @staticmethod
    def infer(op, ins):
        x = ins[0]
        ax = _axis(op, x)
        shape = list(x.shape)
        if op.attrs.get("keepdim", False):
            shape[ax] = 1
        else:
            del shape[ax]
        return [(tuple(shape), _out_dtype(op, x.dtype))]

    @staticmethod
    def cost(op, ins, outs):
        x = ins[0]
        reads, writes = _rw(ins, outs)
        return OpCost(vector_flops=x.numel, reads=reads, writes=writes,
                      row_bytes=4 * x.shape[_axis(op, x)], passes_if_spilled=1)


@register(["softmax"], Role.REDUCTION, (1, 1),
          "Softmax over `axis` (default -1). 5 FLOPs/elem: max, subtract, exp, sum, divide. "
          "A row that does not fit on chip takes a second pass (online max/sum, then normalise).")
class _Softmax:
    @staticmethod
    def infer(op, ins):
        _axis(op, ins[0])
        return [(ins[0].shape, _out_dtype(op, ins[0].dtype))]

    @staticmethod
    def cost(op, ins, outs):
        x = ins[0]
        reads, writes = _rw(ins, outs)
        return OpCost(vector_flops=5 * x.numel, reads=reads, writes=writes, sfu_ops=x.numel,
                      row_bytes=4 * x.shape[_axis(op, x)], passes_if_spilled=2)


@register(["layernorm", "rmsnorm"], Role.REDUCTION, (1, 3),
          "Normalise over the last axis; inputs x [, weight [, bias]] (weight/bias broadcast "
          "over rows, read once). layernorm 7 FLOPs/elem (mean, centre, square, sum, scale, "
          "weight, bias); rmsnorm 4 (square, sum, scale, weight).")
class _Norm:
    @staticmethod
    def infer(op, ins):
        x = ins[0]
        if op.kind == "rmsnorm" and len(ins) > 2:
            raise ShapeError("rmsnorm takes x and an optional weight, not a bias")
        for p in ins[1:]:
            if p.shape != (x.shape[-1],):
                raise ShapeError(f"{p.name} must have shape [{x.shape[-1]}] (the normalised "
                                 f"axis of {list(x.shape)}), got {list(p.shape)}")
        return [(x.shape, _out_dtype(op, x.dtype))]

    @staticmethod
    def cost(op, ins, outs):
        x = ins[0]
        reads, writes = _rw(ins, outs)
        per = 7 if op.kind == "layernorm" else 4
        return OpCost(vector_flops=per * x.numel, reads=reads, writes=writes,
                      row_bytes=4 * x.shape[-1], passes_if_spilled=2)


# ----------------------------------------------------------------------------- GEMMs
def _mm_dims(op: Op, a: Tensor, b: Tensor):
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


def gemm_family(a: DType, b: DType, op: Op) -> str | None:
    """The tensor-core family a matmul of these dtypes runs at; None for fp32 on vector units."""
    if a.compute != b.compute:
        raise ShapeError(f"matmul operands differ in dtype ({a.name} vs {b.name}); "
                         "cast one, or use qmatmul for mixed-precision weights")
    if a.compute == "fp32":
        return "tf32" if op.attrs.get("tf32", False) else None
    return a.compute


@register(["matmul"], Role.GEMM, (2, 2),
          "(batched) a @ b with `transpose_a`/`transpose_b`, batch dims broadcast. "
          "FLOPs 2*batch*M*N*K on tensor cores at the operands' dtype (fp32: vector units, or "
          "tf32 tensor cores with `tf32: true`). Output dtype: `dtype`, default the inputs' "
          "(int32 for int8).")
class _Matmul:
    @staticmethod
    def infer(op, ins):
        a, b = ins
        batch, m, n, _ = _mm_dims(op, a, b)
        gemm_family(a.dtype, b.dtype, op)
        default = lookup("int32") if not a.dtype.is_float else (
            lookup("bf16") if a.dtype.bits < 16 else a.dtype)
        return [(batch + (m, n), _out_dtype(op, default))]

    @staticmethod
    def cost(op, ins, outs):
        a, b = ins
        batch, m, n, k = _mm_dims(op, a, b)
        flops = 2 * _numel(batch) * m * n * k
        fam = gemm_family(a.dtype, b.dtype, op)
        reads, writes = _rw(ins, outs)
        mnb = (m, n, _numel(batch))
        if fam is None:
            return OpCost(vector_flops=flops, reads=reads, writes=writes, gemm_mnb=mnb)
        return OpCost(tensor_flops=flops, tensor_dtype=fam, reads=reads, writes=writes, gemm_mnb=mnb)


def qmatmul_family(x: DType, w: DType) -> str:
    """Compute family of a quantized matmul: weight-only (int4/int8 weights, 16-bit
    activations) runs at the activations' dtype; otherwise at the shared low-precision family."""
    if not w.is_float and x.is_float and x.bits >= 16:
        return x.compute
    if x.compute != w.compute:
        raise ShapeError(f"qmatmul of {x.name} activations and {w.name} weights is neither "
                         "weight-only (int weights, 16-bit activations) nor one low-precision dtype")
    return x.compute


@register(["qmatmul"], Role.GEMM, (2, 2),
          "Quantized x[..., K] @ w[K, N] (`transpose_b` for [N, K]), dequantising on the fly. "
          "int4/int8 weights with bf16/fp16 x are weight-only: group scales (bf16, one per "
          "`group_size` weights along K, default 128) are read too; fp8 x fp8 and fp4 x fp4 run "
          "on low-precision tensor cores (fp4 block scales are part of the dtype). Output: "
          "`dtype`, default bf16.")
class _QMatmul:
    @staticmethod
    def infer(op, ins):
        x, w = ins
        if len(w.shape) != 2:
            raise ShapeError(f"qmatmul weight must be 2-D, got {list(w.shape)}")
        batch, m, n, _ = _mm_dims(op, x, w)
        qmatmul_family(x.dtype, w.dtype)
        return [(batch + (m, n), _out_dtype(op, lookup("bf16")))]

    @staticmethod
    def cost(op, ins, outs):
        x, w = ins
        batch, m, n, k = _mm_dims(op, x, w)
        fam = qmatmul_family(x.dtype, w.dtype)
        scale_bytes = 0
        if not w.dtype.is_float:
            group = op.attrs.get("group_size", 128)
            scale_bytes = 2 * (-(-k // group)) * n
        reads = ((0, x.nbytes), (1, w.nbytes + scale_bytes))
        return OpCost(tensor_flops=2 * _numel(batch) * m * n * k, tensor_dtype=fam,
                      vector_flops=(w.numel if not w.dtype.is_float else 0),
                      dequant_elems=(w.numel if not w.dtype.is_float else 0),
                      reads=reads, writes=((0, outs[0].nbytes),), gemm_mnb=(m, n, _numel(batch)))


# ----------------------------------------------------------------------------- attention
def attention_pairs(sq: int, sk: int, causal: bool) -> int:
    """Query-key pairs scored. Causal queries are the last `sq` of `sk` positions, so query i
    sees sk - sq + i + 1 keys."""
    if not causal:
        return sq * sk
    return sq * (sk - sq) + sq * (sq + 1) // 2


@register(["attention"], Role.ATTENTION, (3, 3),
          "Fused attention softmax(q kᵀ * scale [+ causal mask]) v with q [B, Hq, Sq, D], "
          "k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv]; GQA when Hkv divides Hq; `causal` default true "
          "(block skipping assumed). Tensor FLOPs 2*B*Hq*pairs*(D+Dv); vector 5 per score. "
          "K/V are read from HBM once; each query block of each query head streams them again "
          "through L2 (counted as reread bytes, `block_m` default 128).")
class _Attention:
    @staticmethod
    def infer(op, ins):
        q, k, v = ins
        for t in ins:
            if len(t.shape) != 4:
                raise ShapeError(f"attention wants 4-D [B, H, S, D] tensors, {t.name} is "
                                 f"{list(t.shape)}")
        b, hq, sq, d = q.shape
        if k.shape[0] != b or v.shape[0] != b:
            raise ShapeError(f"batch differs: q {b}, k {k.shape[0]}, v {v.shape[0]}")
        if k.shape[1] != v.shape[1] or k.shape[2] != v.shape[2]:
            raise ShapeError(f"k {list(k.shape)} and v {list(v.shape)} must share heads and length")
        if hq % k.shape[1]:
            raise ShapeError(f"query heads {hq} not a multiple of key/value heads {k.shape[1]}")
        if k.shape[3] != d:
            raise ShapeError(f"q head dim {d} differs from k head dim {k.shape[3]}")
        if op.attrs.get("causal", True) and sq > k.shape[2]:
            raise ShapeError(f"causal attention with more queries ({sq}) than keys ({k.shape[2]})")
        gemm_family(q.dtype, k.dtype, op)
        return [((b, hq, sq, v.shape[3]), q.dtype)]

    @staticmethod
    def cost(op, ins, outs):
        q, k, v = ins
        b, hq, sq, d = q.shape
        hkv, sk, dv = k.shape[1], k.shape[2], v.shape[3]
        pairs = attention_pairs(sq, sk, op.attrs.get("causal", True))
        fam = gemm_family(q.dtype, k.dtype, op)
        q_blocks = -(-sq // op.attrs.get("block_m", 128))
        passes = (hq // hkv) * q_blocks           # times each K/V byte reaches an SM
        # NB: causal block skipping lets later blocks skip keys; reread traffic is scaled by
        # the fraction of pairs scored.
        reread = (k.nbytes + v.nbytes) * (passes - 1) * pairs // (sq * sk)
        reads, writes = _rw(ins, outs)
        flops = 2 * b * hq * pairs * (d + dv)
        return OpCost(tensor_flops=flops if fam else 0, tensor_dtype=fam,
                      vector_flops=5 * b * hq * pairs + (0 if fam else flops),
                      reads=reads, writes=writes, reread_bytes=reread, sfu_ops=b * hq * pairs)


# ----------------------------------------------------------------------------- collectives
def _world(op: Op) -> int:
    n = op.attrs.get("world_size")
    if not isinstance(n, int) or n < 1:
        raise ShapeError("collectives need `world_size:` (a positive integer or parameter)")
    return n


@register(["all_reduce", "all_gather", "reduce_scatter"], Role.COLLECTIVE, (1, 1),
          "Ring collectives over `world_size` GPUs; all_gather/reduce_scatter along `axis` "
          "(default 0). Bytes each GPU sends: all_reduce 2(n-1)/n*size, all_gather (n-1)/n*out, "
          "reduce_scatter (n-1)/n*in. HBM: reads its input, writes its output.")
class _Collective:
    @staticmethod
    def infer(op, ins):
        n = _world(op)
        x = ins[0]
        if op.kind == "all_reduce":
            return [(x.shape, x.dtype)]
        ax = _axis(op, x) if "axis" in op.attrs else 0
        shape = list(x.shape)
        if op.kind == "all_gather":
            shape[ax] *= n
        else:
            if shape[ax] % n:
                raise ShapeError(f"reduce_scatter axis {ax} of size {shape[ax]} does not "
                                 f"divide by world_size {n}")
            shape[ax] //= n
        return [(tuple(shape), x.dtype)]

    @staticmethod
    def cost(op, ins, outs):
        n = _world(op)
        x, y = ins[0], outs[0]
        link = {"all_reduce": 2 * (n - 1) * x.nbytes // n,
                "all_gather": (n - 1) * y.nbytes // n,
                "reduce_scatter": (n - 1) * x.nbytes // n}[op.kind]
        flops = x.numel * (n - 1) // n if op.kind != "all_gather" else 0
        reads, writes = _rw(ins, outs)
        return OpCost(vector_flops=flops, reads=reads, writes=writes, link_bytes=link)


# ----------------------------------------------------------------------------- opaque, views
@register(["opaque"], Role.OPAQUE, (0, 16),
          "A library call or data-dependent code with explicit `flops`, `bytes` (HBM, total) and "
          "optional `tensor_dtype` (tensor-core family; vector fp32 otherwise); outputs need "
          "declared shapes. Always a fusion barrier.")
class _Opaque:
    @staticmethod
    def infer(op, ins):
        raise ShapeError("opaque ops must declare their outputs in `tensors:`")

    @staticmethod
    def cost(op, ins, outs):
        flops = int(op.attrs.get("flops", 0))
        total = int(op.attrs.get("bytes", 0))
        fam = op.attrs.get("tensor_dtype")
        # The declared bytes are the op's whole HBM traffic, carried as one read of a private
        # pseudo tensor (position OPAQUE_TRAFFIC); an opaque op never shares a kernel.
        return OpCost(tensor_flops=flops if fam else 0, tensor_dtype=fam,
                      vector_flops=0 if fam else flops,
                      reads=((OPAQUE_TRAFFIC, total),), writes=())


@register(["reshape", "permute"], Role.VIEW, (1, 1),
          "Views: reshape to `shape` (one -1 allowed) or permute by `dims`. No bytes, no "
          "kernel: the next kernel reads through strides.")
class _View:
    @staticmethod
    def infer(op, ins):
        x = ins[0]
        if op.kind == "permute":
            dims = op.attrs.get("dims")
            if not isinstance(dims, list) or sorted(d % len(x.shape) for d in dims) != list(
                    range(len(x.shape))):
                raise ShapeError(f"permute needs `dims:`, a permutation of 0..{len(x.shape) - 1}")
            return [(tuple(x.shape[d] for d in dims), x.dtype)]
        shape = list(op.attrs.get("shape") or [])
        if not shape:
            raise ShapeError("reshape needs `shape:`")
        if shape.count(-1) > 1:
            raise ShapeError("reshape allows at most one -1")
        known = _numel([d for d in shape if d != -1])
        if -1 in shape:
            if known == 0 or x.numel % known:
                raise ShapeError(f"cannot reshape {list(x.shape)} to {shape}")
            shape[shape.index(-1)] = x.numel // known
        if _numel(shape) != x.numel:
            raise ShapeError(f"cannot reshape {list(x.shape)} ({x.numel} elements) to {shape}")
        return [(tuple(shape), x.dtype)]

    @staticmethod
    def cost(op, ins, outs):
        return OpCost()


def role(kind: str) -> Role:
    return RULES[kind].role


KINDS = sorted(RULES)
