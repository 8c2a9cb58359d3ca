"""ATen kernel families: which family each op falls into, and how a family's curve prices it.
Curves and times worked out by hand on a copy of the H200 spec (4.8 TB/s peak, HBM efficiency
0.89 without a curve)."""

from dataclasses import replace

import pytest

from rooflab import api
from rooflab.kernel_families import foreach_copy_launches

PEAK = 4.8e12


def _kernels(write_yaml, text, hw, schedule="unfused", kernels=None):
    return api.predict_graph(api.load_workload(write_yaml(text)), hw, schedule, "graph", kernels)


GRAPH = """
name: families
tensors:
  x: {shape: [1024, 4096], dtype: bf16}
  y: {shape: [1024, 4096], dtype: bf16}
  b: {shape: [4096], dtype: bf16}
  w: {shape: [4096], dtype: bf16}
  v: {shape: [16777216], dtype: fp32}
  table: {shape: [32000, 4096], dtype: bf16}
  ids: {shape: [64], dtype: int64}
ops:
  - {kind: add, name: add, inputs: [x, y], outputs: [a]}
  - {kind: add, name: bias, inputs: [x, b], outputs: [ab]}
  - {kind: silu, name: silu, inputs: [a], outputs: [s]}
  - {kind: sum, name: rowsum, inputs: [x], outputs: [r]}
  - {kind: sum, name: colsum, axis: 0, inputs: [x], outputs: [c]}
  - {kind: sum, name: total, inputs: [v], outputs: [t]}
  - {kind: softmax, name: softmax, inputs: [x], outputs: [p]}
  - {kind: rmsnorm, name: rms, inputs: [x, w], outputs: [n1]}
  - {kind: layernorm, name: ln, inputs: [x, w], outputs: [n2]}
  - {kind: embedding, name: emb, inputs: [table, ids], outputs: [e]}
  - {kind: concat, name: cat, axis: 0, inputs: [x, y], outputs: [xy]}
  - {kind: matmul, name: mm, inputs: [x, table_t], outputs: [mmo]}
outputs: [ab, s, r, c, t, p, n1, n2, e, xy, mmo]
"""


def _graph_text():
    # a GEMM against a [4096, 4096] weight: its time is not a bandwidth curve's
    return GRAPH.replace("  ids:", "  table_t: {shape: [4096, 4096], dtype: bf16}\n  ids:")


def test_each_op_falls_into_its_family(write_yaml, h200):
    p = _kernels(write_yaml, _graph_text(), h200)
    families = {k.ops[0]: k.family for k in p.kernels}
    assert families == {
        "add": "elementwise", "bias": "elementwise_broadcast",
        "silu": "elementwise_transcendental",
        "rowsum": "reduce_row", "colsum": "reduce_column", "total": "reduce_all",
        "softmax": "softmax", "rms": "rms_norm", "ln": "layer_norm", "emb": "embedding",
        "cat": "cat", "mm": "gemm_cublas"}
    assert p.kernels_impl == "aten"


def test_fused_schedules_run_rooflab_kernels_and_the_library_gemm(write_yaml, h200):
    # every kernel is rooflab's generated code but the GEMM that fuses nothing: it stays the
    # library's call, as under `unfused` and `inductor`
    p = _kernels(write_yaml, _graph_text(), h200, schedule="fused")
    assert p.kernels_impl == "rooflab+library"
    assert {k.ops: k.family for k in p.kernels if k.family} == {("mm",): "gemm_cublas"}
    assert len(p.kernels) > 1


def test_a_family_curve_prices_its_kernels_and_only_them(write_yaml, h200):
    # softmax measured at 20 % of peak up to 1 MB and 25 % from 100 MB on. Its time follows
    # its elements at 4 bytes each (ATen computes it in fp32): its 4M bf16 elements in and out
    # (16.78 MB moved) are read at 33.55 MB, log-interpolated 0.20 + 0.05 x ln(33.55) / ln(100)
    hw = replace(h200, family_curves={"softmax": ((1e6, 0.20), (100e6, 0.25))})
    p = _kernels(write_yaml, _graph_text(), hw)
    k = {k.ops[0]: k for k in p.kernels}
    moved = 2 * 1024 * 4096 * 2
    assert k["softmax"].hbm_bytes == moved
    frac = 0.20 + 0.05 * 3.51318 / 4.60517        # ln(33.554432) = 3.51318, ln(100) = 4.60517
    assert k["softmax"].memory_s == pytest.approx(2 * moved / (PEAK * frac), rel=1e-4)  # 29.35 µs
    # the add has no curve of its own: the copy curve (h200 has none: 0.89 of peak)
    assert k["add"].memory_s == pytest.approx(3 * 1024 * 4096 * 2 / (PEAK * 0.89), rel=1e-12)
    # rooflab's kernels ignore the ATen curves
    r = _kernels(write_yaml, _graph_text(), hw, kernels="rooflab")
    soft = next(x for x in r.kernels if x.ops == ("softmax",))
    assert soft.memory_s == pytest.approx(moved / (PEAK * 0.89), rel=1e-12)


def test_whole_tensor_reduction_splits_over_the_grid(write_yaml, h200):
    # x.sum() over 16M fp32 (64 MiB): ATen splits it over every SM, so it streams at the copy
    # rate: 67108864 + 4 bytes / (4.8e12 x 0.89) = 15.71 µs. rooflab's row kernel gives the one
    # row to one program: 1/132 of the SMs, 132 x longer.
    text = """
name: total
tensors: {v: {shape: [16777216], dtype: fp32}}
ops: [{kind: sum, name: total, inputs: [v], outputs: [t]}]
"""
    aten = _kernels(write_yaml, text, h200).kernels[0]
    assert aten.memory_s == pytest.approx((67108864 + 4) / (PEAK * 0.89), rel=1e-12)
    own = _kernels(write_yaml, text, h200, kernels="rooflab").kernels[0]
    assert own.memory_s == pytest.approx(aten.memory_s * 132, rel=1e-12)


def test_a_spec_without_curves_says_so(write_yaml, h200):
    p = _kernels(write_yaml, _graph_text(), h200)
    note = [n for n in p.notes if "ATen kernel families" in n]
    assert note and "softmax" in note[0] and "elementwise_broadcast" in note[0]
    hw = replace(h200, family_curves={f: ((1e6, 0.5), (1e9, 0.9)) for f in (
        "elementwise", "elementwise_transcendental", "elementwise_broadcast", "reduce_row",
        "reduce_column", "reduce_all",
        "softmax", "rms_norm", "layer_norm", "embedding", "cat")})
    assert not [n for n in _kernels(write_yaml, _graph_text(), hw).notes
                if "ATen kernel families" in n]


def test_unknown_family_in_a_spec_is_one_line(tmp_path):
    import yaml
    from rooflab import hardware
    spec = yaml.safe_load(hardware.spec_paths()["h200"].read_text())
    spec["kernel_families"] = {"softmaxx": {"points": [[1, 0.5], [10, 0.6]], "source": "CAL"}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.raises(Exception, match="unknown family 'softmaxx'"):
        hardware.load_file(path)


def test_host_model_counts_calls_views_and_modules(write_yaml, h200):
    # eager PyTorch's host time per kernel: the launching call (11 µs; 20 µs for a GEMM), each
    # view since the previous kernel (1.5 µs) and each module entered (30 µs: `blk` and `blk.mlp`)
    from rooflab import cost, schedule
    text = """
name: host
tensors: {x: {shape: [16, 64], dtype: bf16}, w: {shape: [64, 64], dtype: bf16}}
ops:
  - {kind: matmul, name: blk.mlp.mm, inputs: [x, w], outputs: [h]}
  - {kind: reshape, name: blk.mlp.view, shape: [1024], inputs: [h], outputs: [hv]}
  - {kind: relu, name: blk.mlp.relu, inputs: [hv], outputs: [y]}
  - {kind: relu, name: blk.relu_1, inputs: [y], outputs: [z]}
"""
    hw = replace(h200, gemm_dispatch_s=20e-6, view_dispatch_s=1.5e-6, module_call_s=30e-6)
    graph = api.load_workload(write_yaml(text))
    sched = schedule.build(graph, "unfused", hw)
    host = cost.host_times(sched, hw)
    assert host == pytest.approx([2 * 30e-6 + 20e-6, 1.5e-6 + 11e-6, 11e-6], rel=1e-12)
    # launch-bound: the step ends when the last kernel, issued at 103.5 µs, finishes
    p = cost.predict(sched, hw, "eager")
    last = p.kernels[-1]
    assert p.totals.time_s == pytest.approx(sum(host) + last.time_s - last.launch_s
                                            + hw.min_kernel_s, rel=1e-9)
    # rooflab's kernels: one dispatch per kernel, no module or view time
    assert cost.predict(sched, hw, "eager", "rooflab").totals.time_s < p.totals.time_s - 70e-6
    # a kind whose eager call the spec measured costs that instead (a relu 15 µs, the GEMM 25);
    # another lease's dispatch replaces the tiny op and drops the per-kind figures with it
    by_kind = replace(hw, eager_call_s_by_kind={"relu": 15e-6, "matmul": 25e-6})
    assert cost.host_times(sched, by_kind) == pytest.approx(
        [2 * 30e-6 + 25e-6, 1.5e-6 + 15e-6, 15e-6], rel=1e-12)
    assert cost.host_times(sched, by_kind.with_eager_dispatch(9e-6)) == pytest.approx(
        [2 * 30e-6 + 20e-6, 1.5e-6 + 9e-6, 9e-6], rel=1e-12)


def _one_op(write_yaml, kind, shapes, dtype="bf16", attrs=""):
    names = [f"t{i}" for i in range(len(shapes))]
    tensors = ", ".join(f"{n}: {{shape: {list(s)}, dtype: {dtype}}}" for n, s in zip(names, shapes))
    text = f"""
name: one
tensors: {{{tensors}}}
ops: [{{kind: {kind}, name: op, inputs: [{', '.join(names)}], outputs: [o]{attrs}}}]
"""
    return api.load_workload(write_yaml(text))


def test_aten_picks_softmax_and_index_select_kernels_by_shape(write_yaml, h200):
    # softmax rows up to 2048 take the warp kernel, to 9216 the register kernel (at most 6
    # registers a thread at one rate, 7 to 9 at a slower one), then the long-row one;
    # index_select's small-index kernel takes at most 16 ids
    for row, fam in ((2048, "softmax_warp"), (2049, "softmax"), (6144, "softmax"),
                     (6145, "softmax_wide_row"), (9216, "softmax_wide_row"),
                     (9217, "softmax_long_row")):
        g = _one_op(write_yaml, "softmax", [(4, row)])
        assert api.predict_graph(g, h200, "unfused", "graph").kernels[0].family == fam, row
    text = """
name: emb
tensors: {table: {shape: [1000, 64], dtype: bf16}, ids: {shape: [IDS], dtype: int64}}
ops: [{kind: embedding, name: op, inputs: [table, ids], outputs: [o]}]
"""
    for ids, fam in ((16, "embedding_small_index"), (17, "embedding")):
        g = api.load_workload(write_yaml(text.replace("IDS", str(ids))))
        assert api.predict_graph(g, h200, "unfused", "graph").kernels[0].family == fam


def test_block_softmax_reads_its_curve_at_fp32_width(write_yaml, h200):
    # the same 4M elements in bf16 and in fp32 take the same time: both read the curve at
    # 4M x 4 B x 2 (in + out) = 33.55 MB, where the flat curve gives 0.25 of peak
    hw = replace(h200, family_curves={"softmax": ((1e6, 0.25), (1e9, 0.25))})
    times = [api.predict_graph(_one_op(write_yaml, "softmax", [(1024, 4096)], dt), hw,
                               "unfused", "graph").kernels[0].memory_s for dt in ("bf16", "fp32")]
    assert times == pytest.approx([4 * 2**20 * 8 / (PEAK * 0.25)] * 2, rel=1e-9)   # 27.96 µs


def test_row_floor_by_hand(write_yaml, h200):
    # rms_norm's floor: 2 µs for rows of 2 KB, 5 µs for 8 KB; flat below, proportional above
    hw = replace(h200, family_curves={"rms_norm": ((1e3, 1.0), (1e9, 1.0))},
                 family_row_floors={"rms_norm": ((2048, 2e-6), (8192, 5e-6))})
    assert hw.row_floor_s("rms_norm", 4096) == pytest.approx(3e-6)
    assert hw.row_floor_s("rms_norm", 1024) == pytest.approx(2e-6)
    assert hw.row_floor_s("rms_norm", 16384) == pytest.approx(10e-6)
    assert hw.row_floor_s("softmax", 4096) == 0.0
    # 4 rows of 4096 bf16 (8 KB each): 65.5 kB move in 14 ns at peak, the floor is 5 µs
    g = _one_op(write_yaml, "rmsnorm", [(4, 4096), (4096,)])
    k = api.predict_graph(g, hw, "unfused", "graph").kernels[0]
    assert k.memory_s == pytest.approx(5e-6)
    # 8192 such rows: 134 MB at peak (28 µs) is above the floor
    g = _one_op(write_yaml, "rmsnorm", [(8192, 4096), (4096,)])
    k = api.predict_graph(g, hw, "unfused", "graph").kernels[0]
    assert k.memory_s == pytest.approx(k.hbm_bytes / PEAK)


def test_sdpa_backend_efficiency_by_hand(write_yaml, h200):
    # non-causal bf16 attention, B=1 H=8 S=1024 D=64: 2 x 8 x 1024² x 128 = 2.147 GFLOP on
    # the tensor cores. Halving the flash backend's share adds that work's time at full peak
    # once more (2.170 µs); the exponentials on the SFUs do not scale with it
    g = _one_op(write_yaml, "attention", [(1, 8, 1024, 64)] * 3, attrs=", causal: false")
    times = []
    for share in (1.0, 0.5):
        hw = replace(h200, attention_backend_efficiency={"sdpa_flash": share})
        k = api.predict_graph(g, hw, "unfused", "graph").kernels[0]
        assert k.family == "sdpa_flash"
        times.append(k.compute_s)
    assert times[1] - times[0] == pytest.approx(2 * 8 * 1024**2 * 128 / 989.4e12, rel=1e-3)
    # fp32: the memory-efficient kernel on the FP32 units, at 0.4 of their 66.9 TFLOP/s
    g = _one_op(write_yaml, "attention", [(1, 8, 1024, 64)] * 3, "fp32", ", causal: false")
    hw = replace(h200, attention_backend_efficiency={"sdpa_fp32": 0.4})
    k = api.predict_graph(g, hw, "unfused", "graph").kernels[0]
    vector = (5 * 8 * 1024**2) + 2 * 8 * 1024**2 * 128      # 5 per score, the matmuls
    assert k.family == "sdpa_fp32"
    assert k.compute_s == pytest.approx(vector / (66.9e12 * 0.4), rel=1e-3)     # 80.2 µs
    # a spec without backends prices SDPA as before, and names no backend
    k = api.predict_graph(g, h200, "unfused", "graph").kernels[0]
    assert k.family == ""


def test_skinny_n_gemm_is_tiled_as_its_transpose():
    # [4096, 4096] @ [4096, 8] (a router): tiled as its transpose, 8 x 4096 -> 16x32 tiles, so
    # 32x16 over (M, N): 128 tiles on 132 SMs; cuBLAS splits its K (2 kernels)
    from rooflab.gemm_tiles import gemm_tile, wave_efficiency
    from rooflab.trace.aten_map import gemm_launches
    assert gemm_tile(4096, 8, 1, 132) == (32, 16)
    assert wave_efficiency(4096, 8, 1, 132) == pytest.approx(128 / 132)
    assert gemm_launches(4096, 8, 4096) == 2
    assert gemm_launches(16384, 16, 8192) == 1         # its transpose's N is too wide to split
    assert gemm_tile(8, 4096, 1, 132) == (16, 32)      # the decode shape is unchanged


def test_a_decode_batch_over_64_rows_is_tiled_to_fill_the_sms():
    # M=128, N=4096: 128x128 tiles make 32 tiles on 132 SMs (a quarter busy); 64x64 make 128
    from rooflab.gemm_tiles import gemm_tile, wave_efficiency
    assert gemm_tile(128, 4096, 1, 132) == (64, 64)
    assert wave_efficiency(128, 4096, 1, 132) == pytest.approx(128 / 132)
    # 160 rows: 2 row tiles of 128 (not 3 of 64, which re-read each weight strip from HBM);
    # 128x64 makes 128 tiles
    assert gemm_tile(160, 4096, 1, 132) == (128, 64)
    assert wave_efficiency(160, 4096, 1, 132) == pytest.approx(128 / 132)
    assert gemm_tile(256, 4096, 1, 132) == (128, 64)
    # past 256 rows, or where 128-row tiles fill the SMs, the large tile stays
    assert gemm_tile(300, 4096, 1, 132) == (128, 128)
    assert gemm_tile(2048, 2048, 1, 132) == (128, 128)
    assert gemm_tile(128, 14336, 1, 132) == (128, 128)   # 112 tiles: 64-row ones fill no better


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-sxm-80gb"])
def test_a_decode_step_does_not_get_faster_as_its_batch_grows(gpu):
    # Llama-3-8B decode, fused + CUDA graph: on the H100 the step at batch 128 had cost 23.1 ms
    # against 18.8 ms at 160 (the down projection's 32 tiles of 128x128), and batch 66 had
    # filled the SMs better than 64 (the k/v projections, N=1024, one row tile of 64)
    batches = (32, 33, 48, 63, 64, 65, 66, 72, 96, 128, 129, 160, 192, 256)
    steps = [api.predict("llama3_8b_decode", gpu, "fused", "graph",
                         {"batch": b, "context": 1152}).totals.time_s for b in batches]
    assert steps == sorted(steps)


def test_a_few_rows_take_two_row_tiles_where_they_fill_the_sms_better():
    from rooflab.gemm_tiles import gemm_tile, wave_efficiency
    # M=64, N=1024: one row tile of 64 fills 32 of 132 SMs (64x32); two of 32 fill 64
    assert gemm_tile(64, 1024, 1, 132) == (32, 32)
    assert wave_efficiency(64, 1024, 1, 132) == pytest.approx(64 / 132)
    assert gemm_tile(66, 1024, 1, 132) == (64, 32)      # as many tiles: M=66 is no faster
    assert gemm_tile(64, 4096, 1, 132) == (64, 32)      # one row tile fills them already


def test_a_row_gather_pays_per_index_by_hand(write_yaml, h200):
    # embedding of 8192 ids from a [32000, 128] fp32 table: 8192 x 512 B read and written
    # (8.39 MB) at a flat 0.5 of peak (3.495 us), plus 0.45 ns per id (3.686 us)
    hw = replace(h200, family_curves={"embedding": ((1e3, 0.5), (1e9, 0.5))},
                 family_per_index_s={"embedding": 0.45e-9})
    text = """
name: emb
tensors: {table: {shape: [32000, 128], dtype: fp32}, ids: {shape: [8192], dtype: int64}}
ops: [{kind: embedding, name: op, inputs: [table, ids], outputs: [o]}]
"""
    k = api.predict_graph(api.load_workload(write_yaml(text)), hw, "unfused", "graph").kernels[0]
    assert k.memory_s == pytest.approx(k.hbm_bytes / (PEAK * 0.5) + 8192 * 0.45e-9, rel=1e-9)
    assert k.hbm_bytes == 2 * 8192 * 512 + 8192 * 8          # rows in and out, and the ids


GEMM = """
name: gemm
tensors:
  x: {shape: [1024, 1024], dtype: bf16}
  w: {shape: [1024, 1024], dtype: bf16}
  b: {shape: [1024], dtype: bf16}
ops:
  - {kind: matmul, name: mm, inputs: [x, w], outputs: [y]}
  - {kind: add, name: bias, inputs: [y, b], outputs: [z], launches: 0}
outputs: [z]
"""


def _gemm_hw(h200):
    # FLOP curve: 0.5 of the tensor peak at 1 GFLOP, 0.8 at 1 TFLOP; byte curve 0.5 of HBM
    # peak at 1 MB, 0.9 at 1 GB; each time adds a quarter of the other
    return replace(h200, gemm_flops_curve=((1e9, 0.5), (1e12, 0.8)), gemm_overlap=0.25,
                   family_curves={"gemm_cublas": ((1e6, 0.5), (1e9, 0.9))})


def test_a_cublas_gemm_is_priced_by_its_two_curves(write_yaml, h200):
    # 1024³ bf16 with addmm's bias riding in its epilogue (launches: 0): one ATen call, the
    # GEMM family. 2 x 1024³ = 2.147 GFLOP at 0.5 + 0.3 x ln(2.147) / ln(1000) = 0.53319 of
    # the 989.4 TFLOP/s peak: 4.0708 µs. Bytes: x and w in (2 x 2 MiB), z out (2 MiB) and b
    # (2 KiB): 6.2935 MB at 0.5 + 0.4 x ln(6.2935) / ln(1000) = 0.60651 of 4.8 TB/s: 2.1618 µs
    hw = _gemm_hw(h200)
    k = _kernels(write_yaml, GEMM, hw).kernels[0]
    assert k.ops == ("mm", "bias") and k.family == "gemm_cublas"
    flops, moved = 2 * 1024**3, 3 * 1024 * 1024 * 2 + 2048
    assert k.tensor_flops == flops and k.hbm_bytes == moved
    t_c = flops / (hw.tensor_flops_per_s["bf16"] * 0.53319)
    t_m = moved / (PEAK * 0.60651)
    assert t_c == pytest.approx(4.0708e-6, rel=1e-4) and t_m == pytest.approx(2.1618e-6, rel=1e-4)
    assert k.compute_s == pytest.approx(t_c + 0.25 * t_m, rel=1e-4)     # 4.6112 µs
    assert k.memory_s == pytest.approx(t_m + 0.25 * t_c, rel=1e-4)      # 3.1795 µs
    assert k.time_s - k.launch_s == pytest.approx(4.6112e-6, rel=1e-4)
    # the curve holds the kernel's fixed GPU time: in a replay it adds only the graph gap
    assert k.launch_s == pytest.approx(hw.graph_gap_s or hw.graph_launch_s)


def test_without_a_gemm_curve_the_tile_model_prices_and_says_so(write_yaml, h200):
    p = _kernels(write_yaml, GEMM, h200)
    assert [n for n in p.notes if "gemm_cublas" in n and "tile model" in n]
    fused = _kernels(write_yaml, GEMM, h200, schedule="fused").kernels[0]
    assert p.kernels[0].compute_s == pytest.approx(fused.compute_s, rel=1e-12)
    assert not [n for n in _kernels(write_yaml, GEMM, _gemm_hw(h200)).notes if "tile model" in n]
    # rooflab's own Triton GEMM keeps the tile model whatever the spec measured of cuBLAS
    own = _kernels(write_yaml, GEMM, _gemm_hw(h200), kernels="rooflab").kernels[0]
    assert own.family == "" and own.compute_s == pytest.approx(fused.compute_s, rel=1e-12)


def test_fused_prices_a_lone_gemm_as_cublas_and_one_with_an_epilogue_by_the_tile_model(
        write_yaml, h200):
    # addmm's bias launches nothing of its own: the GEMM is one library call, priced as in
    # test_a_cublas_gemm_is_priced_by_its_two_curves (4.6112 µs busy)
    hw = _gemm_hw(h200)
    lone = _kernels(write_yaml, GEMM, hw, schedule="fused").kernels[0]
    assert lone.family == "gemm_cublas"
    assert lone.time_s - lone.launch_s == pytest.approx(4.6112e-6, rel=1e-4)
    # a bias add of its own rides in the GEMM's epilogue: rooflab's Triton GEMM, the tile
    # model, whatever the spec measured of cuBLAS
    fused = _kernels(write_yaml, GEMM.replace(", launches: 0", ""), hw, schedule="fused")
    (k,) = fused.kernels
    assert k.ops == ("mm", "bias") and k.fusion == "epilogue" and k.family == ""
    own = _kernels(write_yaml, GEMM.replace(", launches: 0", ""), hw, "fused", "rooflab")
    assert k.compute_s == pytest.approx(own.kernels[0].compute_s, rel=1e-12)
    assert k.compute_s != pytest.approx(lone.compute_s, rel=1e-3)


def test_an_addmm_and_a_gemm_with_an_epilogue_of_one_shape_keep_their_own_prices(
        write_yaml, h200):
    # the same shapes, one bias launching nothing (addmm), one its own op: a library call and
    # a generated GEMM, never one price for both
    both = GEMM.replace("outputs: [z]\n", """outputs: [z, z2]\n""").replace(
        "ops:\n", "ops:\n  - {kind: matmul, name: mm2, inputs: [x, w], outputs: [y2]}\n"
                  "  - {kind: add, name: bias2, inputs: [y2, b], outputs: [z2]}\n")
    p = _kernels(write_yaml, both, _gemm_hw(h200), schedule="fused")
    assert {k.ops: k.family for k in p.kernels} == {("mm", "bias"): "gemm_cublas",
                                                     ("mm2", "bias2"): ""}


def test_epilogue_and_a_policy_yaml_run_rooflab_and_the_library(write_yaml, tmp_path, h200):
    policy = tmp_path / "mine.yaml"
    policy.write_text("name: mine\nedges: [[gemm, pointwise]]\n")
    for schedule in ("epilogue", str(policy)):
        p = _kernels(write_yaml, _graph_text(), h200, schedule=schedule)
        assert p.kernels_impl == "rooflab+library"
        assert {k.ops: k.family for k in p.kernels if k.family} == {("mm",): "gemm_cublas"}


def test_a_gemm_with_an_epilogue_is_a_generated_launch_not_an_extern_call(write_yaml, h200):
    from rooflab.launch import compiled_host_times
    epilogue = _kernels(write_yaml, GEMM.replace(", launches: 0", ""), h200, schedule="fused")
    addmm = _kernels(write_yaml, GEMM, h200, schedule="fused")
    assert epilogue.schedule.triton_and_extern() == (1, 0)
    assert addmm.schedule.triton_and_extern() == (0, 1)
    assert compiled_host_times(epilogue.schedule, h200) == [h200.compiled_launch_host_s]
    assert compiled_host_times(addmm.schedule, h200) == [h200.compiled_extern_host_s]


def test_inductor_prices_its_extern_gemm_as_cublas_and_its_kernels_as_triton(write_yaml, h200):
    hw = _gemm_hw(h200)
    p = _kernels(write_yaml, GEMM.replace(", launches: 0", ""), hw, schedule="inductor")
    assert p.kernels_impl == "inductor"
    gemm, bias = p.kernels
    assert gemm.family == "gemm_cublas" and bias.family == ""
    eager = _kernels(write_yaml, GEMM.replace(", launches: 0", ""), hw).kernels[0]
    assert gemm.compute_s == pytest.approx(eager.compute_s, rel=1e-12)


def test_gemm_keys_belong_to_the_gemm_family(tmp_path):
    import yaml
    from rooflab import hardware
    spec = yaml.safe_load(hardware.spec_paths()["h200"].read_text())
    for fams, msg in (({"gemm_cublas": {"points": [[1, 0.5], [10, 0.6]]}},
                       "needs gflop_points and overlap"),
                      ({"softmax": {"points": [[1, 0.5], [10, 0.6]], "overlap": 0.2}},
                       "belong to gemm_cublas only")):
        spec["kernel_families"] = {f: {**c, "source": "CAL"} for f, c in fams.items()}
        spec.setdefault("sources", {})["CAL"] = "test"
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump(spec))
        with pytest.raises(Exception, match=msg):
            hardware.load_file(path)


def test_below_a_family_curves_first_point_a_kernel_takes_that_points_time(write_yaml, h200):
    # a family curve starts at its smallest measurement, 1000 B at 1.6e-4 of peak: that
    # kernel's time, 1000 / (4.8e12 x 1.6e-4) = 1.302 µs, is its fixed GPU time. An rsqrt of
    # one fp32 value (8 B moved) takes that too, not 8 / (4.8e12 x 1.6e-4) = 10 ns
    hw = replace(h200, family_curves={"elementwise_transcendental": ((1000.0, 1.6e-4),
                                                                     (1e6, 0.16))})
    fixed_s = 1000 / (PEAK * 1.6e-4)
    for nbytes in (8, 500, 1000):
        assert nbytes / hw.hbm_rate_for(nbytes, "elementwise_transcendental") == \
            pytest.approx(fixed_s, rel=1e-12)
    # above it, the curve as before: at 10 kB, 1/3 of the way in log(bytes) to 1 MB
    frac = 1.6e-4 + (0.16 - 1.6e-4) / 3
    assert hw.hbm_rate_for(1e4, "elementwise_transcendental") == pytest.approx(PEAK * frac)
    import numpy as np
    got = 8 / hw.hbm_rate_for(np.array([8.0, 8.0]), "elementwise_transcendental")
    assert list(got) == pytest.approx([fixed_s, fixed_s])                 # over a grid alike
    p = _kernels(write_yaml, """
name: scalar_rsqrt
tensors:
  x: {shape: [1], dtype: fp32}
ops:
  - {kind: rsqrt, name: r, inputs: [x], outputs: [y]}
outputs: [y]
""", hw)
    assert p.kernels[0].memory_s == pytest.approx(fixed_s, rel=1e-12)


def test_atens_sdpa_reads_an_expanded_kv_head_once_per_query_head(write_yaml, h200):
    # one KV head expanded (stride 0) to 4 query heads, as transformers' repeat_kv leaves it for
    # a single KV head: ATen's SDPA reads K and V per query head, 4 x 2 x 1024 x 64 x 2 B =
    # 1,048,576 B each, like q; a GQA-aware kernel (rooflab's) reads the one head, 262,144 B
    text = """
name: one_kv_head
tensors:
  q: {shape: [2, 4, 1024, 64], dtype: bf16}
  k1: {shape: [2, 1, 1024, 64], dtype: bf16}
  v1: {shape: [2, 1, 1024, 64], dtype: bf16}
ops:
  - {kind: expand, name: ke, shape: [2, 4, 1024, 64], inputs: [k1], outputs: [k]}
  - {kind: expand, name: ve, shape: [2, 4, 1024, 64], inputs: [v1], outputs: [v]}
  - {kind: attention, name: sdpa, inputs: [q, k, v], outputs: [o]}
outputs: [o]
"""
    def att(kernels):
        p = _kernels(write_yaml, text, h200, kernels=kernels)
        return next(k for k in p.kernels if "sdpa" in k.ops)
    assert att(None).hbm_read_bytes == 3 * 1_048_576
    assert att("rooflab").hbm_read_bytes == 1_048_576 + 2 * 262_144


def test_a_grouped_expert_gemm_is_priced_by_its_family_curve(write_yaml, h200):
    # Mixtral's down projection at 2 rows: balanced routing sends them to 2 of the 8 experts,
    # whose weights alone are read: x 2 x 14336 x 2 = 57,344 B, weights 2 x 14336 x 4096 x 2 =
    # 234,881,024 B, out 2 x 4096 x 2 = 16,384 B: 234,954,752 B. Curve 40 % of peak at 1 MB,
    # 50 % at 1 GB: 0.4 + 0.1 x ln(234.954752) / ln(1000) = 0.4 + 0.1 x 5.45939 / 6.90776
    # = 0.479033, so 234,954,752 / (4.8e12 x 0.479033) = 102.18 µs
    text = """
name: moe_down
tensors:
  x: {shape: [2, 14336], dtype: bf16}
  w: {shape: [8, 14336, 4096], dtype: bf16}
ops: [{kind: grouped_matmul, name: down, inputs: [x, w], outputs: [y]}]
"""
    hw = replace(h200, family_curves={"grouped_mm": ((1e6, 0.40), (1e9, 0.50))})
    k = _kernels(write_yaml, text, hw).kernels[0]
    assert k.family == "grouped_mm" and k.hbm_bytes == 234_954_752
    assert k.memory_s == pytest.approx(102.18e-6, rel=1e-4)
    # without the curve: the copy curve (0.89 of peak) over the tile model's waves (2 experts
    # x 4096 / 64 column tiles = 128 tiles on 132 SMs), and a note says which family lacks one
    p = _kernels(write_yaml, text, h200)
    assert p.kernels[0].memory_s == pytest.approx(234_954_752 / (PEAK * 0.89) * 132 / 128,
                                                  rel=1e-12)
    assert any("grouped_mm" in n for n in p.notes)
    # fp32 experts run no CUTLASS grouped kernel of this family
    fp32 = _kernels(write_yaml, text.replace("bf16", "fp32"), hw).kernels[0]
    assert fp32.family == ""


def test_a_foreach_copy_launches_a_kernel_per_320_chunks():
    # multi_tensor_apply: one block per 64 Ki elements, 320 blocks a launch. 20 Mi elements are
    # 320 chunks (one launch), one more element a 321st chunk; torch 2.11 ran 2, 4 and 7
    # kernels on the H100 for 32, 64 and 128 Mi elements
    assert [foreach_copy_launches(n) for n in (1, 65536, 320 * 65536, 320 * 65536 + 1)] == \
        [1, 1, 1, 2]
    assert [foreach_copy_launches(n * 2 ** 20) for n in (32, 64, 128)] == [2, 4, 7]


def test_fused_attention_is_its_own_kernel_not_sdpa():
    # fused's attention is rooflab's FlashAttention kernel, not the SDPA call inductor and
    # unfused make (priced at its backend's measured efficiency and fixed time): on Llama-3-8B
    # decode it takes no SDPA backend and, the bytes alike, less time (171 against 276 µs)
    fused = api.predict("llama3_8b_decode", "measured/h200.yaml", "fused", "graph")
    ind = api.predict("llama3_8b_decode", "measured/h200.yaml", "inductor", "graph")

    def attention(p):
        return [k for k in p.kernels if "attention" in k.kinds]
    assert attention(fused) and all(k.family == "" for k in attention(fused))
    assert all(k.family.startswith("sdpa") for k in attention(ind))
    assert sum(k.hbm_bytes for k in attention(fused)) == sum(k.hbm_bytes for k in attention(ind))
    assert sum(k.time_s for k in attention(fused)) == pytest.approx(171e-6, rel=0.01)
    assert sum(k.time_s for k in attention(ind)) == pytest.approx(276e-6, rel=0.01)
