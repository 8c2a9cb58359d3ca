"""The CI gate on the measured Hugging Face steps (reports/hf_eager/, lab/hf_eager/measure.py):
every case is traced and re-predicted with the current model, against the H200 measurements of
transformers itself, eager and as a CUDA-graph replay."""

from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from rooflab import api  # noqa: E402
from rooflab.errors import RooflabError  # noqa: E402
from rooflab.validate import steps  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "reports" / "hf_eager" / "h200-2026-12-03.json"


@pytest.fixture(scope="module")
def rows():
    run = steps.load(RUN)
    return steps.compare(run, api.load_hardware(str(ROOT / "hardware_specs/measured/h200.yaml")))


def test_the_run_holds_every_zoo_model_that_fits_and_its_own_calibration():
    run = steps.load(RUN)
    assert {s.model for s in run.steps} == {"llama3-8b", "llama3.2-1b", "qwen2.5-7b",
                                           "qwen2.5-0.5b", "gemma3-1b", "mixtral-8x7b"}
    # decode at batch 1, 4, 16, 64 x context 1K, 4K; prefill of 512, 2K and 8K tokens
    assert len(run.steps) == 6 * (8 + 3)
    assert run.eager_dispatch_s == pytest.approx(7.155e-6, rel=1e-3)   # x.add_(1), same process


def test_traced_kernel_count_is_within_5_percent_of_the_profilers(rows):
    # acceptance: one decode step of each zoo model, traced vs counted by torch.profiler
    decode = [r for r in rows if r.step.phase == "decode"]
    worst = max(decode, key=lambda r: abs(r.kernel_error))
    assert abs(worst.kernel_error) <= 0.05, worst.step.label
    # at batch 1 and 4 a masked SDPA call of Qwen2.5-0.5B launches a fifth kernel that the
    # table does not count: 1205 traced, 1228 counted (-1.9 %)
    assert worst.kernel_error == pytest.approx(1205 / 1228 - 1, abs=1e-9)


def test_step_time_errors_meet_the_target_and_are_pinned(rows):
    # Target: median |error| <= 15 % over the cases, eager and graph. Eager steps are host-bound
    # (launching ATen calls, GEMM dispatch, views, and transformers' per-module Python at the
    # spec's module_call_us, fitted on another lease). Graph replays are the kernels' device
    # time: repeat_kv's copies out of an expanded view run at ~1.2 TB/s (the copy_broadcast
    # family), a kernel of a few bytes takes its family's fixed GPU time (an RMSNorm's rsqrt
    # and +eps of one value per row: ~1 us each), ATen's SDPA reads an expanded KV head once
    # per query head (Gemma-3-1B), and a replayed kernel priced by a measured curve adds
    # graph_gap_us (0.18 us on the calibration's lease, 0.62 on another: small-batch decode,
    # ~1,700 kernels, is under-predicted by up to 16 %), and a GEMM's weight comes from HBM,
    # not from L2 as in the curve's back-to-back timing. A replayed SDPA call adds the gap, its
    # backend's fixed time holding its start, and a kernel reading from L2 the warm figure
    # (rooflab/l2_residency.py): graph 10.7 % (8.4 before those two), because this run's
    # lease replayed each kernel with a longer gap than the spec's: at that lease's 0.62 us
    # the median is 3.0 % with a signed median of +0.4 % (3.1 and +2.1 % before them).
    # Prefill is over-predicted (GEMMs on zero ids run faster). Pinned, so that a change of
    # the model shows here.
    eager = steps.median_abs(r.eager_error for r in rows)
    graph = steps.median_abs(r.graph_error for r in rows)
    assert eager <= 0.15 and graph <= 0.15
    assert eager == pytest.approx(0.062, abs=0.005)
    assert graph == pytest.approx(0.107, abs=0.005)
    prefill_graph = steps.median_abs(r.graph_error for r in rows if r.step.phase == "prefill")
    decode_graph = steps.median_abs(r.graph_error for r in rows if r.step.phase == "decode")
    assert prefill_graph == pytest.approx(0.063, abs=0.005)
    assert decode_graph == pytest.approx(0.124, abs=0.005)


def test_the_gate_fails_without_the_repeat_kv_copy_family():
    # the model deliberately broken: repeat_kv's copies priced at the plain copy curve
    run = steps.load(RUN)
    hw = api.load_hardware(str(ROOT / "hardware_specs/measured/h200.yaml"))
    curves = {k: v for k, v in hw.family_curves.items() if k != "copy_broadcast"}
    rows = steps.compare(run, replace(hw, family_curves=curves))
    decode = [r for r in rows if r.step.phase == "decode"]
    assert steps.median_abs(r.graph_error for r in rows) > 0.15
    assert steps.median_abs(r.graph_error for r in decode) == pytest.approx(0.287, abs=0.005)


def test_not_a_run_file_is_one_line(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    with pytest.raises(RooflabError, match="not a measured-steps run file"):
        steps.load(bad)


def test_a_run_file_shaped_wrong_is_one_line(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"what": "lab/hf_eager/measure.py", "meta": {"timing": {}}, "calibration": '
                   '{"start": {"add_inplace_1elem": {"eager_wall_us_per_op": {"median": 7}}}}, '
                   '"models": {"m": {"cases": [1, 2]}}}')
    with pytest.raises(RooflabError, match="not a measured-steps run file"):
        steps.load(bad)


def test_a_second_lease_reproduces_the_graph_figures():
    # reports/hf_eager/h200-2026-12-04.json: the same 66 cases timed on another machine (and
    # profiled with per-op kernel times on a third). CUDA-graph replays reproduce (Llama-3-8B
    # decode b64 ctx4096: 176.3 ms against 176.1 the day before) and stay within the target.
    # Eager steps do not: in this lease the same host work took 25.6 to 42.6 ms for
    # Qwen2.5-7B decode at batch 1 and 4, both contexts (cases that differ only on the GPU),
    # so the median eager error is 17.1 %, over the 15 % target; pinned.
    run = steps.load(ROOT / "reports" / "hf_eager" / "h200-2026-12-04.json")
    rows = steps.compare(run, api.load_hardware(str(ROOT / "hardware_specs/measured/h200.yaml")))
    graph = steps.median_abs(r.graph_error for r in rows)
    assert graph <= 0.15
    assert graph == pytest.approx(0.104, abs=0.005)           # 3.4 % at its gap, 0.62 us
    assert steps.median_abs(r.eager_error for r in rows) == pytest.approx(0.171, abs=0.005)
    assert run.eager_dispatch_s == pytest.approx(10.24e-6, rel=1e-2)   # x.add_(1), this lease


def test_a_run_with_its_own_host_steps_fits_the_module_cost():
    # reports/hf_eager/h200-2026-12-04-r5.json: a third lease, which also timed each model's
    # shrunk all-layer decode step in the same process (host time alone). The module call cost
    # that closes those steps' gap is fitted from them (median over the 6 models), so the
    # eager prediction uses no constant from another machine: eager 15.0 %, at the 15 %
    # target's edge (15.03 %, not met), graph 9.9 %. This lease's host was noisy: the same
    # host work of Llama-3.2-1B decode b1 took 13.1 ms at context 1024 and 23.0 ms at 4096.
    run = steps.load(ROOT / "reports" / "hf_eager" / "h200-2026-12-04-r5.json")
    hw = api.load_hardware(str(ROOT / "hardware_specs/measured/h200.yaml"))
    assert len(run.host_steps) == 6
    assert steps.module_call_fit(run, steps.calibrated(hw, run)) == pytest.approx(31.71e-6, rel=0.01)
    rows = steps.compare(run, hw)
    eager = steps.median_abs(r.eager_error for r in rows)
    graph = steps.median_abs(r.graph_error for r in rows)
    assert graph <= 0.15
    assert eager == pytest.approx(0.150, abs=0.005)
    assert graph == pytest.approx(0.099, abs=0.005)
