"""slice / split (views of part of a tensor) and concat (rooflab/ops/slicing.py): shapes, and the
bytes a kernel reads through them, worked out by hand (unfused, H200)."""

import pytest

import numpy as np

from rooflab import api, grid, ops, workload
from rooflab.errors import RooflabError

BF16 = 2
X = "x: {shape: [4, 256], dtype: bf16}"       # 4 * 256 * 2 = 2048 bytes; one half 1024


def _load(write_yaml, ops_text: str, tensors: str = X):
    return workload.load(str(write_yaml(f"name: t\ntensors: {{{tensors}}}\nops:\n{ops_text}")))


def test_slice_shapes_clip_like_python(write_yaml):
    g = _load(write_yaml, """
  - {kind: slice, name: a, axis: 1, end: 100, inputs: [x], outputs: [a]}
  - {kind: slice, name: b, axis: -1, start: -56, end: 9223372036854775807, inputs: [x], outputs: [b]}
  - {kind: slice, name: c, axis: 1, start: 1, step: 2, inputs: [x], outputs: [c]}
""")
    assert [g.tensors[t].shape for t in "abc"] == [(4, 100), (4, 56), (4, 128)]


def test_split_makes_one_output_per_size_and_every_part_maps_to_the_root(write_yaml):
    g = _load(write_yaml, """
  - {kind: split, name: s, axis: 1, sizes: [64, 64, 128], inputs: [x], outputs: [p, q, r]}
  - {kind: reshape, name: rr, shape: [512], inputs: [r], outputs: [r2]}
""")
    assert [g.tensors[t].shape for t in "pqr"] == [(4, 64), (4, 64), (4, 128)]
    assert ops.view_roots(g) == {"p": "x", "q": "x", "r": "x", "r2": "x"}
    regions = ops.view_regions(g)
    assert regions["p"] == ("x", (((4, 256), 1, 0, 64, 1),))
    assert regions["r2"] == regions["r"] == ("x", (((4, 256), 1, 128, 256, 1),))


@pytest.mark.parametrize("views,reader,read", [
    # two halves of x read by one kernel: both halves, 2 * 1024
    ("{kind: slice, name: a, axis: 1, end: 128, inputs: [x], outputs: [a]}\n"
     "  - {kind: slice, name: b, axis: 1, start: 128, inputs: [x], outputs: [b]}",
     "{kind: add, name: k, inputs: [a, b], outputs: [y]}", 2048),
    ("{kind: split, name: s, axis: 1, sizes: [128, 128], inputs: [x], outputs: [a, b]}",
     "{kind: add, name: k, inputs: [a, b], outputs: [y]}", 2048),
    # one half: only its bytes
    ("{kind: slice, name: a, axis: 1, end: 128, inputs: [x], outputs: [a]}",
     "{kind: relu, name: k, inputs: [a], outputs: [y]}", 1024),
    # the same half through two views: read once
    ("{kind: slice, name: a, axis: 1, end: 128, inputs: [x], outputs: [a]}\n"
     "  - {kind: split, name: s, axis: 1, sizes: [128, 128], inputs: [x], outputs: [a2, b2]}",
     "{kind: mul, name: k, inputs: [a, a2], outputs: [y]}", 1024),
    # all of x and a half of it: the half adds nothing
    ("{kind: slice, name: a, axis: 1, end: 128, inputs: [x], outputs: [a]}",
     "{kind: concat, name: k, axis: 1, inputs: [x, a], outputs: [y]}", 2048),
])
def test_a_kernel_reads_each_distinct_slice_once(unfused, views, reader, read):
    got = unfused(f"name: t\ntensors: {{{X}}}\nops:\n  - {views}\n  - {reader}\n")["k"]
    assert got.hbm_read_bytes == read


def test_slices_of_a_made_tensor_depend_on_its_producer(write_yaml, h200):
    from rooflab import api
    pred = api.predict(write_yaml(f"""
        name: t
        tensors: {{{X}}}
        ops:
          - {{kind: relu, name: r, inputs: [x], outputs: [h]}}
          - {{kind: split, name: s, axis: 1, sizes: [128, 128], inputs: [h], outputs: [a, b]}}
          - {{kind: mul, name: k, inputs: [a, b], outputs: [y]}}
    """), h200, "unfused", "graph")
    k = {c.name: c for c in pred.kernels}
    assert list(k) == ["r", "k"]
    assert k["r"].hbm_write_bytes == 2048          # h is read by k through both halves
    assert k["k"].hbm_read_bytes == 2048


def test_concat_copies_its_inputs(unfused, write_yaml):
    text = """
        name: t
        tensors: {a: {shape: [4, 100], dtype: bf16}, b: {shape: [4, 28], dtype: bf16}}
        ops: [{kind: concat, name: k, axis: -1, inputs: [a, b], outputs: [y]}]
    """
    assert workload.load(str(write_yaml(text))).tensors["y"].shape == (4, 128)
    got = unfused(text)["k"]
    assert (got.hbm_read_bytes, got.hbm_write_bytes, got.flops) == (
        4 * 100 * BF16 + 4 * 28 * BF16, 4 * 128 * BF16, 0)          # 800 + 224, 1024


@pytest.mark.parametrize("op,problem", [
    ("{kind: slice, axis: 1, start: 300, inputs: [x], outputs: [o]}", "is empty"),
    ("{kind: slice, axis: 2, inputs: [x], outputs: [o]}", "axis 2 out of range"),
    ("{kind: slice, axis: 1, step: 0, inputs: [x], outputs: [o]}", "`step` must be at least 1"),
    ("{kind: split, axis: 1, sizes: [100, 100], inputs: [x], outputs: [o, p]}", "sum to 200"),
    ("{kind: split, axis: 1, sizes: [128, 128], inputs: [x], outputs: [o]}", "split has 2 output(s), got 1"),
    ("{kind: concat, axis: 0, inputs: [x, w], outputs: [o]}", "does not match x"),
    ("{kind: concat, inputs: [x], outputs: [o]}", "concat needs `axis:`"),
])
def test_bad_slicing_is_a_one_line_error(write_yaml, op, problem):
    f = write_yaml(f"name: t\ntensors: {{{X}, w: {{shape: [4, 128], dtype: bf16}}}}\nops:\n  - {op}\n")
    with pytest.raises(RooflabError) as e:
        workload.load(str(f))
    assert problem in str(e.value) and "\n" not in str(e.value)


def test_references_match_torch_on_cpu(write_yaml):
    torch = pytest.importorskip("torch")
    from rooflab.validate import reference
    g = _load(write_yaml, """
  - {kind: slice, name: a, axis: 1, start: 3, end: 200, step: 5, inputs: [x], outputs: [a]}
  - {kind: split, name: s, axis: 0, sizes: [1, 3], inputs: [x], outputs: [p, q]}
  - {kind: concat, name: c, axis: 0, inputs: [q, p], outputs: [c]}
""")
    x = torch.randn(4, 256).to(torch.bfloat16)
    env = reference.run_graph(g, {"x": x})
    assert torch.equal(env["a"], x[:, 3:200:5])
    assert torch.equal(env["c"], torch.cat([x[1:], x[:1]]))


def test_a_slice_of_a_size_that_varies_over_a_sweep_clips_per_point(write_yaml):
    # x [seq, 8] at seq = 4 and 10 at once (a sweep's grid): x[-1:] is 1 row at both,
    # x[2:-1] 1 and 7 rows, x[:6] 4 and 6 rows, clipped as Python clips
    text = """name: t
params: {seq: 4}
tensors: {x: {shape: [seq, 8], dtype: bf16}}
ops:
  - {kind: slice, name: a, axis: 0, start: -1, inputs: [x], outputs: [a]}
  - {kind: slice, name: b, axis: 0, start: 2, end: -1, inputs: [x], outputs: [b]}
  - {kind: slice, name: c, axis: 0, end: 6, inputs: [x], outputs: [c]}
  - {kind: concat, name: k, axis: 0, inputs: [a, b, c], outputs: [y]}
"""
    seq = grid.values([4, 10])
    g = api.load_workload(str(write_yaml(text)), {"seq": seq})
    assert [list(np.broadcast_to(g.tensors[t].shape[0], 2)) for t in "abcy"] == \
        [[1, 1], [1, 7], [4, 6], [6, 14]]
    assert ops.view_regions(g)["b"][1][0][2:] == (2, seq - 1, 1)
    # empty at seq = 4 and not at 10: the points disagree, and the grid is cut
    with pytest.raises(grid.Split):
        api.load_workload(str(write_yaml(text.replace("end: 6", "start: 5"))), {"seq": seq})
