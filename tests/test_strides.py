"""Strides: derived through views and pointwise ops, whether ATen vectorises an
elementwise op over them, and the families strided ops are priced as. Strides worked out by
hand for the shapes below."""

import pytest

from rooflab import api
from rooflab.cost import op_families
from rooflab.strides import is_dense, strides_of, vectorised

# a rotary embedding on q [1, 512, 16, 128] read as [1, 16, 512, 128] (transposed heads)
ROPE = """
name: rope
tensors:
  q: {shape: [1, 512, 16, 128], dtype: bf16}
  cos: {shape: [512, 128], dtype: bf16}
ops:
  - {kind: permute, name: heads, dims: [0, 2, 1, 3], inputs: [q], outputs: [qh]}
  - {kind: slice, name: lo, axis: -1, start: 0, end: 64, inputs: [qh], outputs: [q1]}
  - {kind: slice, name: hi, axis: -1, start: 64, inputs: [qh], outputs: [q2]}
  - {kind: neg, name: neg, inputs: [q2], outputs: [nq2]}
  - {kind: concat, name: rot, axis: -1, inputs: [nq2, q1], outputs: [r]}
  - {kind: mul, name: qcos, inputs: [qh, cos], outputs: [a]}
  - {kind: add, name: add, inputs: [a, r], outputs: [out]}
  - {kind: neg, name: neg_heads, inputs: [qh], outputs: [nqh]}
  - {kind: reshape, name: flat, shape: [16, 65536], inputs: [qh], outputs: [f]}
  - {kind: concat, name: cat_rows, axis: 0, inputs: [nq2, nq2], outputs: [cc]}
outputs: [out, nqh, f, cc]
"""


@pytest.fixture
def rope(write_yaml):
    return api.load_workload(write_yaml(ROPE))


def test_strides_through_views_and_pointwise_ops(rope):
    s = strides_of(rope)
    assert s["q"] == (1048576, 2048, 128, 1)              # row-major [1, 512, 16, 128]
    assert s["qh"] == (1048576, 128, 2048, 1)             # the permute swaps 512 and 16
    assert s["q2"] == (1048576, 128, 2048, 1)             # a slice keeps its root's strides
    # neg of the slice writes a dense [1, 16, 512, 64] in the slice's order (seq outside heads)
    assert s["nq2"] == (524288, 64, 1024, 1)
    assert s["r"] == (1048576, 65536, 128, 1)             # a cat's output is row-major
    assert s["a"] == (1048576, 128, 2048, 1)              # q * cos keeps the transposed order
    assert s["f"] is None                                 # a reshape of a transposed view


def test_dense_and_vectorised():
    assert is_dense((1, 16, 512, 128), (1048576, 128, 2048, 1))
    assert not is_dense((1, 16, 512, 64), (1048576, 128, 2048, 1))       # half of each row
    assert not is_dense((4,), None)
    shape = (16, 512, 128)
    transposed, rows = (128, 2048, 1), (65536, 128, 1)
    assert vectorised([(shape, transposed), (shape, transposed)])
    assert not vectorised([(shape, transposed), (shape, rows)])
    assert vectorised([((1, 8), (8, 1)), ((1, 8), (99, 1))])              # size-1 dims aside


def test_strided_ops_take_the_strided_kernels(rope):
    families = dict(zip((op.name for op in rope.ops), op_families(rope)))
    assert families["neg"] == "elementwise_broadcast"          # reads a slice
    assert families["qcos"] == "elementwise_broadcast"         # cos broadcasts
    assert families["add"] == "elementwise_broadcast"          # transposed + row-major
    assert families["neg_heads"] == "elementwise"              # dense in, same order out
    assert families["rot"] == "cat_strided"                    # q1 is a slice
    assert families["cat_rows"] == "cat_strided"               # nq2 is dense, not row-major


def test_traced_sdpa_output_is_laid_out_as_cudnn_writes_it():
    torch = pytest.importorskip("torch")
    from rooflab.trace import trace_module

    class Attn(torch.nn.Module):
        def forward(self, q, k, v):
            b, s, h, d = q.shape
            o = torch.nn.functional.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            return o.transpose(1, 2).reshape(b, s, h * d)

    x = torch.empty(1, 64, 4, 32, dtype=torch.bfloat16, device="meta")
    graph = trace_module(Attn(), [x, x, x], name="attn")
    # cuDNN writes the output in the query's [b, s, h, d] order: the transpose back is free
    assert [op.kind for op in graph.ops if op.launches] == ["attention"]
    (o,) = [op.outputs[0] for op in graph.ops if op.kind == "attention"]
    assert graph.tensors[o].strides == (8192, 32, 128, 1)
