"""What real models need besides the basic kinds: grouped expert GEMMs (rooflab/ops/moe.py), MLA
attention (rooflab/ops/mla.py), matmuls with leading dims priced as the flattened GEMM, and
attention's layout check. Figures worked out by hand; one op in one kernel (unfused, H200)."""

from pathlib import Path

import pytest

from rooflab import api, workload
from rooflab.errors import RooflabError

BF16 = 2
HERE = Path(__file__).resolve().parent


# ----------------------------------------------------------------------------- grouped GEMM
GMM = """
    name: t
    tensors: {{x: {{shape: [{t}, 4096], dtype: bf16}}, w: {{shape: [8, 4096, 14336], dtype: bf16}}}}
    ops: [{{kind: grouped_matmul, name: g, inputs: [x, w], outputs: [y]{extra}}}]
"""
W_EXPERT = 4096 * 14336 * BF16          # one expert's weights, 117,440,512 bytes


@pytest.mark.parametrize("t,extra,experts", [
    (16, "", 8),                                            # balanced: 2 rows each, all read
    (4, "", 4),                                             # balanced, 4 rows: 4 experts
    (16, ", tokens_per_expert: [16, 0, 0, 0, 0, 0, 0, 0]", 1),
    (16, ", tokens_per_expert: [3, 0, 5, 0, 8, 0, 0, 0]", 3),
])
def test_grouped_matmul_reads_the_experts_that_get_rows(unfused, t, extra, experts):
    got = unfused(GMM.format(t=t, extra=extra))["g"]
    assert got.tensor_flops == 2 * t * 4096 * 14336           # 2*T*K*N, whatever the split
    assert got.tensor_dtypes == ("bf16",)
    assert got.hbm_read_bytes == t * 4096 * BF16 + experts * W_EXPERT
    assert got.hbm_write_bytes == t * 14336 * BF16


def test_grouped_matmul_tiles_are_per_expert(h200):
    from rooflab.gemm_tiles import wave_efficiency
    from rooflab.ops import KINDS
    g = workload.load_dict({"name": "t", "tensors": {
        "x": {"shape": [16, 4096], "dtype": "bf16"},
        "w": {"shape": [8, 4096, 14336], "dtype": "bf16"}},
        "ops": [{"kind": "grouped_matmul", "name": "g", "inputs": ["x", "w"], "outputs": ["y"]}]})
    op = g.ops[0]
    c = KINDS["grouped_matmul"].cost(op, [g.tensors["x"], g.tensors["w"]], [g.tensors["y"]])
    assert c.gemm_mnb == (2, 14336, 8)            # ceil(16 / 8) rows of each of 8 experts
    # 16-row tiles 64 wide: 224 per expert, 1792 on 132 SMs = 14 waves, 1792/1848 busy
    assert wave_efficiency(*c.gemm_mnb, h200.sm_count) == pytest.approx(1792 / 1848)


@pytest.mark.parametrize("extra,problem", [
    (", tokens_per_expert: [1, 1]", "tokens_per_expert has 2 entries for 8 experts"),
    (", tokens_per_expert: [1, 1, 1, 1, 1, 1, 1, 1]", "sums to 8, x has 16 rows"),
    (", tokens_per_expert: [17, -1, 0, 0, 0, 0, 0, 0]", "must be at least 0"),
])
def test_bad_routing_histograms_are_one_line_errors(write_yaml, extra, problem):
    with pytest.raises(RooflabError) as e:
        workload.load(str(write_yaml(GMM.format(t=16, extra=extra))))
    assert problem in str(e.value) and "\n" not in str(e.value)


# ----------------------------------------------------------------------------- MLA
MLA = """
    name: t
    params: {{B: 2, H: {h}, S: 1024, L: 512, R: 64}}
    tensors:
      ql: {{shape: [B, H, 1, L], dtype: bf16}}
      qr: {{shape: [B, H, 1, R], dtype: bf16}}
      lc: {{shape: [B, S, L], dtype: bf16}}
      rc: {{shape: [B, S, R], dtype: bf16}}
    ops: [{{kind: mla_attention, name: m, inputs: [ql, qr, lc, rc], outputs: [o]}}]
"""


@pytest.mark.parametrize("h", [16, 128])
def test_mla_reads_the_latent_cache_once_for_all_heads(unfused, h):
    got = unfused(MLA.format(h=h))["m"]
    pairs = 1024                                 # one query against 1024 keys (causal, end-aligned)
    assert got.tensor_flops == 2 * 2 * h * pairs * (512 + 64) + 2 * 2 * h * pairs * 512
    assert got.vector_flops == 5 * 2 * h * pairs
    cache = 2 * 1024 * (512 + 64) * BF16         # 2,359,296 bytes, not times the heads
    q = 2 * h * (512 + 64) * BF16
    assert got.hbm_read_bytes == cache + q
    assert got.hbm_write_bytes == 2 * h * 512 * BF16
    # 64 query rows per program: 128 heads are two blocks, the second re-reads the cache in L2
    assert got.l2_reread_bytes == (0 if h <= 64 else cache)


def test_mla_reference_matches_the_expanded_attention_on_cpu(write_yaml):
    torch = pytest.importorskip("torch")
    from rooflab.validate import reference
    g = workload.load(str(write_yaml("""
        name: t
        tensors:
          ql: {shape: [2, 4, 3, 16], dtype: fp32}
          qr: {shape: [2, 4, 3, 8], dtype: fp32}
          lc: {shape: [2, 10, 16], dtype: fp32}
          rc: {shape: [2, 10, 8], dtype: fp32}
        ops: [{kind: mla_attention, name: m, scale: 0.25, inputs: [ql, qr, lc, rc], outputs: [o]}]
    """)))
    ql, qr = torch.randn(2, 4, 3, 16), torch.randn(2, 4, 3, 8)
    lc, rc = torch.randn(2, 10, 16), torch.randn(2, 10, 8)
    env = reference.run_graph(g, {"ql": ql, "qr": qr, "lc": lc, "rc": rc})
    # the same thing as ordinary attention with keys [latent | rope] and values = latent,
    # every head reading the one cache
    q = torch.cat([ql, qr], -1)
    k = torch.cat([lc, rc], -1)[:, None].expand(2, 4, 10, 24)
    v = lc[:, None].expand(2, 4, 10, 16)
    mask = torch.ones(3, 10, dtype=torch.bool).tril(7)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.25)
    assert torch.allclose(env["o"], want, atol=1e-5)


# ----------------------------------------------------------------------------- leading dims
def _mm(a_shape, hw):
    g = workload.load_dict({"name": "t", "tensors": {
        "a": {"shape": a_shape, "dtype": "bf16"}, "w": {"shape": [7168, 512], "dtype": "bf16"}},
        "ops": [{"kind": "matmul", "name": "mm", "inputs": ["a", "w"], "outputs": ["c"]}]})
    return api.predict_graph(g, hw, "unfused", "graph").kernels[0]


def test_leading_dims_fold_into_m_as_cublas_runs_them(h200):
    # [32, 1, 7168] @ [7168, 512] is one GEMM of M = 32 (torch.matmul flattens the leading
    # dims), not 32 GEMMs of one row: both forms price the same
    folded, flat = _mm([32, 1, 7168], h200), _mm([32, 7168], h200)
    assert folded.time_s == flat.time_s and folded.memory_s == flat.memory_s
    # M = 32: one row tile of 64 fills at most 16 of 132 SMs (32 wide: 16 tiles); two row
    # tiles of 16, 16 wide, make 2 x 32 = 64 tiles: 64/132 of the bandwidth
    moved = 32 * 7168 * BF16 + 7168 * 512 * BF16 + 32 * 512 * BF16      # 7,831,552 bytes
    assert flat.hbm_read_bytes + flat.hbm_write_bytes == moved
    assert flat.memory_s == pytest.approx(moved / h200.hbm_rate_for(moved) / (64 / 132))


def test_a_batched_weight_is_still_a_batch_of_gemms():
    from rooflab.ops import KINDS
    g = workload.load_dict({"name": "t", "tensors": {
        "a": {"shape": [32, 1, 64], "dtype": "bf16"}, "b": {"shape": [32, 64, 128], "dtype": "bf16"}},
        "ops": [{"kind": "matmul", "name": "mm", "inputs": ["a", "b"], "outputs": ["c"]}]})
    c = KINDS["matmul"].cost(g.ops[0], [g.tensors["a"], g.tensors["b"]], [g.tensors["c"]])
    assert c.gemm_mnb == (1, 128, 32)


# ----------------------------------------------------------------------------- attention layout
HINT = "attention takes [B, H, S, D]; these look like [B, S, H, D]: permute(0, 2, 1, 3) first"


@pytest.mark.parametrize("q,k,causal,problem,hint", [
    # decode q [B, 1, Hq, D] and a cache [B, Sk, Hkv, D]
    ([1, 1, 32, 128], [1, 4096, 8, 128], True, "query heads 1 not a multiple of key/value heads 4096", True),
    # prefill with GQA, [B, S, H, D]: read as [B, H, S, D] a causal Sq = 32 > Sk = 8
    ([1, 128, 32, 128], [1, 128, 8, 128], True, "more queries (32) than keys (8)", True),
    # batches disagree either way: no hint
    ([2, 8, 16, 64], [1, 8, 16, 64], False, "batch differs: q 2, k 1, v 1", False),
])
def test_attention_refuses_the_b_s_h_d_layout(write_yaml, q, k, causal, problem, hint):
    f = write_yaml(f"""
        name: t
        tensors: {{q: {{shape: {q}, dtype: bf16}}, k: {{shape: {k}, dtype: bf16}}}}
        ops: [{{kind: attention, causal: {str(causal).lower()}, inputs: [q, k, k], outputs: [o]}}]
    """)
    with pytest.raises(RooflabError) as e:
        workload.load(str(f))
    msg = str(e.value)
    assert problem in msg and (HINT in msg) == hint and "\n" not in msg


# ----------------------------------------------------------------------------- a workload of them
def test_workload_of_the_new_kinds_loads_predicts_and_runs_its_references(h200):
    path = HERE / "workloads" / "moe_mla_decode.yaml"
    g = workload.load(str(path))
    # 32 ops, 7 of them views (reshape x4, split, slice x2): 25 kernels unfused
    assert len(g.ops) == 32
    unf = api.predict(path, h200, "unfused", "graph")
    fus = api.predict(path, h200, "fused", "graph")
    assert unf.totals.kernels == 25
    # embed+norm, o_proj+residual, up+act
    assert fus.totals.kernels == 22
    assert fus.totals.flops == unf.totals.flops
    torch = pytest.importorskip("torch")
    from rooflab.validate import reference
    gen = torch.Generator().manual_seed(0)
    made = {t for op in g.ops for t in op.outputs}
    env = reference.run_graph(g, {n: reference.random_input(t, "cpu", gen)
                                  for n, t in g.tensors.items() if n not in made})
    for name, t in g.tensors.items():
        assert tuple(env[name].shape) == t.shape, name
    assert int(env["ends"][-1]) == 8                     # B * TOPK routed rows counted


def test_validate_dry_run_skips_the_reference_only_kinds_with_the_reason(h200):
    from rooflab.validate import dryrun, suite
    path = HERE / "workloads" / "moe_mla_decode.yaml"
    lines: list[str] = []
    dryrun.dry_run([suite.Case("moe", workload.load_yaml_data(str(path)), "workload")], h200,
                   lines.append)
    text = "\n".join(lines)
    assert "# skipped: no generated Triton kernel for topk: its PyTorch reference is checked" in text
    assert "# skipped: no Triton template for grouped_matmul" in text
    assert "@triton.jit" in text                         # the rest are still generated


def test_causal_mla_prefill_is_balanced_like_attention(h200):
    from rooflab import cost, schedule
    g = workload.load_dict({"name": "t", "tensors": {
        "ql": {"shape": [1, 2, 4096, 512], "dtype": "bf16"},
        "qr": {"shape": [1, 2, 4096, 64], "dtype": "bf16"},
        "lc": {"shape": [1, 4096, 512], "dtype": "bf16"},
        "rc": {"shape": [1, 4096, 64], "dtype": "bf16"}},
        "ops": [{"kind": "mla_attention", "name": "m", "inputs": ["ql", "qr", "lc", "rc"],
                 "outputs": ["o"]}]})
    s = schedule.build(g, "unfused")
    # 32 query blocks of 128, block j scans j + 1 key blocks: 2 heads * 528 = 1056 block-units
    # over 132 SMs is 8 each, but the last program alone takes 32: 1056 / (132 * 32) = 0.25
    assert cost._attention_balance(cost._Graphinfo(g), s.kernels[0], h200.sm_count) == 0.25


def test_grouped_matmul_reference_multiplies_each_experts_rows_by_its_weights():
    torch = pytest.importorskip("torch")
    from rooflab.validate import reference
    g = workload.load_dict({"name": "t", "tensors": {
        "x": {"shape": [7, 4], "dtype": "fp32"}, "w": {"shape": [3, 4, 5], "dtype": "fp32"}},
        "ops": [{"kind": "grouped_matmul", "name": "g", "inputs": ["x", "w"], "outputs": ["y"]},
                {"kind": "grouped_matmul", "name": "h", "tokens_per_expert": [0, 6, 1],
                 "inputs": ["x", "w"], "outputs": ["z"]}]})
    x, w = torch.randn(7, 4), torch.randn(3, 4, 5)
    env = reference.run_graph(g, {"x": x, "w": w})
    # balanced: 7 rows over 3 experts are 3, 2, 2
    want = torch.cat([x[:3] @ w[0], x[3:5] @ w[1], x[5:] @ w[2]])
    assert torch.allclose(env["y"], want, atol=1e-6)
    assert torch.allclose(env["z"], torch.cat([x[:6] @ w[1], x[6:] @ w[2]]), atol=1e-6)


def test_attention_over_views_is_balanced_by_the_heads_it_sees(h200):
    """q, k, v viewed out of [8, 512, 1024] as [8, 16, 512, 64] (reshape, permute: what a
    module's `view().transpose()` traces to) are 8 x 16 = 128 heads of 4 query blocks, not the
    root's 8: block j scans j + 1 key blocks, 128 x 10 = 1280 block-units over 132 SMs (9.7
    each) outlast the longest program (4), so every SM is busy: balance 1, and the kernel
    costs what it costs on fresh [8, 16, 512, 64] tensors."""
    from rooflab import api, cost, schedule
    views = {"tensors": {n: {"shape": [8, 512, 1024], "dtype": "bf16"} for n in "xyz"},
             "ops": [op for n, r in (("x", "q"), ("y", "k"), ("z", "v")) for op in (
                 {"kind": "reshape", "name": f"{r}4", "inputs": [n], "outputs": [f"{r}4"],
                  "shape": [8, 512, 16, 64]},
                 {"kind": "permute", "name": r, "inputs": [f"{r}4"], "outputs": [r],
                  "dims": [0, 2, 1, 3]})]
             + [{"kind": "attention", "name": "a", "inputs": ["q", "k", "v"], "outputs": ["o"]}]}
    fresh = {"tensors": {n: {"shape": [8, 16, 512, 64], "dtype": "bf16"} for n in "qkv"},
             "ops": [{"kind": "attention", "name": "a", "inputs": ["q", "k", "v"],
                      "outputs": ["o"]}]}
    g = workload.load_dict({"name": "views", **views})
    s = schedule.build(g, "unfused")
    (att,) = [k for k in s.kernels if any(g.ops[i].kind == "attention" for i in k.ops)]
    assert cost._attention_balance(cost._Graphinfo(g), att, h200.sm_count) == pytest.approx(1.0)
    time = {name: next(k.compute_s for k in api.predict_graph(
                workload.load_dict({"name": name, **spec}), h200, "unfused", "graph").kernels
                if k.kinds == ("attention",))
            for name, spec in (("views", views), ("fresh", fresh))}
    assert time["views"] == pytest.approx(time["fresh"])
