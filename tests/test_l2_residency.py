"""Which replayed kernels read only from L2 (rooflab/l2_residency.py), and what each pays."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rooflab import api, workload

# x is 2 KiB; big is 64 MiB, more than the H200's L2 (50 MB)
DOC = """
name: l2
tensors:
  x: {shape: [1024], dtype: bf16}
  big: {shape: [16, 1048576], dtype: fp32}
  cache: {shape: [64, 1024], dtype: bf16}
  pos: {shape: [1], dtype: int64}
ops:
  - {name: a, kind: relu, inputs: [x], outputs: [y]}
  - {name: b, kind: exp, inputs: [y], outputs: [z]}
  - {name: c, kind: add, inputs: [z, x], outputs: [w]}
  - {name: d, kind: neg, inputs: [big], outputs: [big2]}
  - {name: e, kind: neg, inputs: [z], outputs: [v]}
  - {name: f, kind: reshape, inputs: [w], outputs: [w2], shape: [1, 1024]}
  - {kind: index_copy, name: write, axis: 0, inputs: [cache, pos, w2], outputs: [c2]}
  - {name: g, kind: sum, inputs: [c2], outputs: [s], axis: 1}
"""
WARM_S, COLD_S = 1e-6, 2e-6


@pytest.fixture
def hw(h200):
    return replace(h200, graph_warm_launch_s=WARM_S, graph_launch_s=COLD_S)


def _launches(tmp_path, hw, **kw):
    f = tmp_path / "l2.yaml"
    f.write_text(DOC)
    p = api.predict_graph(workload.load(str(f)), hw, "unfused", "graph", "rooflab", **kw)
    return {k.name: k.launch_s for k in p.kernels}, p


def test_after_a_flush_only_what_the_step_wrote_since_is_in_l2(tmp_path, hw):
    launch, _ = _launches(tmp_path, hw, l2_flushed=True)
    assert launch == pytest.approx({
        "a": COLD_S,        # reads the step's input x
        "b": WARM_S,        # reads y, which a wrote (2 KiB, nothing moved between)
        "c": COLD_S,        # reads z (in L2) and x (not)
        "d": COLD_S,        # reads the step's input big
        "e": COLD_S,        # reads z, but c and d moved 128 MiB since b wrote it
        "write": COLD_S,    # reads the step's input pos
        "g": COLD_S,        # reads the cache: the write put one row of it in L2, not the rest
    })


def test_replayed_back_to_back_small_inputs_stay_in_l2(tmp_path, hw):
    # the step moves more than the L2 (d's 128 MiB), so only small inputs stay between replays
    launch, p = _launches(tmp_path, hw)
    assert launch == pytest.approx({
        "a": WARM_S,        # x: 2 KiB
        "b": WARM_S,
        "c": WARM_S,        # z, just written, and x
        "d": COLD_S,        # big: 64 MiB
        "e": COLD_S,        # z, pushed out by d
        "write": COLD_S,    # w, pushed out by d (pos is small)
        "g": WARM_S,        # the cache: 128 KiB
    })
    # the replay: one graph launch, then each kernel's busy time and start
    busy = sum(max(k.compute_s, k.memory_s) for k in p.kernels)
    assert p.totals.time_s == pytest.approx(hw.graph_replay_s + busy + 4 * WARM_S + 3 * COLD_S)


def test_a_step_that_fits_the_l2_reads_all_its_inputs_from_it(tmp_path, hw):
    # without d the step moves under 5 MiB (its 64 MiB `big` is never read), and every
    # input (the 2 MiB cache among them) stays in L2 between replays
    f = tmp_path / "fits.yaml"
    f.write_text(DOC.replace("  - {name: d, kind: neg, inputs: [big], outputs: [big2]}\n", "")
                 .replace("cache: {shape: [64, 1024]", "cache: {shape: [1024, 1024]"))
    p = api.predict_graph(workload.load(str(f)), hw, "unfused", "graph", "rooflab")
    assert [k.name for k in p.kernels] == ["a", "b", "c", "e", "write", "g"]
    assert [k.launch_s for k in p.kernels] == pytest.approx([WARM_S] * 6)
    flushed = api.predict_graph(workload.load(str(f)), hw, "unfused", "graph", "rooflab",
                                l2_flushed=True)
    assert [k.launch_s for k in flushed.kernels] == pytest.approx(
        [COLD_S, WARM_S, COLD_S, WARM_S, COLD_S, COLD_S])


def test_a_spec_without_the_warm_figure_pays_graph_launch_s(tmp_path, h200):
    assert h200.graph_warm_launch_s is None
    launch, _ = _launches(tmp_path, h200)
    assert list(launch.values()) == pytest.approx([h200.graph_launch_s] * 7)


def test_eager_launches_do_not_depend_on_l2(tmp_path, hw):
    f = tmp_path / "l2.yaml"
    f.write_text(DOC)
    graph = workload.load(str(f))
    times = {(flushed, warm_s): api.predict_graph(
        graph, replace(hw, graph_warm_launch_s=warm_s), "unfused", "eager", "rooflab",
        l2_flushed=flushed).totals.time_s for flushed in (False, True) for warm_s in (None, WARM_S)}
    assert len(set(times.values())) == 1


def test_a_replayed_sdpa_call_with_a_measured_fixed_time_adds_the_gap(masked_decode):
    # the backend's fixed time is fitted on profiled kernel times, so it holds the kernel's
    # start: replayed, the call adds graph_gap_s per launch, as a family-curve kernel does
    hw = api.load_hardware("measured/h200.yaml")
    graph = workload.load(str(masked_decode("bf16")))
    (k,) = api.predict_graph(graph, hw, "unfused", "graph").kernels
    assert k.family in hw.attention_backend_fixed_s
    assert k.launch_s == pytest.approx(k.launches * hw.graph_gap_s)
    # without the fixed time it pays the replay figure: the KV cache (256 KiB each) is small
    # enough to stay in L2 between replays
    bare = replace(hw, attention_backend_fixed_s={})
    (k,) = api.predict_graph(graph, bare, "unfused", "graph").kernels
    assert k.launch_s == pytest.approx(k.launches * hw.graph_warm_launch_s)


# after an L2 flush, t (20 MB, written by `a`) is read by `c` once `b` has moved some bytes
# since: 2 x 10 MB here, 2 x 20 MB with BIG_B; the H200's L2 holds 50 MB
SINCE = """
name: since
tensors:
  x: {shape: [5242880], dtype: fp32}
  u: {shape: [2621440], dtype: fp32}
ops:
  - {name: a, kind: neg, inputs: [x], outputs: [t]}
  - {name: b, kind: neg, inputs: [u], outputs: [u2]}
  - {name: c, kind: exp, inputs: [t], outputs: [r]}
"""
BIG_B = SINCE.replace("u: {shape: [2621440]", "u: {shape: [5242880]")


@pytest.mark.parametrize("doc, c_warm", [(SINCE, True), (BIG_B, False)],
                         ids=["20 MB since + t's 20 MB fit", "40 MB since + t's 20 MB do not"])
def test_what_the_step_wrote_stays_while_the_bytes_since_and_its_own_fit(tmp_path, hw, doc,
                                                                          c_warm):
    # a's own traffic (x read, t written) comes before t was written: it does not count
    f = tmp_path / "since.yaml"
    f.write_text(doc)
    p = api.predict_graph(workload.load(str(f)), hw, "unfused", "graph", "rooflab",
                          l2_flushed=True)
    assert [k.launch_s for k in p.kernels] == pytest.approx(
        [COLD_S, COLD_S, WARM_S if c_warm else COLD_S])


def test_a_fused_kernel_reads_what_it_makes_from_itself(write_yaml, hw):
    # under `inductor` relu and exp are one kernel after the GEMM: it reads h, which the
    # GEMM wrote just before, and y, which it makes itself
    path = write_yaml("""
        name: made
        tensors:
          x: {shape: [16, 1024], dtype: bf16}
          w: {shape: [1024, 1024], dtype: bf16}
        ops:
          - {name: m, kind: matmul, inputs: [x, w], outputs: [h]}
          - {name: r, kind: relu, inputs: [h], outputs: [y]}
          - {name: e, kind: exp, inputs: [y], outputs: [z]}
    """)
    p = api.predict_graph(workload.load(str(path)), replace(hw, graph_gap_s=None), "inductor",
                          "graph", l2_flushed=True)
    assert [k.ops for k in p.kernels] == [("m",), ("r", "e")]
    assert [k.launch_s for k in p.kernels] == pytest.approx([COLD_S, WARM_S])


def test_a_scatters_result_is_where_its_target_was(write_yaml, hw):
    # buf is written by relu, updated in place by the index_copy, then summed: the sum reads
    # what relu left in L2, as a sum of buf would
    path = write_yaml("""
        name: scatter_result
        tensors:
          x: {shape: [64, 1024], dtype: bf16}
          pos: {shape: [1], dtype: int64}
          row: {shape: [1, 1024], dtype: bf16}
        ops:
          - {name: r, kind: relu, inputs: [x], outputs: [buf]}
          - {kind: index_copy, name: write, axis: 0, inputs: [buf, pos, row], outputs: [c2]}
          - {name: s, kind: sum, inputs: [c2], outputs: [total], axis: 1}
    """)
    p = api.predict_graph(workload.load(str(path)), hw, "unfused", "graph", "rooflab",
                          l2_flushed=True)
    assert [k.launch_s for k in p.kernels] == pytest.approx([COLD_S, COLD_S, WARM_S])


def test_inductors_mask_kernel_pays_its_start_beside_sdpas_gap(masked_decode):
    # under `inductor` a boolean-masked SDPA call runs after Inductor's mask kernel: the call
    # adds the replay gap (its fixed time holds its start), the mask kernel the warm start
    hw = api.load_hardware("measured/h200.yaml")
    (k,) = api.predict_graph(workload.load(str(masked_decode("bool"))), hw, "inductor",
                             "graph").kernels
    assert k.launches == 2
    assert k.launch_s == pytest.approx(hw.graph_gap_s + hw.graph_warm_launch_s)


@pytest.mark.parametrize("model, run, error", [
    ("llama3.2-1b", "h100-2026-12-07/llama3.2-1b_b1.json", -0.012),
    ("qwen2.5-0.5b", "h100-2026-12-07-b/qwen2.5-0.5b_b1_ro.json", +0.038)])
def test_replayed_decode_steps_on_the_shipped_h100_spec(model, run, error):
    # the evidence for SMALL_INPUT_BYTES: transformers decode steps (batch 1, a StaticCache of
    # 1,024 tokens) under torch.compile(mode="reduce-overhead") on two H100 leases, against
    # `inductor` replayed back to back on the shipped spec: Inductor's small kernels read
    # norm weights, biases and positions as if in L2 (+3.8 and +13.0 % with every kernel at
    # the cold figure; lab/replay_sizes/NOTES.md)
    pytest.importorskip("transformers")
    path = Path(__file__).resolve().parent.parent / "lab" / "compiled_steps" / run
    measured_s = json.loads(path.read_text())["reduce-overhead"]["min_us"] * 1e-6
    graph = api.load_workload(f"hf:{model}", {"batch": 1, "context": 1024}, "decode")
    hw = api.load_hardware("measured/h100-sxm.yaml")
    pred = api.predict_graph(graph, hw, "inductor", "reduce-overhead")
    assert pred.totals.time_s / measured_s - 1 == pytest.approx(error, abs=0.005)
