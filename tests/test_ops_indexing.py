"""Indexing kinds (rooflab/ops/indexing.py): shapes, FLOPs and HBM bytes worked out by hand,
one op in one kernel (unfused, H200), and their PyTorch references against torch on the CPU."""

import pytest

from rooflab.errors import RooflabError

BF16, FP32, I64, I32 = 2, 4, 8, 4


def _one(unfused, tensors: str, op: str):
    return unfused(f"""
        name: t
        tensors: {{{tensors}}}
        ops: [{{name: o, {op}}}]
    """)["o"]


def test_gather_reads_the_index_and_only_the_elements_it_selects(unfused):
    # x [32, 1000] bf16, index [32, 4] int64 along axis 1 -> out [32, 4] bf16
    got = _one(unfused, "x: {shape: [32, 1000], dtype: bf16}, i: {shape: [32, 4], dtype: int64}",
               "kind: gather, axis: 1, inputs: [x, i], outputs: [y]")
    assert got.hbm_read_bytes == 32 * 4 * BF16 + 32 * 4 * I64     # 256 + 1024
    assert got.hbm_write_bytes == 32 * 4 * BF16
    assert got.flops == 0


def test_index_select_reads_the_selected_slices(unfused):
    # 10 rows of x [1000, 512] bf16 -> [10, 512]
    got = _one(unfused, "x: {shape: [1000, 512], dtype: bf16}, i: {shape: [10], dtype: int64}",
               "kind: index_select, axis: 0, inputs: [x, i], outputs: [y]")
    assert got.hbm_read_bytes == 10 * 512 * BF16 + 10 * I64       # 10240 + 80
    assert got.hbm_write_bytes == 10 * 512 * BF16


def test_index_by_a_2d_index_on_the_leading_dim(unfused, write_yaml):
    from rooflab import workload
    text = """
        name: t
        tensors: {x: {shape: [1000, 64], dtype: fp32}, i: {shape: [4, 8], dtype: int32}}
        ops: [{name: o, kind: index, inputs: [x, i], outputs: [y]}]
    """
    assert workload.load(str(write_yaml(text))).tensors["y"].shape == (4, 8, 64)
    got = unfused(text)["o"]
    assert got.hbm_read_bytes == 32 * 64 * FP32 + 32 * I32        # 8192 + 128
    assert got.hbm_write_bytes == 32 * 64 * FP32


def test_a_gather_never_reads_more_than_its_source(unfused):
    # 5000 ids into a 100-row table: at most the table's 100 * 64 * 2 bytes
    got = _one(unfused, "x: {shape: [100, 64], dtype: bf16}, i: {shape: [5000], dtype: int64}",
               "kind: index, inputs: [x, i], outputs: [y]")
    assert got.hbm_read_bytes == 100 * 64 * BF16 + 5000 * I64


@pytest.mark.parametrize("reduce,extra_read,flops", [("none", 0, 0), ("add", 256 * BF16, 256)])
def test_scatter_writes_only_what_it_scatters(unfused, reduce, extra_read, flops):
    # x [64, 128] bf16 updated in place at index [64, 4] from src [64, 4]: 256 elements
    got = _one(unfused, "x: {shape: [64, 128], dtype: bf16}, i: {shape: [64, 4], dtype: int64}, "
                        "s: {shape: [64, 4], dtype: bf16}",
               f"kind: scatter, axis: 1, reduce: {reduce}, inputs: [x, i, s], outputs: [y]")
    assert got.hbm_read_bytes == 256 * I64 + 256 * BF16 + extra_read    # index, src (+ x)
    assert got.hbm_write_bytes == 256 * BF16
    assert got.vector_flops == flops


def test_index_add_is_a_read_modify_write_of_the_touched_slices(unfused):
    # 10 rows of x [100, 256] fp32 += src [10, 256]
    got = _one(unfused, "x: {shape: [100, 256], dtype: fp32}, i: {shape: [10], dtype: int64}, "
                        "s: {shape: [10, 256], dtype: fp32}",
               "kind: index_add, axis: 0, inputs: [x, i, s], outputs: [y]")
    touched = 10 * 256 * FP32                                        # 10240
    assert got.hbm_read_bytes == 10 * I64 + touched + touched        # index, src, x rows
    assert got.hbm_write_bytes == touched
    assert got.vector_flops == 10 * 256


def test_index_copy_is_a_kv_cache_append_that_moves_only_the_new_token(unfused):
    # cache [8, 4096, 8, 128] bf16 (B, S, H, D): one position per sequence
    got = _one(unfused, "c: {shape: [8, 4096, 8, 128], dtype: bf16}, p: {shape: [1], dtype: int64}, "
                        "s: {shape: [8, 1, 8, 128], dtype: bf16}",
               "kind: index_copy, axis: 1, inputs: [c, p, s], outputs: [c2]")
    new = 8 * 1 * 8 * 128 * BF16                                     # 16384
    assert got.hbm_read_bytes == new + I64
    assert got.hbm_write_bytes == new                                # not the 64 MiB cache


@pytest.mark.parametrize("acc,extra,flops", [("false", 0, 0), ("true", 16 * 64 * BF16, 16 * 64)])
def test_index_put_on_the_leading_dim(unfused, acc, extra, flops):
    got = _one(unfused, "x: {shape: [1000, 64], dtype: bf16}, i: {shape: [16], dtype: int64}, "
                        "s: {shape: [16, 64], dtype: bf16}",
               f"kind: index_put, accumulate: {acc}, inputs: [x, i, s], outputs: [y]")
    assert got.hbm_read_bytes == 16 * 64 * BF16 + 16 * I64 + extra
    assert got.hbm_write_bytes == 16 * 64 * BF16
    assert got.vector_flops == flops


def test_a_scatter_write_counts_even_when_nothing_reads_the_updated_tensor(write_yaml, h200):
    # the cache update is a side effect: declaring only `o` as output must not make it free
    from rooflab import api
    pred = api.predict(write_yaml("""
        name: t
        tensors: {c: {shape: [4, 64, 32], dtype: bf16}, p: {shape: [1], dtype: int64},
                  s: {shape: [4, 1, 32], dtype: bf16}, q: {shape: [4, 32], dtype: bf16}}
        ops:
          - {name: append, kind: index_copy, axis: 1, inputs: [c, p, s], outputs: [c2]}
          - {name: o, kind: relu, inputs: [q], outputs: [o]}
        outputs: [o]
    """), h200, "unfused", "graph")
    assert {k.name: k.hbm_write_bytes for k in pred.kernels}["append"] == 4 * 32 * BF16


def test_fused_scatter_takes_a_pointwise_producer_of_its_values_only(write_yaml, h200):
    from rooflab import api
    pred = api.predict(write_yaml("""
        name: t
        tensors: {c: {shape: [4, 64, 32], dtype: bf16}, p: {shape: [1], dtype: int64},
                  s: {shape: [4, 1, 32], dtype: bf16}}
        ops:
          - {name: scale, kind: scale, factor: 0.5, inputs: [s], outputs: [s2]}
          - {name: append, kind: index_copy, axis: 1, inputs: [c, p, s2], outputs: [c2]}
          - {name: after, kind: relu, inputs: [c2], outputs: [y]}
    """), h200, "fused", "graph")
    kernels = {k.name: k for k in pred.kernels}
    assert set(kernels) == {"scale+append", "after"}       # the reader of c2 is not fused
    k = kernels["scale+append"]
    assert k.fusion == "scatter prologue"
    # reads s (not s2), p; writes the 128 new elements; s2 never reaches HBM
    assert (k.hbm_read_bytes, k.hbm_write_bytes) == (4 * 32 * BF16 + I64, 4 * 32 * BF16)
    assert any("a fusion barrier (scatter)" in r for r in k.stopped_by)


@pytest.mark.parametrize("op,problem", [
    ("{kind: gather, axis: 1, inputs: [x, f], outputs: [o]}", "gather index must be an integer dtype"),
    ("{kind: gather, inputs: [x, i2], outputs: [o]}", "gather needs `axis:`"),
    ("{kind: gather, axis: 0, inputs: [x, i1], outputs: [o]}", "must have as many dimensions"),
    ("{kind: index_select, axis: 0, inputs: [x, i2], outputs: [o]}", "index must be 1-D"),
    ("{kind: index_copy, axis: 0, inputs: [x, i1, x], outputs: [o]}", "src must be [3, 8]"),
    ("{kind: scatter, axis: 1, reduce: max, inputs: [x, i2, x], outputs: [o]}", "must be none or add"),
    ("{kind: index_put, inputs: [x, i1, f], outputs: [o]}", "writes fp32 values into a bf16 tensor"),
])
def test_bad_indexing_is_a_one_line_error(write_yaml, op, problem):
    from rooflab import workload
    f = write_yaml("name: t\ntensors:\n  x: {shape: [4, 8], dtype: bf16}\n"
                   "  f: {shape: [3, 8], dtype: fp32}\n  i1: {shape: [3], dtype: int64}\n"
                   f"  i2: {{shape: [4, 2], dtype: int64}}\nops:\n  - {op}\n")
    with pytest.raises(RooflabError) as e:
        workload.load(str(f))
    assert problem in str(e.value) and "\n" not in str(e.value)


def test_references_match_torch_on_cpu():
    torch = pytest.importorskip("torch")
    from rooflab import workload
    from rooflab.validate import reference
    g = workload.load_dict({"name": "t", "tensors": {
        "x": {"shape": [6, 5], "dtype": "fp32"}, "i": {"shape": [6, 2], "dtype": "int64"},
        "r": {"shape": [3], "dtype": "int64"}, "s": {"shape": [6, 2], "dtype": "fp32"},
        "rows": {"shape": [3, 5], "dtype": "fp32"}}, "ops": [
        {"kind": "gather", "name": "g", "axis": 1, "inputs": ["x", "i"], "outputs": ["g"]},
        {"kind": "index_select", "name": "sel", "axis": 0, "inputs": ["x", "r"], "outputs": ["sel"]},
        {"kind": "index", "name": "ix", "inputs": ["x", "i"], "outputs": ["ix"]},
        {"kind": "scatter", "name": "sc", "axis": 1, "reduce": "add", "inputs": ["x", "i", "s"],
         "outputs": ["sc"]},
        {"kind": "index_add", "name": "ia", "axis": 0, "inputs": ["x", "r", "rows"], "outputs": ["ia"]},
        {"kind": "index_copy", "name": "ic", "axis": 0, "inputs": ["x", "r", "rows"], "outputs": ["ic"]},
        {"kind": "index_put", "name": "ip", "accumulate": True, "inputs": ["x", "r", "rows"],
         "outputs": ["ip"]}]})
    x = torch.randn(6, 5)
    i = torch.tensor([[0, 4], [1, 3], [2, 2], [3, 1], [4, 0], [0, 0]])
    r = torch.tensor([5, 0, 2])
    s, rows = torch.randn(6, 2), torch.randn(3, 5)
    env = reference.run_graph(g, {"x": x, "i": i, "r": r, "s": s, "rows": rows})
    assert torch.equal(env["g"], torch.gather(x, 1, i))
    assert torch.equal(env["sel"], x[r])
    assert torch.equal(env["ix"], x[i]) and env["ix"].shape == (6, 2, 5)
    assert torch.allclose(env["sc"], x.scatter_add(1, i, s))
    assert torch.allclose(env["ia"], x.index_add(0, r, rows))
    assert torch.equal(env["ic"], x.index_copy(0, r, rows))
    assert torch.allclose(env["ip"], x.index_put((r,), rows, accumulate=True))
