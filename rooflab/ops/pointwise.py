"""Pointwise op kinds: unary and binary elementwise math, rotary embedding, (de)quantization.

FLOPs per output element: gelu in its tanh form 0.5x(1+tanh(c(x+0.044715x^3))) is 8; silu
x/(1+exp(-x)) is 4; causal_mask is one compare-select. Special-function-unit ops per element:
one for each activation, as fast kernels evaluate GELU, SiLU, sigmoid and tanh through one
tanh.approx (MUFU.TANH), exp through ex2.approx and rsqrt through rsqrt.approx; a division is a
reciprocal and a multiply.
"""

from __future__ import annotations

from rooflab.ops.base import (DTYPE_ATTR, Attr, OpCost, OpKind, Role, ShapeError, TritonHook,
                              broadcast, out_dtype, read_write_once, register)

# tanh.approx.f32 (MUFU.TANH, sm_75 and later, about 2^-11 relative error, far below bf16's)
# gives GELU (tanh form), sigmoid(x) = (1 + tanh(x/2)) / 2 and SiLU with one special-function op
# and no exp or division, as fast fused kernels compute them.
_TANH = ('tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [{z}], dtype=tl.float32, '
         'is_pure=True, pack=1)')


def _causal_mask_ref(op, xs, ctx):
    x = xs[0]
    sq, sk = x.shape[-2], x.shape[-1]
    keep = ctx.torch.ones(sq, sk, dtype=ctx.torch.bool, device=x.device).tril(sk - sq)
    return x.masked_fill(~keep, float("-inf"))


# kind: (FLOPs per element, SFU ops per element, Triton hook, reference, extra attributes, doc)
_UNARY = {
    "relu": (1, 0, TritonHook(expr="tl.maximum({x}, 0.0)"),
             lambda op, xs, c: c.torch.relu(xs[0]), {}, "max(x, 0)"),
    "gelu": (8, 1, TritonHook(expr="0.5 * {x} * (1.0 + " + _TANH.format(
                 z="0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})") + ")"),
             lambda op, xs, c: c.F.gelu(xs[0], approximate="tanh"), {}, "GELU, tanh form"),
    "silu": (4, 1, TritonHook(expr="{x} * (0.5 + 0.5 * " + _TANH.format(z="0.5 * {x}") + ")"),
             lambda op, xs, c: c.F.silu(xs[0]), {}, "x * sigmoid(x)"),
    "sigmoid": (3, 1, TritonHook(expr="0.5 + 0.5 * " + _TANH.format(z="0.5 * {x}")),
                lambda op, xs, c: c.torch.sigmoid(xs[0]), {}, "1 / (1 + exp(-x))"),
    "tanh": (1, 1, TritonHook(expr=_TANH.format(z="{x}")),
             lambda op, xs, c: c.torch.tanh(xs[0]), {}, "tanh(x)"),
    "exp": (1, 1, TritonHook(expr="tl.exp({x})"),
            lambda op, xs, c: c.torch.exp(xs[0]), {}, "exp(x)"),
    "neg": (1, 0, TritonHook(expr="-{x}"), lambda op, xs, c: -xs[0], {}, "-x"),
    # the validation kernels take sqrt and rsqrt of |x| (+1) so random inputs stay finite
    "sqrt": (1, 1, TritonHook(expr="tl.sqrt(tl.abs({x}))"),
             lambda op, xs, c: c.torch.sqrt(xs[0].abs()), {}, "sqrt(x)"),
    "rsqrt": (1, 1, TritonHook(expr="tl.rsqrt(tl.abs({x}) + 1.0)"),
              lambda op, xs, c: c.torch.rsqrt(xs[0].abs() + 1.0), {}, "1 / sqrt(x)"),
    "square": (1, 0, TritonHook(expr="{x} * {x}"), lambda op, xs, c: xs[0] * xs[0], {}, "x * x"),
    "abs": (1, 0, TritonHook(expr="tl.abs({x})"), lambda op, xs, c: xs[0].abs(), {}, "|x|"),
    "scale": (1, 0, TritonHook(emit="scale"),
              lambda op, xs, c: xs[0] * op.attrs.get("factor", 1.0),
              {"factor": Attr("float", "the constant multiplier (default 1)")}, "x * factor"),
    "causal_mask": (1, 0, TritonHook(emit="causal_mask"), _causal_mask_ref, {},
                    "scores [..., Sq, Sk] with keys after each (end-aligned) query set to -inf"),
    "cast": (0, 0, TritonHook(emit="cast"), lambda op, xs, c: xs[0], {},
             "convert to `dtype` (bytes only)"),
    "copy": (0, 0, TritonHook(expr="{x}"), lambda op, xs, c: xs[0], {}, "a copy (bytes only)"),
    "foreach_copy": (0, 0, TritonHook(expr="{x}"), lambda op, xs, c: xs[0], {},
                     "a copy by torch._foreach_copy_ (bytes only): ATen's multi_tensor_apply "
                     "kernel, which runs slower than copy_'s; torch.compile's reduce-overhead "
                     "brings its inputs into its CUDA graph's buffers with it"),
}


def _unary_infer(op, ins):
    x = ins[0]
    return [(x.shape, out_dtype(op, x.dtype))]


def _unary_cost(flops: int, sfu: int):
    def cost(op, ins, outs):
        reads, writes = read_write_once(ins, outs)
        n = outs[0].numel
        return OpCost(vector_flops=flops * n, reads=reads, writes=writes, sfu_ops=sfu * n)
    return cost


for _kind, (_flops, _sfu, _hook, _ref, _attrs, _doc) in _UNARY.items():
    register(OpKind(
        _kind, Role.POINTWISE, "pointwise", (1, 1),
        f"y = {_doc}, elementwise; `dtype` sets the output dtype. {_flops} FLOP/element.",
        _unary_infer, _unary_cost(_flops, _sfu), {"dtype": DTYPE_ATTR, **_attrs}, _ref, _hook,
        flops_per_element=_flops))


# ----------------------------------------------------------------------------- binary
_BINARY = {
    "add": ("{a} + {b}", lambda c: c.torch.add),
    "sub": ("{a} - {b}", lambda c: c.torch.sub),
    "mul": ("{a} * {b}", lambda c: c.torch.mul),
    "div": ("{a} / {b}", lambda c: c.torch.div),
    "maximum": ("tl.maximum({a}, {b})", lambda c: c.torch.maximum),
    "minimum": ("tl.minimum({a}, {b})", lambda c: c.torch.minimum),
}


def _binary_infer(op, ins):
    a, b = ins
    return [(broadcast(a.shape, b.shape), out_dtype(op, a.dtype))]


def _binary_cost(op, ins, outs):
    reads, writes = read_write_once(ins, outs)
    n = outs[0].numel
    return OpCost(vector_flops=n, reads=reads, writes=writes, sfu_ops=n if op.kind == "div" else 0)


def _binary_ref(torch_fn):
    return lambda op, xs, c: torch_fn(c)(xs[0], xs[1])


for _kind, (_expr, _fn) in _BINARY.items():
    register(OpKind(
        _kind, Role.POINTWISE, "pointwise", (2, 2),
        f"y = a {_kind} b with NumPy broadcasting; a broadcast operand is read once. 1 FLOP/element.",
        _binary_infer, _binary_cost, {"dtype": DTYPE_ATTR}, _binary_ref(_fn),
        TritonHook(expr=_expr), flops_per_element=1))


# ----------------------------------------------------------------------------- rotary
def _rotary_infer(op, ins):
    x, cos, sin = ins
    if broadcast(x.shape, cos.shape, sin.shape) != x.shape:
        raise ShapeError(f"cos {list(cos.shape)} and sin {list(sin.shape)} must broadcast "
                         f"to x {list(x.shape)}")
    if x.shape[-1] % 2:
        raise ShapeError(f"rotary needs an even last dimension, got {x.shape[-1]}")
    return [(x.shape, x.dtype)]


def _rotary_cost(op, ins, outs):
    reads, writes = read_write_once(ins, outs)
    return OpCost(vector_flops=3 * outs[0].numel, reads=reads, writes=writes)


def _rotary_ref(op, xs, c):
    x, cos, sin = xs
    half = x.shape[-1] // 2
    rot = c.torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rot * sin


register(OpKind(
    "rotary", Role.POINTWISE, "pointwise", (3, 3),
    "Rotary embedding y = x*cos + rotate_half(x)*sin; cos/sin broadcast to x. 3 FLOPs/elem.",
    _rotary_infer, _rotary_cost, {}, _rotary_ref, TritonHook(emit="rotary"), flops_per_element=3))


# ----------------------------------------------------------------------------- (de)quantize
def _quant_infer(op, ins):
    return [(ins[0].shape, out_dtype(op, ins[0].dtype))]


def _quant_cost(op, ins, outs):
    reads, writes = read_write_once(ins, outs)
    x = ins[0]
    if op.kind == "dequantize" and not x.dtype.is_float and "group_size" in op.attrs:
        # int weights [K, ...] with one bf16 scale per `group_size` rows along K
        groups = -(-x.shape[0] // op.attrs["group_size"])
        reads = ((0, x.nbytes + 2 * groups * (x.numel // x.shape[0])),)
    per = 2 if op.kind == "quantize" else 1
    dequant = x.numel if op.kind == "dequantize" and not x.dtype.is_float else 0
    return OpCost(vector_flops=per * outs[0].numel, reads=reads, writes=writes,
                  dequant_elems=dequant)


def _dequant_ref(op, xs, c):
    if "group_size" in op.attrs and not c.raw[0].is_floating_point():
        return c.dequant(0, op.attrs["group_size"])
    return xs[0]


_CONVERT_TO = Attr("dtype", "the dtype it converts to", required=True)
register(OpKind(
    "quantize", Role.POINTWISE, "quantized", (1, 1),
    "Convert to `dtype`, block scales included in the bytes; 2 FLOPs/elem (amax, scale).",
    _quant_infer, _quant_cost, {"dtype": _CONVERT_TO}, lambda op, xs, c: xs[0],
    TritonHook(emit="cast"), flops_per_element=2))
register(OpKind(
    "dequantize", Role.POINTWISE, "quantized", (1, 1),
    "Convert to `dtype`; 1 FLOP/elem (scale). Dequantizing int4/int8 weights [K, ...] with "
    "`group_size` also reads one bf16 scale per group of K rows.",
    _quant_infer, _quant_cost,
    {"dtype": _CONVERT_TO, "group_size": Attr("int", "weights along K sharing one scale", min=1)},
    _dequant_ref, TritonHook(expr="{x}"), flops_per_element=1))
