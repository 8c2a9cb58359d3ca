"""The opaque op kind: a library call or data-dependent code with explicit FLOPs and bytes."""

from __future__ import annotations

from rooflab.ops.base import (OPAQUE_TRAFFIC, Attr, OpCost, OpKind, Role, ShapeError,
                              TritonHook, register)


def _infer(op, ins):
    raise ShapeError("opaque ops must declare their outputs in `tensors:`")


def _cost(op, ins, outs):
    # numbers, or arrays over a sweep's grid (a traced opaque op's sizes follow the batch)
    flops = op.attrs.get("flops", 0)
    total = op.attrs.get("bytes", 0)
    fam = op.attrs.get("tensor_dtype")
    # The declared bytes are the op's whole HBM traffic, carried as one read of a private
    # pseudo tensor (position OPAQUE_TRAFFIC); an opaque op never shares a kernel.
    return OpCost(tensor_flops=flops if fam else 0, tensor_dtype=fam,
                  vector_flops=0 if fam else flops,
                  reads=((OPAQUE_TRAFFIC, total),), writes=())


register(OpKind(
    "opaque", Role.OPAQUE, "opaque", (0, 16),
    "A library call or data-dependent code with explicit `flops`, `bytes` (HBM, total) and "
    "optional `tensor_dtype` (tensor-core family; vector fp32 otherwise); outputs need "
    "declared shapes. Always a fusion barrier.",
    _infer, _cost,
    {"flops": Attr("int", "FLOPs it performs", min=0),
     "bytes": Attr("int", "HBM bytes it reads and writes, in all", min=0),
     "tensor_dtype": Attr("family", "tensor-core family its FLOPs run at (default: fp32 vector)"),
     "reason": Attr("str", "why it is opaque (shown in reports)")},
    None, TritonHook(unsupported="an opaque op has no kernel to run")))
