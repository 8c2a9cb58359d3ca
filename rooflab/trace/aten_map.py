"""The one table from recorded ATen ops to rooflab op kinds (rooflab/trace/convert.py applies
it to a Trace).

`RULES` maps an ATen op name (without namespace, overload or in-place underscore: `add_` and
`add.Tensor` both look up `add`) to a `Rule`: a function that emits the rooflab op(s) for one
call, and the number of CUDA kernels eager PyTorch launches for it (views and allocations: none;
see `launches`). Every emitted op is checked against rooflab's own shape rule; where they
disagree, or where an ATen op has no rule, the call becomes an `opaque` op named after the ATen
op, with the FLOPs torch's flop counter gives and the bytes of its tensors, and a note says so.
Nothing recorded is dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from rooflab.grid import vwhere
from rooflab.kernel_families import foreach_copy_kind, foreach_copy_launches
from rooflab.ops import KINDS, Role
from rooflab.strides import is_dense
from rooflab.trace.record import Call

# torch dtype name -> rooflab dtype name
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64",
          "int64": "int64", "int32": "int32", "int16": "int32", "int8": "int8", "uint8": "int8",
          "bool": "bool", "float8_e4m3fn": "fp8_e4m3", "float8_e5m2": "fp8_e5m2"}


class Unmapped(Exception):
    """This call cannot be expressed by the rule; it becomes an opaque op (message: why)."""


@dataclass(frozen=True)
class Rule:
    """How one ATen op becomes rooflab ops. `emit(call, b)` adds them through the builder `b`;
    `launches`: the CUDA kernels eager PyTorch launches for one call (0 for views and
    allocations), or a function of (call, builder) where that depends on the shapes;
    `doc`: what the rule does, for docs/tracing.md."""
    emit: Callable
    launches: int | Callable = 1
    doc: str = ""


# =============================================================================== the rules
def _arg(call: Call, i: int, key: str, default=None):
    """Non-tensor argument `i` (or keyword `key`) of a call."""
    if i < len(call.args) and call.args[i] is not None:
        return call.args[i]
    return call.kwargs.get(key, default)


def _out(call: Call) -> int:
    return call.outputs[-1] if call.outputs else None


def _inplace_target(call: Call) -> tuple[int, int]:
    """(value read, value written) of an in-place op's first argument, or of an out-of-place
    op's first input and its output."""
    if call.mutated:
        return call.inputs[call.mutated[0]], call.outputs[0]
    return call.inputs[0], _out(call)


def same(kind: str):
    """One op of `kind` over the call's tensor inputs, in order, writing its output."""
    def emit(call, b):
        src, dst = _inplace_target(call)
        b.op(kind, [src, *call.inputs[1:]], [dst], **_keep_dtype(b, src, dst))
    return emit


def _scalar_other(call: Call):
    """The Python number a binary op was given instead of a second tensor, or None."""
    for a in call.args[1:2]:
        if isinstance(a, (int, float)) and not isinstance(a, bool):
            return a
    return call.kwargs.get("other") if isinstance(call.kwargs.get("other"), (int, float)) else None


def binary(kind: str):
    """A binary pointwise op; with a Python scalar second operand, a unary op (`scale` for
    mul/div, the generic elementwise op otherwise)."""
    def emit(call, b):
        src, dst = _inplace_target(call)
        if len(call.inputs) == 2:
            other = call.inputs[1] if src == call.inputs[0] else call.inputs[0]
            b.op(kind, [src, other], [dst], **_keep_dtype(b, src, dst))
            return
        s = _scalar_other(call)
        if kind in ("mul", "div") and s is not None:
            factor = float(s) if kind == "mul" else (1.0 / s if s else math.inf)
            if not math.isfinite(factor):
                raise Unmapped("division by zero")
            b.op("scale", [src], [dst], factor=factor, **_keep_dtype(b, src, dst))
            return
        b.op("elementwise", [src], [dst], fn=f"{kind}_scalar", **_keep_dtype(b, src, dst))
    return emit


def _keep_dtype(b, src, dst) -> dict:
    """`dtype:` when the output's dtype is not the first input's (type promotion)."""
    s, d = b.value(src).dtype, b.value(dst).dtype
    return {} if s == d else {"dtype": DTYPES[d]}


def unary(kind: str):
    def emit(call, b):
        src, dst = _inplace_target(call)
        b.op(kind, [src], [dst], **_keep_dtype(b, src, dst))
    return emit


def generic(fn: str, flops: int = 1):
    """The generic `elementwise` op named `fn` over all tensor inputs (broadcast)."""
    def emit(call, b):
        src, dst = _inplace_target(call)
        rest = [v for v in call.inputs if v != src]
        b.op("elementwise", [src, *rest], [dst], fn=fn, flops=flops, **_keep_dtype(b, src, dst))
    return emit


def _pow(call, b):
    src, dst = _inplace_target(call)
    if len(call.inputs) == 1 and _arg(call, 1, "exponent") == 2:
        b.op("square", [src], [dst], **_keep_dtype(b, src, dst))
    else:
        generic("pow")(call, b)


def _to_copy(call, b):
    src, dst = call.inputs[0], _out(call)
    if b.value(src).dtype == b.value(dst).dtype:
        b.op("copy", [src], [dst])
    else:
        b.op("cast", [src], [dst], dtype=DTYPES[b.value(dst).dtype])


def _copy_into(call, b):
    # copy_(dst, src): the new version of dst is src's values (broadcast, cast)
    dst_in, src = call.inputs[0], call.inputs[1]
    dst = call.outputs[0]
    if b.value(src).shape != b.value(dst).shape:
        raise Unmapped("copy_ with broadcasting")
    target = b.name(dst_in)
    if any(target in op.outputs and KINDS[op.kind].role is Role.VIEW
           for op in reversed(b.ops)):
        # into a view (a slice of a buffer): the write lands in the buffer's bytes
        b.op("copy_into", [target, src], [dst])
        return
    attrs = {} if b.value(src).dtype == b.value(dst).dtype else {"dtype": DTYPES[b.value(dst).dtype]}
    b.op("copy", [src], [dst], **attrs)


def _foreach_copy(call, b):
    # _foreach_copy_(dsts, srcs): each dst's new version is its src's values, by the kernel
    # kernel_families.foreach_copy_kind names for the list. One op per pair, with the launches
    # its own chunks take: ATen's fast route packs the whole list's chunks into shared launches
    # (up to 64 tensors each), so n small pairs are n launches here and about n/64 there
    n = len(call.inputs) // 2
    dsts, srcs = call.inputs[:n], call.inputs[n:]
    if len(call.outputs) != n or any(b.value(s).shape != b.value(d).shape
                                     or b.value(s).dtype != b.value(d).dtype
                                     for s, d in zip(srcs, dsts)):
        raise Unmapped("_foreach_copy_ with broadcasting or a cast")
    same_layout = all(b.value(s).strides == b.value(d).strides
                      and is_dense(b.value(d).shape, b.value(d).strides)
                      for s, d in zip(srcs, dsts))
    kind = foreach_copy_kind([b.value(v).dtype for v in call.inputs], same_layout)
    for src, dst in zip(srcs, call.outputs):
        b.op(kind, [src], [dst], launches=foreach_copy_launches(math.prod(b.value(src).shape))
             if kind == "foreach_copy" else None)


def _fill(fn: str):
    """A factory that writes its output (zeros, full, arange, scalar_tensor)."""
    def emit(call, b):
        dst = _out(call)
        v = b.value(dst)
        b.op("fill", [], [dst], shape=list(v.shape), dtype=DTYPES[v.dtype], fn=fn)
    return emit


def _fill_inplace(call, b):
    dst = call.outputs[0]
    v = b.value(dst)
    b.op("fill", [], [dst], shape=list(v.shape), dtype=DTYPES[v.dtype], fn="fill_")


def _alloc(call, b):
    """empty/new_empty: an allocation, no kernel: a `fill` of fn `empty`, which writes
    nothing. It makes the tensor an intermediate the step allocates (what later ops write into
    its views and read whole), not a graph input that would be resident between steps."""
    dst = _out(call)
    v = b.value(dst)
    b.op("fill", [], [dst], launches=0, shape=list(v.shape), dtype=DTYPES[v.dtype], fn="empty")


# -- views ------------------------------------------------------------------------------
def _same_tensor(call, b):
    """alias/detach: the output is the input (same bytes, same shape): no op at all."""
    src, dst = call.inputs[0], _out(call)
    if b.value(src).shape != b.value(dst).shape:
        raise Unmapped("an alias of another shape")
    b.value_name[dst] = b.name(src)
def _reshape(call, b):
    b.op("reshape", [call.inputs[0]], [_out(call)], shape=list(b.value(_out(call)).shape))


def _permute_dims(call, b) -> list[int]:
    nd = len(b.value(call.inputs[0]).shape)
    p = call.packet
    if p == "t":
        return [1, 0] if nd == 2 else list(range(nd))
    if p in ("transpose", "transpose_"):
        d0, d1 = (_arg(call, 1, "dim0") % nd, _arg(call, 2, "dim1") % nd)
        dims = list(range(nd))
        dims[d0], dims[d1] = dims[d1], dims[d0]
        return dims
    return [d % nd for d in _arg(call, 1, "dims")]


def _permute(call, b):
    b.op("permute", [call.inputs[0]], [_out(call)], dims=_permute_dims(call, b))


def _expand(call, b):
    src, dst = call.inputs[0], _out(call)
    if b.value(src).shape == b.value(dst).shape:
        b.op("reshape", [src], [dst], shape=list(b.value(dst).shape))
    else:
        b.op("expand", [src], [dst], shape=list(b.value(dst).shape))


def _slice(call, b):
    src, dst = call.inputs[0], _out(call)
    nd = len(b.value(src).shape)
    axis = _arg(call, 1, "dim", 0) % nd
    start = _arg(call, 2, "start", 0) or 0
    end = _arg(call, 3, "end")
    step = _arg(call, 4, "step", 1) or 1
    size = b.value(src).shape[axis]
    start = max(0, start + size if start < 0 else start)
    end = size if end is None else min(size, end + size if end < 0 else end)
    b.op("slice", [src], [dst], axis=axis, start=min(start, size), end=max(end, 0), step=step)


def _select(call, b):
    # x.select(dim, i): a one-wide slice, then the dimension dropped
    src, dst = call.inputs[0], _out(call)
    shape = list(b.value(src).shape)
    axis = _arg(call, 1, "dim") % len(shape)
    i = _arg(call, 2, "index") % shape[axis]
    mid = b.fresh(shape[:axis] + [1] + shape[axis + 1:], b.tensors[b.name(src)].dtype)
    b.op("slice", [src], [mid], axis=axis, start=i, end=i + 1, step=1)
    b.op("reshape", [mid], [dst], shape=list(b.value(dst).shape))


def _split(call, b):
    src = call.inputs[0]
    shape = b.value(src).shape
    axis_arg = 2 if call.packet != "unbind" else 1
    axis = (_arg(call, axis_arg, "dim", 0) if call.packet != "unbind" else _arg(call, 1, "dim", 0))
    axis %= len(shape)
    outs = list(call.outputs)
    if call.packet == "unbind":
        mids = [b.fresh(shape[:axis] + (1,) + shape[axis + 1:], b.tensors[b.name(src)].dtype)
                for _ in outs]
        b.op("split", [src], mids, axis=axis, sizes=[1] * len(outs))
        for m, o in zip(mids, outs):
            b.op("reshape", [m], [o], shape=list(b.value(o).shape))
        return
    sizes = [b.value(o).shape[axis] for o in outs]
    b.op("split", [src], outs, axis=axis, sizes=sizes)


# -- reductions, norms, softmax -------------------------------------------------------------
def _reduce(kind: str):
    """A reduction over one axis, or over adjacent axes (a whole tensor included): those are
    merged by a reshape first, as ATen's reduction reads them as one, and the result reshaped
    to ATen's output; axes that are not adjacent stay unmapped."""
    def emit(call, b):
        src, dst = call.inputs[0], _out(call)
        shape = list(b.value(src).shape)
        nd = len(shape)
        dims = _arg(call, 1, "dim")
        keepdim = bool(_arg(call, 2, "keepdim", False))
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            dims = list(range(nd))
        if isinstance(dims, int):
            dims = [dims]
        dims = sorted({d % nd for d in dims}) if nd else [0]
        if dims != list(range(dims[0], dims[-1] + 1)):
            raise Unmapped(f"a reduction over axes {dims}, which are not adjacent")
        dtype = _keep_dtype(b, src, dst)
        if len(dims) == 1 and nd:
            b.op(kind, [src], [dst], axis=dims[0], keepdim=keepdim, **dtype)
            return
        first, last = dims[0], dims[-1] + 1
        merged = shape[:first] + [math.prod(shape[first:last])] + shape[last:]
        mid = b.fresh(merged, b.tensors[b.name(src)].dtype)
        b.op("reshape", [src], [mid], shape=merged)
        out_shape = merged[:first] + merged[first + 1:]
        if list(b.value(dst).shape) == out_shape:
            b.op(kind, [mid], [dst], axis=first, keepdim=False, **dtype)
            return
        red = b.fresh(out_shape, b.tensors[b.name(dst)].dtype)
        b.op(kind, [mid], [red], axis=first, keepdim=False, **dtype)
        b.op("reshape", [red], [dst], shape=list(b.value(dst).shape))
    return emit


def _softmax(call, b):
    src, dst = call.inputs[0], _out(call)
    nd = len(b.value(src).shape)
    b.op("softmax", [src], [dst], axis=_arg(call, 1, "dim") % nd, **_keep_dtype(b, src, dst))


def _layer_norm(call, b):
    if len(_arg(call, 1, "normalized_shape")) != 1:
        raise Unmapped("layer norm over more than the last axis")
    b.op("layernorm", list(call.inputs), [call.outputs[0]], eps=float(_arg(call, 4, "eps", 1e-5)))
    for extra in call.outputs[1:]:     # mean and rstd: saved for backward, written by the kernel
        b.name(extra)


def _rms_norm(call, b):
    # F.rms_norm(x, normalized_shape, weight, eps), captured whole (rooflab/trace/record.py)
    if len(_arg(call, 1, "normalized_shape")) != 1:
        raise Unmapped("RMS norm over more than the last axis")
    eps = _arg(call, 3, "eps")
    b.op("rmsnorm", list(call.inputs), [_out(call)], eps=float(eps if eps is not None else 1e-6))


# -- GEMMs and attention ----------------------------------------------------------------
def _mm(call, b):
    b.op("matmul", list(call.inputs[:2]), [_out(call)])


def _addmm(call, b):
    # addmm(bias, a, b): cuBLASLt runs the bias add in the GEMM's epilogue, one kernel: the add
    # launches none of its own and rides in the GEMM's kernel in every schedule
    bias, x, w = call.inputs[:3]
    out = _out(call)
    mid = b.fresh(b.value(out).shape, b.tensors[b.name(out)].dtype)
    b.op("matmul", [x, w], [mid])
    b.op("add", [mid, bias], [out], launches=0)


def _grouped_mm(call, b):
    x, w = call.inputs[:2]
    b.op("grouped_matmul", [x, w], [_out(call)])


def _sdpa(call, b):
    q, k, v = call.inputs[:3]
    mask = call.inputs[3] if len(call.inputs) > 3 else None
    attrs = {"causal": bool(_arg(call, 5, "is_causal", False))}
    scale = call.kwargs.get("scale")
    if scale is not None:
        attrs["scale"] = float(scale)
    b.op("attention", [q, k, v] + ([mask] if mask is not None else []), [_out(call)], **attrs)


# -- indexing ---------------------------------------------------------------------------
def _index_copy(call, b):
    dst_in, index, src = call.inputs[:3]
    dst = call.outputs[0]
    b.op("index_copy", [dst_in, index, src], [dst], axis=_arg(call, 1, "dim"))


def _index(call, b):
    if len(call.inputs) != 2 or not (call.args[1] and len(call.args[1]) == 1):
        raise Unmapped("advanced indexing with more than one index tensor")
    b.op("index", list(call.inputs), [_out(call)])


def _index_put(call, b):
    if len(call.inputs) != 3:
        raise Unmapped("index_put with more than one index tensor")
    x, index, src = call.inputs
    b.op("index_put", [x, index, src], [call.outputs[0] if call.mutated else _out(call)],
         accumulate=bool(_arg(call, 3, "accumulate", False)))


def _axis_op(kind: str, **extra):
    def emit(call, b):
        nd = len(b.value(call.inputs[0]).shape)
        src, dst = _inplace_target(call)
        rest = [v for v in call.inputs if v != src]
        b.op(kind, [src, *rest], [dst], axis=_arg(call, 1, "dim") % nd, **extra)
    return emit


def _scatter(call, b):
    if len(call.inputs) != 3:
        raise Unmapped("scatter of a scalar value")
    nd = len(b.value(call.inputs[0]).shape)
    src, dst = _inplace_target(call)
    reduce = "add" if call.packet.startswith("scatter_add") else "none"
    b.op("scatter", [src, call.inputs[1], call.inputs[2]], [dst],
         axis=_arg(call, 1, "dim") % nd, reduce=reduce)


def _topk(call, b):
    nd = len(b.value(call.inputs[0]).shape)
    b.op("topk", [call.inputs[0]], list(call.outputs), k=_arg(call, 1, "k"),
         axis=_arg(call, 2, "dim", -1) % nd, largest=bool(_arg(call, 3, "largest", True)))


def _sort(call, b):
    nd = len(b.value(call.inputs[0]).shape)
    b.op("sort", [call.inputs[0]], list(call.outputs), axis=_arg(call, 1, "dim", -1) % nd,
         descending=bool(_arg(call, 2, "descending", False)))


def _cumsum(call, b):
    src, dst = call.inputs[0], _out(call)
    nd = len(b.value(src).shape)
    b.op("cumsum", [src], [dst], axis=_arg(call, 1, "dim") % nd, dtype=DTYPES[b.value(dst).dtype])


def _histc(call, b):
    b.op("histogram", [call.inputs[0]], [_out(call)], bins=_arg(call, 1, "bins", 100))


def _cat(call, b):
    nd = len(b.value(_out(call)).shape)
    ins = [v for v in call.inputs if b.value(v).shape != (0,)]   # cat skips legacy empty tensors
    b.op("concat", ins, [_out(call)], axis=_arg(call, 1, "dim", 0) % nd)


def _embedding(call, b):
    b.op("embedding", list(call.inputs[:2]), [_out(call)])


# -- kernels launched, where one ATen op launches more than one -------------------------------
# Measured on the H200 (torch 2.11, cuBLAS of CUDA 12.x) with torch.profiler, one eager step of
# each zoo model: reports/hf_eager/h200-2026-12-03.json (lab/hf_eager/measure.py). These are
# the library's own choices, so they are data, not derived.
SPLIT_K_MIN_K = 3584          # no split-K GEMM seen below this reduction length


def gemm_launches(m: int, n: int, k: int) -> int:
    """CUDA kernels cuBLAS(Lt) launches for one [m, k] @ [k, n] GEMM: 2 when it splits K (the
    GEMM and its split-K reduction), else 1. It splits decode-sized GEMMs with a long K: at
    m <= 16 when n <= 4096 (q/k/v/o and down projections of 7-8B models, not gate/up or the
    lm_head), at 16 < m <= 64 only when K is at least 3.5x n (k/v and down projections)."""
    # selections, not branches, so that a sweep's grid of sizes (rooflab.grid) takes each
    # point's count: vwhere(c, a, b) is `a if c else b`
    # a skinny-N GEMM runs as its transpose (gemm_tiles.gemm_tile): the rule applies to it swapped
    transposed = (n <= 64) & (m > n)
    m, n = vwhere(transposed, n, m), vwhere(transposed, m, n)
    split = vwhere(m <= 16, n <= 4096, 2 * k >= 7 * n)
    return vwhere((k >= SPLIT_K_MIN_K) & (m <= 64) & split, 2, 1)


def _mm_launches(call: Call, b: "convert.Builder") -> int:
    a, w = (b.value(v).shape for v in call.inputs[-2:])
    if len(a) != 2 or len(w) != 2:
        return 1
    return gemm_launches(a[0], w[1], a[1])


def _sdpa_launches(call: Call, b: "convert.Builder") -> int:
    # with a boolean mask, SDPA first converts it to an additive float mask (two fills and a
    # where), then runs the attention kernel (cuDNN on the H200); with a float mask or none,
    # one kernel (and a memset, which the profiler counts apart)
    masked = len(call.inputs) > 3 and b.value(call.inputs[3]).dtype == "bool"
    return 4 if masked else 1


_VIEW = "a view: metadata only, no kernel"
RULES: dict[str, Rule] = {
    # views and allocations
    **{n: Rule(_reshape, 0, _VIEW + " (reshape)") for n in (
        "view", "_unsafe_view", "reshape", "unsqueeze", "squeeze")},
    **{n: Rule(_same_tensor, 0, "the same tensor under another name: no op") for n in (
        "alias", "detach", "lift_fresh")},
    **{n: Rule(_permute, 0, _VIEW + " (permute)") for n in ("t", "transpose", "permute")},
    "expand": Rule(_expand, 0, _VIEW + " (expand: zero strides)"),
    "slice": Rule(_slice, 0, _VIEW + " (slice)"),
    "select": Rule(_select, 0, _VIEW + " (a one-wide slice)"),
    **{n: Rule(_split, 0, _VIEW + " (split)") for n in ("split", "split_with_sizes", "unbind")},
    **{n: Rule(_alloc, 0, "an allocation: no kernel") for n in (
        "empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided")},
    # factories that write
    **{n: Rule(_fill(n), 1, "a fill kernel") for n in (
        "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros", "new_ones",
        "new_full", "scalar_tensor", "arange")},
    "fill": Rule(_fill_inplace, 1, "a fill kernel"),
    "zero": Rule(_fill_inplace, 1, "a fill kernel"),
    # pointwise
    **{n: Rule(binary(n), 1, f"pointwise {n}") for n in ("add", "sub", "mul", "div")},
    "rsub": Rule(generic("rsub"), 1, "pointwise"),
    "maximum": Rule(same("maximum"), 1, "pointwise"),
    "minimum": Rule(same("minimum"), 1, "pointwise"),
    **{n: Rule(unary(n), 1, f"pointwise {n}") for n in (
        "neg", "rsqrt", "sqrt", "exp", "tanh", "sigmoid", "silu", "relu", "abs")},
    "gelu": Rule(unary("gelu"), 1, "pointwise GELU"),
    "pow": Rule(_pow, 1, "pointwise (x**2 is `square`)"),
    "_to_copy": Rule(_to_copy, 1, "a cast (or a copy when the dtype is kept)"),
    "clone": Rule(unary("copy"), 1, "a copy"),
    "copy": Rule(_copy_into, 1, "a copy into an existing tensor"),
    "_foreach_copy_": Rule(_foreach_copy, 1, "a copy of each listed tensor into its "
                           "destination (multi_tensor_apply kernels where they share a dtype)"),
    **{n: Rule(generic(n), 1, "pointwise (generic elementwise)") for n in (
        "cos", "sin", "log", "log1p", "reciprocal", "erf", "floor", "ceil", "round", "sign",
        "clamp", "clamp_min", "clamp_max", "where", "masked_fill", "eq", "ne", "lt", "le", "gt",
        "ge", "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or",
        "bitwise_not", "bitwise_xor", "floor_divide", "remainder", "fmod", "isnan", "isinf",
        "tril", "triu", "exp2", "softplus", "lerp", "addcmul", "addcdiv", "nan_to_num")},
    # reductions, norms
    "sum": Rule(_reduce("sum"), 1, "row reduction"),
    "mean": Rule(_reduce("mean"), 1, "row reduction"),
    "amax": Rule(_reduce("max"), 1, "row reduction"),
    "_softmax": Rule(_softmax, 1, "softmax"),
    "_safe_softmax": Rule(_softmax, 1, "softmax"),
    "native_layer_norm": Rule(_layer_norm, 1, "layer norm"),
    "rms_norm": Rule(_rms_norm, 1, "RMS norm (CUDA runs one fused kernel)"),
    # GEMMs and attention
    "mm": Rule(_mm, _mm_launches, "cuBLAS GEMM (2 kernels when it splits K)"),
    "bmm": Rule(_mm, 1, "cuBLAS batched GEMM"),
    "addmm": Rule(_addmm, _mm_launches, "cuBLASLt GEMM with the bias add in its epilogue"),
    "_grouped_mm": Rule(_grouped_mm, 2, "grouped GEMM over experts (balanced routing): a "
                        "problem-setup kernel and the CUTLASS grouped GEMM"),
    "scaled_dot_product_attention": Rule(_sdpa, _sdpa_launches, "an SDPA backend kernel (and "
                                         "three to convert a boolean mask)"),
    # indexing
    "embedding": Rule(_embedding, 2, "embedding gather (two index-select kernels)"),
    "index_copy": Rule(_index_copy, 1, "KV-cache append"),
    "index": Rule(_index, 1, "gather rows by index"),
    "index_put": Rule(_index_put, 1, "write rows by index"),
    "index_select": Rule(_axis_op("index_select"), 1, "gather slices"),
    "gather": Rule(_axis_op("gather"), 1, "gather elements"),
    "index_add": Rule(_axis_op("index_add"), 1, "add slices by index"),
    "scatter": Rule(_scatter, 1, "scatter by index"),
    "scatter_add": Rule(_scatter, 1, "scatter-add by index"),
    "topk": Rule(_topk, 2, "top-k: a radix select and a bitonic sort of the k"),
    "sort": Rule(_sort, 2, "sort: an index fill and a bitonic sort (and device copies)"),
    "cumsum": Rule(_cumsum, 2, "prefix sum: CUB's scan-state init and scan"),
    "histc": Rule(_histc, 2, "histogram: a fill and the histogram kernel"),
    "cat": Rule(_cat, 1, "a concat copy"),
}
