"""Collective op kinds: ring all-reduce, all-gather and reduce-scatter over `world_size` GPUs."""

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
    if op.kind == "all_reduce":
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
    link = {"all_reduce": 2 * (n - 1) * x.nbytes // n,
            "all_gather": (n - 1) * y.nbytes // n,
            "reduce_scatter": (n - 1) * x.nbytes // n}[op.kind]
    flops = x.numel * (n - 1) // n if op.kind != "all_gather" else 0
    reads, writes = read_write_once(ins, outs)
    return OpCost(vector_flops=flops, reads=reads, writes=writes, link_bytes=link)


_WORLD = Attr("int", "GPUs taking part", min=1, required=True)
_DOCS = {
    "all_reduce": "every GPU ends with the sum; each sends 2(n-1)/n of the tensor",
    "all_gather": "concatenate along `axis` (default 0); each sends (n-1)/n of the output",
    "reduce_scatter": "sum, then split along `axis` (default 0); each sends (n-1)/n of the input",
}
for _kind, _doc in _DOCS.items():
    _attrs = {"world_size": _WORLD}
    if _kind != "all_reduce":
        _attrs["axis"] = Attr("int", "the axis gathered or scattered (default 0)")
    register(OpKind(
        _kind, Role.COLLECTIVE, "collective", (1, 1),
        f"Ring {_kind} over `world_size` GPUs: {_doc}. HBM: reads its input, writes its output.",
        _infer, _cost, _attrs, None,
        TritonHook(unsupported=f"{_kind} does not run on one GPU")))
