"""Mixture-of-experts op kinds: the grouped expert GEMM (torch._grouped_mm).

Which expert each token goes to is data-dependent. The op takes the tokens each expert
receives as a histogram (`tokens_per_expert`), or assumes balanced routing: T/E rows each, the
remainder spread one row over the first experts. Rows are grouped by expert, contiguous.
"""

from __future__ import annotations

from rooflab.graph import Op
from rooflab.ops.base import (DTYPE_ATTR, Attr, OpCost, OpKind, Role, ShapeError, TritonHook,
                              out_dtype, register)
from rooflab.ops.gemm import gemm_family


def tokens_per_expert(op: Op, t: int, e: int) -> list[int]:
    """Rows each of `e` experts receives out of `t`: the op's histogram, or balanced routing."""
    given = op.attrs.get("tokens_per_expert")
    if given is not None:
        if len(given) != e:
            raise ShapeError(f"tokens_per_expert has {len(given)} entries for {e} experts")
        if sum(given) != t:
            raise ShapeError(f"tokens_per_expert sums to {sum(given)}, x has {t} rows")
        return list(given)
    return [t // e + (1 if i < t % e else 0) for i in range(e)]


def _infer(op, ins):
    x, w = ins
    if len(x.shape) != 2 or len(w.shape) != 3:
        raise ShapeError(f"grouped_matmul takes x [T, K] and w [E, K, N], got "
                         f"{list(x.shape)} and {list(w.shape)}")
    if x.shape[1] != w.shape[1]:
        raise ShapeError(f"inner dimensions differ: x {list(x.shape)} has K={x.shape[1]}, "
                         f"w {list(w.shape)} has K={w.shape[1]}")
    gemm_family(x.dtype, w.dtype, op)
    tokens_per_expert(op, x.shape[0], w.shape[0])
    return [((x.shape[0], w.shape[2]), out_dtype(op, x.dtype))]


def _cost(op, ins, outs):
    x, w = ins
    t, k = x.shape
    e, _, n = w.shape
    counts = tokens_per_expert(op, t, e)
    active = sum(1 for c in counts if c)
    fam = gemm_family(x.dtype, w.dtype, op)
    flops = 2 * t * k * n
    # only the experts that receive a row have their weights read
    reads = ((0, x.nbytes), (1, w.dtype.nbytes(active * k * n)))
    # Tiles: one GEMM of the mean rows of an active expert per active expert, (ceil(T /
    # active), N, active); NB: an uneven histogram has a few more row tiles than this
    mnb = (-(-t // active), n, active)
    if fam is None:
        return OpCost(vector_flops=flops, reads=reads, writes=((0, outs[0].nbytes),),
                      gemm_mnb=mnb)
    return OpCost(tensor_flops=flops, tensor_dtype=fam, reads=reads,
                  writes=((0, outs[0].nbytes),), gemm_mnb=mnb)


def _reference(op, xs, c):
    x, w = xs
    out = x.new_zeros((x.shape[0], w.shape[2]))
    at = 0
    for e, rows in enumerate(tokens_per_expert(op, x.shape[0], w.shape[0])):
        out[at:at + rows] = x[at:at + rows] @ w[e]
        at += rows
    return out


register(OpKind(
    "grouped_matmul", Role.GEMM, "gemm", (2, 2),
    "Grouped expert GEMM (torch._grouped_mm): x [T, K] rows grouped by expert, w [E, K, N]; "
    "expert e multiplies its rows by w[e]; out [T, N]. Rows per expert: `tokens_per_expert` "
    "(E entries summing to T), default balanced (T/E each, remainder spread). FLOPs 2*T*K*N "
    "on tensor cores at x's dtype; reads x, the weights of experts that get a row, writes out.",
    _infer, _cost,
    {"tokens_per_expert": Attr("ints", "rows each expert receives (default balanced)", min=0),
     "tf32": Attr("bool", "fp32 operands run on tf32 tensor cores"), "dtype": DTYPE_ATTR},
    _reference, TritonHook(unsupported="no Triton template for grouped_matmul: its PyTorch "
                                       "reference is checked, the kernel is not timed")))
