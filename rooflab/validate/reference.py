"""Runs the PyTorch references of the op kinds (rooflab.ops): the ground truth each Triton kernel
is checked against.

`run_graph(graph, inputs)` evaluates a whole rooflab graph eagerly and returns every tensor, so
each kernel of any schedule can be checked on the reference values of its own inputs.
Low-precision storage dtypes are emulated where torch has no such dtype: int4 weights are held as
int8 values in [-8, 7]; fp4/fp6 are not run on the GPU (no kernel path on the H200).
"""

from __future__ import annotations


import torch
import torch.nn.functional as F

from rooflab.graph import Graph, Op
from rooflab.ops import KINDS, Role
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


def make_scales(t, group: int, device: str, gen: torch.Generator) -> torch.Tensor:
    """Random positive bf16 group scales [K // group, N] for int weights [K, N]."""
    k, n = t.shape
    return (torch.rand((-(-k // group), n), device=device, generator=gen) * 0.02 + 0.005
            ).to(torch.bfloat16)


def dequant_int(w: torch.Tensor, scales: torch.Tensor, group: int) -> torch.Tensor:
    return w.float() * scales.float().repeat_interleave(group, dim=0)[: w.shape[0]]


class _Context:
    """What an op kind's reference may use besides its fp32 inputs (rooflab.ops.OpKind)."""
    torch = torch
    F = F

    def __init__(self, op: Op, ins: list[torch.Tensor], graph: Graph, env: dict | None):
        self.op, self.raw, self.env, self.graph = op, ins, env, graph
        self.in_dtypes = [graph.tensors[t].dtype for t in op.inputs]
        self.out_shape = graph.tensors[op.outputs[0]].shape

    def dequant(self, position: int, group: int) -> torch.Tensor:
        """Input `position` (int weights [K, N]) times its bf16 group scales, in fp32."""
        scales = self.env[scales_name(self.op.inputs[position])]
        return dequant_int(self.raw[position], scales, group)


def eval_op(op: Op, ins: list[torch.Tensor], graph: Graph, env: dict | None = None
            ) -> list[torch.Tensor]:
    """Evaluate one op in fp32 (storage dtype on output), as the Triton kernels compute it;
    views return a view of their input. One tensor per output (a reference of a kind with
    several outputs returns a list)."""
    kind = KINDS[op.kind]
    if kind.reference is None:
        raise Unsupported(kind.triton.unsupported or f"no reference for {op.kind}")
    ctx = _Context(op, ins, graph, env)
    if kind.role is Role.VIEW:
        y = kind.reference(op, ins, ctx)
        return list(y) if isinstance(y, (list, tuple)) else [y]
    f = [x.float() if x.is_floating_point() or x.dtype == torch.int8 else x for x in ins]
    y = kind.reference(op, f, ctx)
    ys = list(y) if isinstance(y, (list, tuple)) else [y]
    stored = []
    for val, name in zip(ys, op.outputs):
        dt = graph.tensors[name].dtype.name
        stored.append(val.to(torch_dtype(dt)) if dt != "int4" else val.to(torch.int8))
    return stored


def run_graph(graph: Graph, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Every tensor of the graph, computed op by op from `inputs`."""
    env = dict(inputs)
    for op in graph.ops:
        outs = eval_op(op, [env[t] for t in op.inputs], graph, env)
        for name, val in zip(op.outputs, outs):
            env[name] = val.contiguous() if KINDS[op.kind].role is not Role.VIEW else val
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
