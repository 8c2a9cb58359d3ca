"""topk / sort / cumsum / histogram (rooflab/ops/ordering.py): shapes, FLOPs and bytes worked out
by hand (unfused, H200), and their references against torch on the CPU."""

import pytest

from rooflab import workload
from rooflab.errors import RooflabError

BF16, FP32, I64 = 2, 4, 8


def _one(unfused, write_yaml, tensors: str, op: str):
    text = f"name: t\ntensors: {{{tensors}}}\nops: [{{name: o, {op}}}]\n"
    return workload.load(str(write_yaml(text))), unfused(text)["o"]


def test_topk_reads_x_and_writes_values_and_int64_indices(unfused, write_yaml):
    g, got = _one(unfused, write_yaml, "x: {shape: [64, 1000], dtype: bf16}",
                  "kind: topk, k: 8, inputs: [x], outputs: [v, i]")
    assert (g.tensors["v"].shape, g.tensors["v"].dtype.name) == ((64, 8), "bf16")
    assert (g.tensors["i"].shape, g.tensors["i"].dtype.name) == ((64, 8), "int64")
    assert got.vector_flops == 64 * 1000                   # one comparison per element
    assert got.hbm_read_bytes == 64 * 1000 * BF16          # 128000
    assert got.hbm_write_bytes == 64 * 8 * BF16 + 64 * 8 * I64   # 1024 + 4096


def test_topk_along_a_leading_axis(write_yaml):
    g = workload.load(str(write_yaml(
        "name: t\ntensors: {x: {shape: [10, 6], dtype: fp32}}\n"
        "ops: [{kind: topk, k: 3, axis: 0, largest: false, inputs: [x], outputs: [v, i]}]\n")))
    assert g.tensors["v"].shape == (3, 6)


def test_sort_counts_n_log2_n_comparisons_per_row(unfused, write_yaml):
    g, got = _one(unfused, write_yaml, "x: {shape: [16, 1024], dtype: fp32}",
                  "kind: sort, descending: true, inputs: [x], outputs: [v, i]")
    assert g.tensors["i"].dtype.name == "int64"
    assert got.vector_flops == 16 * 1024 * 10              # log2(1024) = 10
    assert got.hbm_read_bytes == 16 * 1024 * FP32
    assert got.hbm_write_bytes == 16 * 1024 * FP32 + 16 * 1024 * I64


def test_cumsum_one_add_per_element_and_int64_for_integers(unfused, write_yaml):
    _, got = _one(unfused, write_yaml, "x: {shape: [8, 4096], dtype: bf16}",
                  "kind: cumsum, inputs: [x], outputs: [y]")
    assert (got.vector_flops, got.hbm_read_bytes, got.hbm_write_bytes) == (
        8 * 4096, 8 * 4096 * BF16, 8 * 4096 * BF16)
    g, got = _one(unfused, write_yaml, "x: {shape: [8], dtype: int32}",
                  "kind: cumsum, inputs: [x], outputs: [y]")
    assert g.tensors["y"].dtype.name == "int64"
    assert got.hbm_write_bytes == 8 * I64


def test_histogram_over_the_whole_tensor(unfused, write_yaml):
    g, got = _one(unfused, write_yaml, "x: {shape: [1000, 100], dtype: fp32}",
                  "kind: histogram, bins: 64, inputs: [x], outputs: [h]")
    assert (g.tensors["h"].shape, g.tensors["h"].dtype.name) == ((64,), "fp32")
    assert got.vector_flops == 4 * 100_000                 # bin index (3) and add (1)
    assert (got.hbm_read_bytes, got.hbm_write_bytes) == (100_000 * FP32, 64 * FP32)
    # not a row kernel: 100,000 elements are spread over every SM, one "row" would idle 131
    assert got.memory_s < 1e-6
    g, _ = _one(unfused, write_yaml, "x: {shape: [16], dtype: int64}",
                "kind: histogram, bins: 8, inputs: [x], outputs: [h]")
    assert g.tensors["h"].dtype.name == "int64"


@pytest.mark.parametrize("op,problem", [
    ("{kind: topk, k: 9, inputs: [x], outputs: [v, i]}", "topk k=9 is larger than dimension 1"),
    ("{kind: topk, k: 0, inputs: [x], outputs: [v, i]}", "`k` must be at least 1"),
    ("{kind: topk, inputs: [x], outputs: [v, i]}", "topk needs `k:`"),
    ("{kind: topk, k: 2, inputs: [x], outputs: [v]}", "topk has 2 output(s), got 1"),
    ("{kind: histogram, inputs: [x], outputs: [h]}", "histogram needs `bins:`"),
    ("{kind: histogram, bins: 4, min: 2, max: 1, inputs: [x], outputs: [h]}", "min 2 is above max 1"),
])
def test_bad_ordering_ops_are_one_line_errors(write_yaml, op, problem):
    f = write_yaml(f"name: t\ntensors: {{x: {{shape: [4, 8], dtype: bf16}}}}\nops:\n  - {op}\n")
    with pytest.raises(RooflabError) as e:
        workload.load(str(f))
    assert problem in str(e.value) and "\n" not in str(e.value)


def test_references_match_torch_on_cpu(write_yaml):
    torch = pytest.importorskip("torch")
    from rooflab.validate import reference
    g = workload.load(str(write_yaml("""
name: t
tensors: {x: {shape: [5, 12], dtype: fp32}}
ops:
  - {kind: topk, name: t, k: 3, inputs: [x], outputs: [tv, ti]}
  - {kind: sort, name: s, descending: true, axis: 0, inputs: [x], outputs: [sv, si]}
  - {kind: cumsum, name: c, inputs: [x], outputs: [cs]}
  - {kind: histogram, name: h, bins: 6, min: -3, max: 3, inputs: [x], outputs: [hist]}
""")))
    x = torch.randn(5, 12)
    env = reference.run_graph(g, {"x": x})
    tv, ti = torch.topk(x, 3)
    assert torch.equal(env["tv"], tv) and torch.equal(env["ti"], ti)
    sv, si = torch.sort(x, dim=0, descending=True, stable=True)
    assert torch.equal(env["sv"], sv) and torch.equal(env["si"], si)
    assert torch.allclose(env["cs"], x.cumsum(-1))
    assert torch.equal(env["hist"], torch.histc(x, 6, -3, 3))
