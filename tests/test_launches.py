"""`launches:` on an op: the CUDA kernels it launches when it runs alone (a split-K GEMM: 2; a bias
add cuBLASLt runs in its GEMM's epilogue: 0, in that GEMM's kernel)."""

import pytest

from rooflab import api, workload
from rooflab.errors import RooflabError

DOC = """
name: launches
tensors:
  x: {shape: [16, 1024], dtype: bf16}
  w: {shape: [1024, 4096], dtype: bf16}
  b: {shape: [4096], dtype: bf16}
ops:
  - {name: gemm, kind: matmul, inputs: [x, w], outputs: [h], launches: 2}
  - {name: bias, kind: add, inputs: [h, b], outputs: [hb], launches: 0}
  - {name: act, kind: gelu, inputs: [hb], outputs: [y]}
"""


def _load(tmp_path, text=DOC):
    f = tmp_path / "w.yaml"
    f.write_text(text)
    return workload.load(str(f))


def test_launches_count_kernels_and_a_zero_rides_in_the_producers_kernel(tmp_path):
    g = _load(tmp_path)
    hw = api.load_hardware("h200")
    p = api.predict_graph(g, hw, "unfused", "graph")
    # two rooflab kernels: gemm+bias (the bias add in the GEMM's epilogue) and gelu
    assert [k.ops for k in p.kernels] == [("gemm", "bias"), ("act",)]
    assert [k.launches for k in p.kernels] == [2, 1]
    assert p.totals.kernels == 3
    # a CUDA graph pays graph_launch_s per launched kernel
    assert p.kernels[0].launch_s == pytest.approx(2 * hw.graph_launch_s)
    # h is made and used inside the first kernel: only hb leaves it, [16, 4096] bf16
    assert p.kernels[0].hbm_write_bytes == 16 * 4096 * 2
    e = api.predict_graph(g, hw, "unfused", "eager")
    assert e.totals.kernels == 3 and e.kernels[0].launch_s >= 2 * hw.min_kernel_s


def test_a_negative_launch_count_is_one_line(tmp_path):
    with pytest.raises(RooflabError, match="launches"):
        _load(tmp_path, DOC.replace("launches: 2", "launches: -1"))


def test_compiled_launch_by_hand(tmp_path):
    """Under torch.compile (`compiled`) the wrapper's host time is one call, an extern call per
    cuBLAS GEMM and a launch per Triton kernel; the GPU follows as in eager. The doc's split-K
    GEMM stays two launches (cuBLAS's); the bias add and gelu are one Triton kernel, as Inductor
    moves a bias followed by pointwise work out of addmm into the pointwise kernel."""
    from dataclasses import replace
    g = _load(tmp_path)
    hw = replace(api.load_hardware("h200"), compiled_call_s=20e-6, compiled_launch_s=30e-6,
                 compiled_extern_s=25e-6)
    p = api.predict_graph(g, hw, "inductor", "compiled")
    assert [k.ops for k in p.kernels] == [("gemm",), ("bias", "act")]
    assert [k.launches for k in p.kernels] == [2, 1]
    # the CPU: 20 us call, 25 us GEMM call, 30 us gelu launch
    assert p.totals.host_s == pytest.approx(75e-6)
    # each kernel waits for the CPU: the GEMM starts at 45 us, gelu when its launch is issued
    # at 75 us (the GEMM's few us end long before); the step ends at 75 us + gelu's GPU time
    gelu = p.kernels[1]
    assert p.totals.time_s == pytest.approx(75e-6 + gelu.time_s - gelu.launch_s
                                            + hw.min_kernel_s)
    # back to back, the host sets the pace: 75 us a call
    assert p.totals.back_to_back_s == pytest.approx(75e-6)
    assert not any("no measured compiled_call_us" in n for n in p.notes)
    bare = api.predict_graph(g, api.load_hardware("h200"), "inductor", "compiled")
    assert any("no measured compiled_call_us" in n for n in bare.notes)


def test_compiled_host_time_of_an_sdpa_call_with_a_boolean_mask(masked_decode):
    # the wrapper launches Inductor's mask kernel (30 us), then calls SDPA (25 us), after the
    # call's own 20 us: 75 us on the host
    from dataclasses import replace
    hw = replace(api.load_hardware("h200"), compiled_call_s=20e-6, compiled_launch_s=30e-6,
                 compiled_extern_s=25e-6)
    p = api.predict(masked_decode("bool"), hw, "inductor", "compiled")
    assert p.totals.host_s == pytest.approx(75e-6)


def test_a_datasheet_spec_points_to_the_calibrated_one_that_ships():
    # the bundled h200 and h100-sxm datasheets have no ATen family curves; a calibrated spec
    # of each ships beside it, and the note names it. None ships for the a100.
    for gpu in ("h200", "h100-sxm"):
        notes = api.predict("mlp_block", gpu, "unfused", "graph").notes
        assert any("copy bandwidth (a spec calibrated on this GPU ships: "
                   f"`-H measured/{gpu}.yaml`)" in n for n in notes), gpu
        calibrated = api.predict("mlp_block", f"measured/{gpu}.yaml", "unfused", "graph")
        assert [n for n in calibrated.notes if not n.startswith("graph: ")] == []
    notes = api.predict("mlp_block", "a100-sxm-80gb", "unfused", "graph").notes
    assert any("copy bandwidth (`rooflab calibrate --gpu` measures them)" in n for n in notes)


def test_reduce_overhead_of_a_step_that_writes_its_input_is_priced_compiled(tmp_path):
    """A graph whose forward writes one of its inputs (a KV cache passed in) is not replayed by
    torch.compile's reduce-overhead: it runs, and is priced, as `compiled`, and says so."""
    from dataclasses import replace
    g = replace(_load(tmp_path), written_inputs=frozenset({"x"}))
    hw = api.load_hardware("h200")
    ro = api.predict_graph(g, hw, "inductor", "reduce-overhead")
    note = next(n for n in ro.notes if "in place" in n)
    assert note.startswith("the step writes its input x in place")
    assert ro.totals.time_s == api.predict_graph(g, hw, "inductor", "compiled").totals.time_s
    for schedule, launch in (("inductor", "compiled"), ("inductor", "graph")):
        assert not any("in place" in n for n in api.predict_graph(g, hw, schedule, launch).notes)
    assert not any("in place" in n for n in
                   api.predict_graph(_load(tmp_path), hw, "inductor", "reduce-overhead").notes)


BIG = """
name: copied
tensors:
  x: {shape: [16384, 8192], dtype: bf16}
  ids: {shape: [16384, 8192], dtype: int64}
ops:
  - {name: act, kind: gelu, inputs: [x], outputs: [y]}
  - {name: cast, kind: cast, dtype: bf16, inputs: [ids], outputs: [z]}
  - {name: sum, kind: add, inputs: [y, z], outputs: [out]}
"""


def _plain_hw(**kw):
    # copy bandwidth 4 TB/s for every size, no family curves: the copies are worked by hand
    from dataclasses import replace
    return replace(api.load_hardware("h200"), hbm_bytes_per_s=4e12, hbm_efficiency=1.0,
                   hbm_curve=(), family_curves={}, eager_dispatch_s=5e-6, min_kernel_s=3e-6,
                   eager_call_s_by_kind={"foreach_copy": 12e-6}, compiled_graph_call_s=50e-6,
                   graph_replay_call_s=2e-6, **kw)


def test_reduce_overhead_prices_trees_call_and_the_input_copy_by_hand(tmp_path):
    """`reduce-overhead`: cudagraph trees' call, then the call's inputs copied into static
    buffers (one foreach copy where they share a dtype, else a copy_ each), then the replay.
    The copy kernels take min_kernel_s on top (no family curve prices them here)."""
    from dataclasses import replace
    from rooflab.launch import reduce_overhead_s
    g = _load(tmp_path, BIG)
    hw = _plain_hw()
    sched = api.predict_graph(replace(g, call_inputs=frozenset({"x"})), hw, "inductor",
                              "reduce-overhead").schedule
    # x: 16384 x 8192 bf16 = 268,435,456 B, read and written: 536,870,912 B at 4e12 B/s;
    # 2,048 chunks of 64 Ki elements, 320 a launch: 7 launches of min_kernel_s (3 us here)
    host_s, gpu_s = reduce_overhead_s(sched, hw)
    assert host_s == pytest.approx(50e-6 + 12e-6)            # trees' call + one foreach dispatch
    assert gpu_s == pytest.approx(134.217728e-6 + 7 * 3e-6)
    # two dtypes: a copy_ each, a dispatch each; ids (int64) are 1,073,741,824 B
    both = api.predict_graph(replace(g, call_inputs=frozenset({"x", "ids"})), hw, "inductor",
                             "reduce-overhead")
    host_s, gpu_s = reduce_overhead_s(both.schedule, hw)
    assert host_s == pytest.approx(50e-6 + 2 * 5e-6)
    assert gpu_s == pytest.approx(134.217728e-6 + 536.870912e-6 + 2 * 3e-6)
    # in the prediction: the host's part before the replay, the copy before the kernels; a
    # plain `graph` replay has neither
    plain = api.predict_graph(replace(g, call_inputs=frozenset({"x", "ids"})), hw, "inductor",
                              "graph")
    assert both.totals.host_s - plain.totals.host_s == pytest.approx(60e-6)
    assert both.totals.time_s - plain.totals.time_s == pytest.approx(60e-6 + 677.08864e-6)
    assert any(n.startswith("reduce-overhead (torch.compile): +50 us host per call for "
                            "cudagraph trees; copying ids, x into the graph's static inputs: "
                            "+10.0 us host, +677.1 us GPU") for n in both.notes)
    assert not any("reduce-overhead" in n for n in plain.notes)


def test_reduce_overhead_is_its_own_launch_mode(tmp_path):
    """`graph` is a plain replay for every schedule (Inductor's kernels captured as vLLM runs
    them); `reduce-overhead` adds cudagraph trees' call for any schedule, says that torch.compile
    runs Inductor's kernels when the schedule is another, and copies no inputs of a YAML
    workload, which does not mark them."""
    from dataclasses import replace
    from rooflab.launch import reduce_overhead_s
    g = replace(_load(tmp_path, BIG), call_inputs=frozenset({"x", "gone"}))
    hw = _plain_hw()
    for schedule in ("unfused", "fused", "inductor"):
        assert not any("reduce-overhead" in n
                       for n in api.predict_graph(g, hw, schedule, "graph").notes)
    unfused = api.predict_graph(g, hw, "unfused", "reduce-overhead")
    assert any("`-s inductor` prices those" in n for n in unfused.notes)
    # a name the graph does not hold (a pipeline stage's) is no input of this step
    assert reduce_overhead_s(unfused.schedule, hw) == pytest.approx((62e-6, 134.217728e-6
                                                                       + 7 * 3e-6))
    plain = api.predict_graph(_load(tmp_path, BIG), hw, "inductor", "reduce-overhead")
    assert reduce_overhead_s(plain.schedule, hw) == pytest.approx((50e-6, 0.0))
    assert any("a workload YAML does not mark which inputs a call passes" in n
               for n in plain.notes)
    # a spec without the figure: ten tiny-op dispatches (4 us each here), and the note says so
    default = replace(hw, compiled_graph_call_s=None, eager_dispatch_s=4e-6)
    assert default.compiled_graph_call_host_s == pytest.approx(40e-6)
    assert any("no measured compiled_graph_call_us" in n for n in
               api.predict_graph(_load(tmp_path, BIG), default, "inductor",
                                 "reduce-overhead").notes)


def test_a_graphs_replay_call_is_named_beside_its_kernels():
    # the rows of a replayed step add to its total less the one cudaGraphLaunch, which the
    # note names: 11.0 us on the H200 datasheet (graph_replay_us), 6.4 on the measured spec
    for gpu, replay_us in (("h200", 11.0), ("measured/h200.yaml", 6.3787)):
        p = api.predict("mlp_block", gpu, "unfused", "graph")
        rows_s = sum(k.time_s for k in p.kernels)
        assert p.totals.time_s - rows_s == pytest.approx(replay_us * 1e-6, rel=1e-4)
        assert f"graph: the replay's one cudaGraphLaunch adds {replay_us:.1f} us to the " \
            "total, in no kernel's row" in p.notes
    assert not [n for n in api.predict("mlp_block", "h200", "unfused", "eager").notes
                if n.startswith("graph: ")]
