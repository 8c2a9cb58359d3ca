"""Gather op kinds: embedding lookup, which reads only the rows it gathers."""

from __future__ import annotations

from rooflab.ops.base import OpCost, OpKind, Role, ShapeError, TritonHook, register


def _infer(op, ins):
    table, ids = ins
    if len(table.shape) != 2:
        raise ShapeError(f"embedding table must be 2-D [vocab, dim], got {list(table.shape)}")
    if ids.dtype.is_float:
        raise ShapeError(f"embedding ids must be an integer dtype, got {ids.dtype.name}")
    return [(ids.shape + (table.shape[1],), table.dtype)]


def _cost(op, ins, outs):
    table, ids = ins
    rows_bytes = table.dtype.nbytes(ids.numel * table.shape[1])
    return OpCost(reads=((0, min(rows_bytes, table.nbytes)), (1, ids.nbytes)),
                  writes=((0, outs[0].nbytes),))


def _reference(op, xs, c):
    table, ids = c.raw
    # random ids spread over any table: take them modulo its rows
    return table.float()[ids.long() % table.shape[0]]


register(OpKind(
    "embedding", Role.GATHER, "gather", (2, 2),
    "embedding(table[V, D], ids[...]) -> [..., D]; reads only the rows it gathers.",
    _infer, _cost, {}, _reference, TritonHook(emit="embedding")))
