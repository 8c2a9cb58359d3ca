"""How eager PyTorch lays out each tensor of a graph, and whether ATen's elementwise kernel can
vectorise over an op's operands.

ATen runs a pointwise op with its vectorised kernel only when every operand is dense and all
are laid out alike; otherwise (a slice, or a transposed view read beside a row-major tensor)
it runs the kernel that computes each operand's offset from its strides, the one a broadcast
runs (the profiler names `vectorized_elementwise_kernel<8, ...>` for the first and
`elementwise_kernel<128, 4, ...>` for the second). A decoder layer's rotary embedding shows it:
the neg of a sliced half of q and the add of a product laid out like the transposed q to a
row-major one take the strided kernel.

A traced graph carries every tensor's strides (the meta device lays tensors out as CUDA does).
A workload's are derived here: its inputs row-major, a view's through its kind's `strides`
rule, a pointwise op's output dense in the order of its first full-size input (TensorIterator
allocates outputs in the stride order of its inputs), any other output row-major.
"""

from __future__ import annotations

from rooflab.graph import Graph, Tensor
from rooflab.ops import KINDS, Role
from rooflab.ops.base import row_major, same_layout

Strides = tuple[int, ...]


def strides_of(graph: Graph) -> dict[str, Strides | None]:
    """Each tensor of `graph` -> its strides in elements (None: a view with no strided form,
    such as a reshape of a transposed tensor, which PyTorch would copy)."""
    derived: dict[str, Strides | None] = {}

    def get(name: str) -> Strides | None:
        if name in derived:
            return derived[name]
        t = graph.tensors[name]
        return t.strides if t.strides is not None else row_major(t.shape)

    for op in graph.ops:
        kind = KINDS[op.kind]
        outs = [graph.tensors[o] for o in op.outputs]
        if all(t.strides is not None for t in outs):
            continue
        if kind.role is Role.VIEW and kind.strides is not None:
            x = graph.tensors[op.inputs[0]]
            xs = get(op.inputs[0])
            made = kind.strides(op, x, xs) if xs is not None else [None] * len(outs)
        elif kind.role is Role.POINTWISE:
            made = [_pointwise_output(t.shape, [(graph.tensors[i], get(i)) for i in op.inputs])
                    for t in outs]
        else:
            made = [row_major(t.shape) for t in outs]
        for t, s in zip(outs, made):
            if t.strides is None:
                derived[t.name] = s
    return {name: get(name) for name in graph.tensors}


def is_dense(shape: tuple[int, ...], strides: Strides | None) -> bool:
    """Whether `strides` lay a tensor of `shape` out without gaps or overlaps (row-major, or a
    permutation of it)."""
    if strides is None:
        return False
    dims = sorted((s, n) for n, s in zip(shape, strides) if n != 1)
    step = 1
    for s, n in dims:
        if s != step:
            return False
        step *= n
    return True


def vectorised(operands: list[tuple[tuple[int, ...], Strides | None]]) -> bool:
    """Whether ATen's elementwise kernel runs vectorised over `operands`, (shape, strides) of
    a pointwise op's full-size inputs and its outputs: each dense, and all laid out alike."""
    first = operands[0][1]
    return all(is_dense(shape, s) and same_layout(shape, s, first) for shape, s in operands)


def _pointwise_output(shape: tuple[int, ...], ins: list[tuple[Tensor, Strides | None]]) -> Strides:
    for t, s in ins:
        if t.shape == shape and s is not None and 0 not in s:
            return dense_in_order(shape, s)
    return row_major(shape)


def dense_in_order(shape: tuple[int, ...], strides: Strides) -> Strides:
    """Dense strides for `shape` whose dimensions run in the order of `strides` (largest
    outermost; ties in dimension order)."""
    order = sorted(range(len(shape)), key=lambda d: (-strides[d], d))
    out = [0] * len(shape)
    step = 1
    for d in reversed(order):
        out[d] = step
        step *= shape[d]
    return tuple(out)
