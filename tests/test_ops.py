"""Hand-computed FLOPs and HBM bytes, exact integers, for every op kind (one op, one kernel)."""

import pytest

from rooflab import ops

BF16, FP32 = 2, 4


def test_matmul_with_transpose_and_batch(unfused):
    b, m, n, k = 3, 64, 32, 128
    got = unfused(f"""
        name: t
        tensors:
          a: {{shape: [{b}, {k}, {m}], dtype: bf16}}
          w: {{shape: [{n}, {k}], dtype: bf16}}
        ops:
          - {{kind: matmul, name: mm, inputs: [a, w], outputs: [c], transpose_a: true, transpose_b: true}}
    """)["mm"]
    assert got.tensor_flops == 2 * b * m * n * k          # one FMA = 2 FLOPs
    assert got.tensor_dtypes == ("bf16",)
    assert got.vector_flops == 0
    assert got.hbm_read_bytes == BF16 * (b * k * m + n * k)   # a, w once each
    assert got.hbm_write_bytes == BF16 * b * m * n


def test_fp32_matmul_runs_on_vector_units_unless_tf32(unfused):
    text = """
        name: t
        tensors:
          a: {shape: [16, 8], dtype: fp32}
          w: {shape: [8, 4], dtype: fp32}
        ops:
          - {kind: matmul, name: mm, inputs: [a, w], outputs: [c] TF}
    """
    plain = unfused(text.replace(" TF", ""))["mm"]
    assert (plain.tensor_flops, plain.vector_flops) == (0, 2 * 16 * 4 * 8)
    tf32 = unfused(text.replace(" TF", ", tf32: true"))["mm"]
    assert (tf32.tensor_flops, tf32.tensor_dtypes) == (2 * 16 * 4 * 8, ("tf32",))


# FLOPs per element, worked out by hand (rooflab/ops/pointwise.py says why each is what it is)
UNARY_FLOPS = {"relu": 1, "gelu": 8, "silu": 4, "sigmoid": 3, "tanh": 1, "exp": 1, "neg": 1,
               "sqrt": 1, "rsqrt": 1, "square": 1, "abs": 1, "scale": 1, "causal_mask": 1,
               "cast": 0, "copy": 0}
BINARY_KINDS = ("add", "sub", "mul", "div", "maximum", "minimum")


@pytest.mark.parametrize("kind,per_elem", sorted(UNARY_FLOPS.items()))
def test_unary(unfused, kind, per_elem):
    n = 1000
    got = unfused(f"""
        name: t
        tensors: {{x: {{shape: [10, 100], dtype: bf16}}}}
        ops: [{{kind: {kind}, name: u, inputs: [x], outputs: [y]}}]
    """)["u"]
    assert got.vector_flops == per_elem * n
    assert (got.hbm_read_bytes, got.hbm_write_bytes) == (BF16 * n, BF16 * n)


def test_cast_changes_bytes_written(unfused):
    got = unfused("""
        name: t
        tensors: {x: {shape: [1024], dtype: fp32}}
        ops: [{kind: cast, name: c, inputs: [x], outputs: [y], dtype: bf16}]
    """)["c"]
    assert (got.hbm_read_bytes, got.hbm_write_bytes, got.vector_flops) == (4096, 2048, 0)


@pytest.mark.parametrize("kind", BINARY_KINDS)
def test_binary_broadcast_operand_read_once(unfused, kind):
    t, d = 64, 256
    got = unfused(f"""
        name: t
        tensors:
          x: {{shape: [{t}, {d}], dtype: bf16}}
          b: {{shape: [{d}], dtype: bf16}}
        ops: [{{kind: {kind}, name: o, inputs: [x, b], outputs: [y]}}]
    """)["o"]
    assert got.vector_flops == t * d
    assert got.hbm_read_bytes == BF16 * (t * d + d)      # x, plus the broadcast row once
    assert got.hbm_write_bytes == BF16 * t * d


def test_same_tensor_twice_read_once(unfused):
    got = unfused("""
        name: t
        tensors: {x: {shape: [512], dtype: fp32}}
        ops: [{kind: mul, name: sq, inputs: [x, x], outputs: [y]}]
    """)["sq"]
    assert got.hbm_read_bytes == FP32 * 512


@pytest.mark.parametrize("kind", ["sum", "mean", "max"])
def test_reductions(unfused, kind):
    got = unfused(f"""
        name: t
        tensors: {{x: {{shape: [32, 1000], dtype: fp32}}}}
        ops: [{{kind: {kind}, name: r, inputs: [x], outputs: [y], axis: 1}}]
    """)["r"]
    assert got.vector_flops == 32 * 1000
    assert (got.hbm_read_bytes, got.hbm_write_bytes) == (FP32 * 32000, FP32 * 32)


def test_softmax(unfused):
    r, c = 128, 1024
    got = unfused(f"""
        name: t
        tensors: {{x: {{shape: [{r}, {c}], dtype: bf16}}}}
        ops: [{{kind: softmax, name: s, inputs: [x], outputs: [y]}}]
    """)["s"]
    assert got.vector_flops == 5 * r * c                  # max, sub, exp, sum, div
    assert (got.hbm_read_bytes, got.hbm_write_bytes) == (BF16 * r * c, BF16 * r * c)


def test_softmax_row_too_long_for_shared_memory_is_read_twice(unfused):
    # 100,000 fp32 = 400 kB per row > 228 KiB of H200 shared memory: a second pass.
    got = unfused("""
        name: t
        tensors: {x: {shape: [4, 100000], dtype: bf16}}
        ops: [{kind: softmax, name: s, inputs: [x], outputs: [y]}]
    """)["s"]
    assert got.hbm_read_bytes == 2 * BF16 * 400000
    assert got.hbm_write_bytes == BF16 * 400000


def test_layernorm_and_rmsnorm(unfused):
    t, d = 256, 4096
    got = unfused(f"""
        name: t
        tensors:
          x: {{shape: [{t}, {d}], dtype: bf16}}
          w: {{shape: [{d}], dtype: bf16}}
          b: {{shape: [{d}], dtype: bf16}}
        ops:
          - {{kind: layernorm, name: ln, inputs: [x, w, b], outputs: [y]}}
          - {{kind: rmsnorm, name: rms, inputs: [x, w], outputs: [z]}}
    """)
    assert got["ln"].vector_flops == 7 * t * d
    assert got["ln"].hbm_read_bytes == BF16 * (t * d + 2 * d)
    assert got["rms"].vector_flops == 4 * t * d
    assert got["rms"].hbm_read_bytes == BF16 * (t * d + d)
    assert got["rms"].hbm_write_bytes == BF16 * t * d


def test_rotary(unfused):
    b, h, s, d = 2, 8, 64, 128
    got = unfused(f"""
        name: t
        tensors:
          q: {{shape: [{b}, {h}, {s}, {d}], dtype: bf16}}
          cos: {{shape: [{s}, {d}], dtype: bf16}}
          sin: {{shape: [{s}, {d}], dtype: bf16}}
        ops: [{{kind: rotary, name: r, inputs: [q, cos, sin], outputs: [y]}}]
    """)["r"]
    n = b * h * s * d
    assert got.vector_flops == 3 * n
    assert got.hbm_read_bytes == BF16 * (n + 2 * s * d)


def test_attention_gqa_causal_prefill(unfused):
    b, hq, hkv, s, d = 2, 32, 8, 1024, 128
    got = unfused(f"""
        name: t
        tensors:
          q: {{shape: [{b}, {hq}, {s}, {d}], dtype: bf16}}
          k: {{shape: [{b}, {hkv}, {s}, {d}], dtype: bf16}}
          v: {{shape: [{b}, {hkv}, {s}, {d}], dtype: bf16}}
        ops: [{{kind: attention, name: a, inputs: [q, k, v], outputs: [o], causal: true}}]
    """)["a"]
    pairs = s * (s + 1) // 2                      # causal: query i sees i+1 keys
    assert got.tensor_flops == 2 * b * hq * pairs * (d + d)   # QKᵀ and PV
    assert got.vector_flops == 5 * b * hq * pairs
    kv = 2 * BF16 * b * hkv * s * d
    assert got.hbm_read_bytes == BF16 * b * hq * s * d + kv   # q once, K and V once
    assert got.hbm_write_bytes == BF16 * b * hq * s * d
    # each of the 8 blocks of 128 queries, for each of the 4 query heads sharing a KV head,
    # streams K and V again; block skipping scales that by the causal fraction of pairs.
    passes = (hq // hkv) * (s // 128)
    assert got.l2_reread_bytes == kv * (passes - 1) * pairs // (s * s)


def test_attention_decode_reads_whole_cache(unfused):
    b, hq, hkv, ctx, d = 4, 32, 8, 8192, 128
    got = unfused(f"""
        name: t
        tensors:
          q: {{shape: [{b}, {hq}, 1, {d}], dtype: bf16}}
          k: {{shape: [{b}, {hkv}, {ctx}, {d}], dtype: bf16}}
          v: {{shape: [{b}, {hkv}, {ctx}, {d}], dtype: bf16}}
        ops: [{{kind: attention, name: a, inputs: [q, k, v], outputs: [o]}}]
    """)["a"]
    assert got.tensor_flops == 2 * b * hq * ctx * 2 * d       # the one query sees every key
    assert got.hbm_read_bytes == BF16 * (b * hq * d + 2 * b * hkv * ctx * d)


def test_embedding_reads_only_gathered_rows(unfused):
    vocab, d, tokens = 128256, 4096, 8
    got = unfused(f"""
        name: t
        tensors:
          table: {{shape: [{vocab}, {d}], dtype: bf16}}
          ids: {{shape: [{tokens}], dtype: int64}}
        ops: [{{kind: embedding, name: e, inputs: [table, ids], outputs: [x]}}]
    """)["e"]
    assert got.hbm_read_bytes == BF16 * tokens * d + 8 * tokens
    assert got.hbm_write_bytes == BF16 * tokens * d


def test_quantize_nvfp4_counts_block_scales(unfused):
    n = 4096 * 4096
    got = unfused("""
        name: t
        tensors: {x: {shape: [4096, 4096], dtype: bf16}}
        ops:
          - {kind: quantize, name: q, inputs: [x], outputs: [y], dtype: nvfp4}
          - {kind: dequantize, name: dq, inputs: [y], outputs: [z], dtype: bf16}
    """)
    fp4_bytes = n // 2 + n // 16          # 4 bits each, one fp8 scale per 16 elements
    assert got["q"].hbm_write_bytes == fp4_bytes
    assert got["q"].vector_flops == 2 * n
    assert got["dq"].hbm_read_bytes == fp4_bytes
    assert got["dq"].vector_flops == n


def test_w4a16_qmatmul_counts_group_scales(unfused):
    m, k, n, group = 16, 8192, 8192, 128
    got = unfused(f"""
        name: t
        tensors:
          x: {{shape: [{m}, {k}], dtype: bf16}}
          w: {{shape: [{k}, {n}], dtype: int4}}
        ops: [{{kind: qmatmul, name: q, inputs: [x, w], outputs: [y], group_size: {group}}}]
    """)["q"]
    assert got.tensor_flops == 2 * m * n * k and got.tensor_dtypes == ("bf16",)
    assert got.hbm_read_bytes == BF16 * m * k + k * n // 2 + BF16 * (k // group) * n
    assert got.hbm_write_bytes == BF16 * m * n


def test_fp8_qmatmul_runs_at_fp8(unfused):
    m = k = n = 1024
    got = unfused(f"""
        name: t
        tensors:
          x: {{shape: [{m}, {k}], dtype: fp8}}
          w: {{shape: [{k}, {n}], dtype: fp8_e4m3}}
        ops: [{{kind: qmatmul, name: q, inputs: [x, w], outputs: [y]}}]
    """)["q"]
    assert (got.tensor_flops, got.tensor_dtypes) == (2 * m * n * k, ("fp8",))
    assert got.hbm_read_bytes == m * k + k * n and got.hbm_write_bytes == BF16 * m * n


@pytest.mark.parametrize("kind,link_num,link_den,out_rows", [
    ("all_reduce", 2 * 7, 8, 1024), ("all_gather", 7, 8, 8 * 1024), ("reduce_scatter", 7, 8, 128)])
def test_collectives_ring_bytes(unfused, kind, link_num, link_den, out_rows):
    rows, d = 1024, 4096
    got = unfused(f"""
        name: t
        params: {{tp: 8}}
        tensors: {{x: {{shape: [{rows}, {d}], dtype: bf16}}}}
        ops: [{{kind: {kind}, name: c, inputs: [x], outputs: [y], world_size: tp}}]
    """)["c"]
    size = out_rows * d * BF16 if kind == "all_gather" else rows * d * BF16
    assert got.link_bytes == link_num * size // link_den
    assert got.hbm_read_bytes == BF16 * rows * d
    assert got.hbm_write_bytes == BF16 * out_rows * d


def test_opaque_uses_declared_cost(unfused):
    got = unfused("""
        name: t
        tensors:
          x: {shape: [100], dtype: fp32}
          y: {shape: [10], dtype: int64}
        ops: [{kind: opaque, name: topk, inputs: [x], outputs: [y], flops: 5000, bytes: 480}]
    """)["topk"]
    assert (got.vector_flops, got.hbm_bytes) == (5000, 480)


def test_views_cost_nothing_and_launch_nothing(write_yaml, h200):
    from rooflab import api
    pred = api.predict(write_yaml("""
        name: t
        tensors: {x: {shape: [4, 16, 8], dtype: bf16}}
        ops:
          - {kind: reshape, name: r, inputs: [x], outputs: [y], shape: [4, 2, 8, -1]}
          - {kind: permute, name: p, inputs: [y], outputs: [z], dims: [0, 2, 1, 3]}
          - {kind: relu, name: act, inputs: [z], outputs: [out]}
    """), h200)
    assert [k.name for k in pred.kernels] == ["act"]
    assert pred.kernels[0].hbm_read_bytes == BF16 * 4 * 16 * 8


def test_every_kind_has_a_test_or_exemption():
    """Coverage tripwire: a new op kind needs a cost test above."""
    import inspect
    src = inspect.getsource(inspect.getmodule(test_every_kind_has_a_test_or_exemption))
    tested = {k for k in ops.KINDS if f"kind: {k}" in src or f"kind: {{{'kind'}}}" in src}
    tested |= set(UNARY_FLOPS) | set(BINARY_KINDS) | {"sum", "mean", "max"}
    tested |= {"all_reduce", "all_gather", "reduce_scatter"}
    assert set(ops.KINDS) - tested == set()
