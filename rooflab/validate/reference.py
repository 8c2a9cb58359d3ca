"""PyTorch references for every op kind: the ground truth each Triton kernel is checked against.

`run_graph(graph, inputs)` evaluates a whole rooflab graph eagerly and returns every tensor, so
each kernel of any schedule can be checked on the reference values of its own inputs.
Low-precision storage dtypes are emulated where torch has no such dtype: int4 weights are held as
int8 values in [-8, 7]; fp4/fp6 are not run on the GPU (no kernel path on the H200).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from rooflab.graph import Graph, Op
from rooflab.validate.common import Unsupported, scales_name

TORCH_DTYPES = {
    "fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16,
    "fp16": torch.float16, "fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
    "int64": torch.int64, "int32": torch.int32, "int8": torch.int8, "int4": torch.int8,
    "bool": torch.bool,
}


def torch_dtype(name: str) -> torch.dtype:
    if name not in TORCH_DTYPES:
        raise Unsupported(f"dtype {name} has no torch equivalent here")
    return TORCH_DTYPES[name]


def random_input(t, device: str, gen: torch.Generator) -> torch.Tensor:
    """Fresh random data (never zeros) of the tensor's shape and dtype."""
    dt = t.dtype.name
    if dt in ("int64", "int32"):      # ids: spread over any table (ops take them modulo its rows)
        return torch.randint(0, 1 << 30, t.shape, device=device, generator=gen, dtype=torch_dtype(dt))
    if dt == "int4":
        return torch.randint(-8, 8, t.shape, device=device, generator=gen, dtype=torch.int8)
    if dt == "int8":
        return torch.randint(-128, 128, t.shape, device=device, generator=gen, dtype=torch.int8)
    x = torch.randn(t.shape, device=device, generator=gen, dtype=torch.float32)
    return x.to(torch_dtype(dt))


def _act(kind: str, x: torch.Tensor, op: Op) -> torch.Tensor:
    if kind == "relu":
        return torch.relu(x)
    if kind == "gelu":
        return F.gelu(x, approximate="tanh")
    if kind == "silu":
        return F.silu(x)
    if kind == "sigmoid":
        return torch.sigmoid(x)
    if kind == "tanh":
        return torch.tanh(x)
    if kind == "exp":
        return torch.exp(x)
    if kind == "neg":
        return -x
    if kind == "sqrt":
        return torch.sqrt(x.abs())
    if kind == "rsqrt":
        return torch.rsqrt(x.abs() + 1.0)
    if kind == "square":
        return x * x
    if kind == "abs":
        return x.abs()
    if kind == "scale":
        return x * op.attrs.get("factor", 1.0)
    if kind in ("cast", "copy"):
        return x
    if kind == "causal_mask":
        sq, sk = x.shape[-2], x.shape[-1]
        keep = torch.ones(sq, sk, dtype=torch.bool, device=x.device).tril(sk - sq)
        return x.masked_fill(~keep, float("-inf"))
    raise Unsupported(f"no reference for {kind}")


def make_scales(t, group: int, device: str, gen: torch.Generator) -> torch.Tensor:
    """Random positive bf16 group scales [K // group, N] for int weights [K, N]."""
    k, n = t.shape
    return (torch.rand((-(-k // group), n), device=device, generator=gen) * 0.02 + 0.005
            ).to(torch.bfloat16)


def dequant_int(w: torch.Tensor, scales: torch.Tensor, group: int) -> torch.Tensor:
    return w.float() * scales.float().repeat_interleave(group, dim=0)[: w.shape[0]]


def eval_op(op: Op, ins: list[torch.Tensor], graph: Graph, env: dict | None = None
            ) -> list[torch.Tensor]:
    """Evaluate one op in fp32 (storage dtype on output), as the Triton kernels compute it."""
    out_t = graph.tensors[op.outputs[0]]
    kind = op.kind
    f = [x.float() if x.is_floating_point() or x.dtype == torch.int8 else x for x in ins]
    if kind in ("reshape", "permute"):
        y = ins[0].reshape(out_t.shape) if kind == "reshape" else ins[0].permute(*op.attrs["dims"])
        return [y]
    if kind in ("add", "sub", "mul", "div", "maximum", "minimum"):
        a, b = f
        y = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
             "maximum": torch.maximum, "minimum": torch.minimum}[kind](a, b)
    elif kind == "rotary":
        x, cos, sin = f
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        y = x * cos + rot * sin
    elif kind in ("sum", "mean", "max"):
        ax, keep = op.attrs.get("axis", -1), op.attrs.get("keepdim", False)
        x = f[0]
        y = x.sum(ax, keep) if kind == "sum" else x.mean(ax, keep) if kind == "mean" else x.amax(ax, keep)
    elif kind == "softmax":
        y = torch.softmax(f[0], dim=op.attrs.get("axis", -1))
    elif kind == "rmsnorm":
        x = f[0]
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + op.attrs.get("eps", 1e-5))
        if len(f) > 1:
            y = y * f[1]
    elif kind == "layernorm":
        y = F.layer_norm(f[0], (f[0].shape[-1],), f[1] if len(f) > 1 else None,
                         f[2] if len(f) > 2 else None, op.attrs.get("eps", 1e-5))
    elif kind == "matmul":
        a, b = f
        if op.attrs.get("transpose_a"):
            a = a.transpose(-1, -2)
        if op.attrs.get("transpose_b"):
            b = b.transpose(-1, -2)
        y = a @ b
    elif kind == "qmatmul":
        x, w = f
        if not graph.tensors[op.inputs[1]].dtype.is_float:
            w = dequant_int(ins[1], env[scales_name(op.inputs[1])], op.attrs.get("group_size", 128))
        if op.attrs.get("transpose_b"):
            w = w.t()
        y = x @ w
    elif kind == "attention":
        q, k, v = f
        hq, hkv = q.shape[1], k.shape[1]
        if hq != hkv:
            k = k.repeat_interleave(hq // hkv, dim=1)
            v = v.repeat_interleave(hq // hkv, dim=1)
        s = (q @ k.transpose(-1, -2)) * op.attrs.get("scale", 1 / math.sqrt(q.shape[-1]))
        if op.attrs.get("causal", True):
            sq, sk = s.shape[-2], s.shape[-1]
            keep = torch.ones(sq, sk, dtype=torch.bool, device=s.device).tril(sk - sq)
            s = s.masked_fill(~keep, float("-inf"))
        y = torch.softmax(s, -1) @ v
    elif kind == "embedding":
        table, ids = ins
        y = table.float()[ids.long() % table.shape[0]]
    elif kind == "dequantize" and "group_size" in op.attrs and not ins[0].is_floating_point():
        y = dequant_int(ins[0], env[scales_name(op.inputs[0])], op.attrs["group_size"])
    elif kind in ("quantize", "dequantize"):
        y = f[0]
    elif kind in ("all_reduce", "all_gather", "reduce_scatter", "opaque"):
        raise Unsupported(f"{kind} does not run on one GPU")
    else:
        y = _act(kind, f[0], op)
    return [y.to(torch_dtype(out_t.dtype.name)) if out_t.dtype.name != "int4" else y.to(torch.int8)]


def run_graph(graph: Graph, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every tensor of the graph, computed op by op from `inputs`."""
    env = dict(inputs)
    for op in graph.ops:
        outs = eval_op(op, [env[t] for t in op.inputs], graph, env)
        for name, val in zip(op.outputs, outs):
            env[name] = val.contiguous() if op.kind not in ("reshape", "permute") else val
    return env


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ over finite reference entries (masked scores are -inf)."""
    o, r = out.double(), ref.double()
    fin = torch.isfinite(r)
    if not torch.equal(torch.isfinite(o), fin):
        return float("inf")
    num = torch.linalg.vector_norm((o - r)[fin])
    den = torch.linalg.vector_norm(r[fin])
    return float(num / den) if den > 0 else float(num)


TOLERANCE = {"fp32": 1e-4, "tf32": 3e-3, "bf16": 1.6e-2, "fp16": 4e-3,
             "fp8_e4m3": 7e-2, "fp8_e5m2": 1.3e-1, "int32": 0.0, "int64": 0.0, "int8": 0.0}
