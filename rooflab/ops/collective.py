"""Collective op kinds over `world_size` GPUs: all-reduce, all-gather, reduce-scatter, all-to-all,
and the point-to-point send/recv between pipeline stages. Their time is rooflab.collectives'
(latency per step plus bus bytes over the path's bus bandwidth, fastest path of the spec)."""

from __future__ import annotations

from rooflab.graph import Op
from rooflab.ops.base import (Attr, OpCost, OpKind, Role, ShapeError, TritonHook, axis_of,
                              read_write_once, register)


def _world(op: Op) -> int:
    n = op.attrs.get("world_size")
    if not isinstance(n, int) or n < 1:
        raise ShapeError("collectives need `world_size:` (a positive integer or parameter)")
    return n


def _infer(op, ins):
    n = _world(op)
    x = ins[0]
    if op.kind in ("all_reduce", "all_to_all", "send_recv"):
        return [(x.shape, x.dtype)]
    ax = axis_of(op, x) if "axis" in op.attrs else 0
    shape = list(x.shape)
    if op.kind == "all_gather":
        shape[ax] *= n
    else:
        if shape[ax] % n:
            raise ShapeError(f"reduce_scatter axis {ax} of size {shape[ax]} does not "
                             f"divide by world_size {n}")
        shape[ax] //= n
    return [(tuple(shape), x.dtype)]


def _cost(op, ins, outs):
    n = _world(op)
    x, y = ins[0], outs[0]
    # nccl-tests' size: the gathered output for all_gather, the input otherwise
    size = y.nbytes if op.kind == "all_gather" else x.nbytes
    link = {"all_reduce": 2 * (n - 1) * size // n, "send_recv": size}.get(
        op.kind, (n - 1) * size // n)
    flops = x.numel * (n - 1) // n if op.kind in ("all_reduce", "reduce_scatter") else 0
    reads, writes = read_write_once(ins, outs)
    return OpCost(vector_flops=flops, reads=reads, writes=writes, link_bytes=link,
                  collective=(op.kind, size, n, bool(op.attrs.get("across_nodes", False))))


_WORLD = Attr("int", "GPUs taking part", min=1, required=True)
_ACROSS = Attr("bool", "the GPUs are on several nodes: priced on the spec's network paths "
                       "(default: only when world_size is over the GPUs of one node)")
_DOCS = {
    "all_reduce": "every GPU ends with the sum; each sends 2(n-1)/n of the tensor",
    "all_gather": "concatenate along `axis` (default 0); each sends (n-1)/n of the output",
    "reduce_scatter": "sum, then split along `axis` (default 0); each sends (n-1)/n of the input",
    "all_to_all": "each GPU sends 1/n of its tensor to every other (MoE dispatch and combine); "
                  "each sends (n-1)/n of it",
    "send_recv": "the tensor goes to the next GPU (a pipeline stage boundary); `world_size` is "
                 "the GPUs the pair spans (2 within a node; more than a node's GPUs: across)",
}
for _kind, _doc in _DOCS.items():
    _attrs = {"world_size": _WORLD, "across_nodes": _ACROSS}
    if _kind in ("all_gather", "reduce_scatter"):
        _attrs["axis"] = Attr("int", "the axis gathered or scattered (default 0)")
    register(OpKind(
        _kind, Role.COLLECTIVE, "collective", (1, 1),
        f"{_kind} over `world_size` GPUs: {_doc}. HBM: reads its input, writes its output.",
        _infer, _cost, _attrs, None,
        TritonHook(unsupported=f"{_kind} does not run on one GPU")))
