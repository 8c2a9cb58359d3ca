"""The torch backend's CI gate: the committed H200 runs of the torch suite (reports/validation/
torch/h200-2026-12-04.json, -r3.json and -fresh.json) re-predicted with the current model and the
measured spec, whose ATen family curves `rooflab calibrate --gpu` fitted on another lease
(reports/calibration/h200-2026-12-04-torch.json). Each run is compared under its own host
figures."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("torch")

from rooflab import api  # noqa: E402
from rooflab.errors import RooflabError  # noqa: E402
from rooflab.kernel_families import FAMILIES, GEMM_FAMILY, ROW_FAMILIES  # noqa: E402
from rooflab.validate import accuracy, records  # noqa: E402
from rooflab.validate import torch_compare as tc  # noqa: E402
from rooflab.validate import torch_fit as tf  # noqa: E402
from rooflab.validate import torch_suite  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04.json"
# a second lease's run: transformers' repeat_kv copies and masked decode SDPA, with a few cases
# of the first run's families to compare the two leases
RUN_R3 = ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-r3.json"
SPEC = ROOT / "hardware_specs" / "measured" / "h200.yaml"
# an H100 lease's calibration and, on it, the whole suite (the spec it calibrated beside it)
RUN_H100 = ROOT / "reports" / "validation" / "torch" / "h100-80gb-hbm3-2026-12-06.json"
RUN_H100_R2 = RUN_H100.with_name("h100-80gb-hbm3-2026-12-06-r2.json")


@pytest.fixture(scope="module")
def doc():
    return tc.load(RUN)


@pytest.fixture(scope="module")
def hw():
    return api.load_hardware(str(SPEC))


@pytest.fixture(scope="module")
def rows(doc, hw):
    return tc.compare(doc, hw)


@pytest.fixture(scope="module")
def rows_r3(hw):
    return tc.compare(tc.load(RUN_R3), hw)


def _row(family, moved_bytes, kernel_us, split="calibration"):
    return tc.CaseComparison(id=f"{family}_{moved_bytes}", family=family, split=split,
                             kernels_measured=1, kernels_predicted=1, moved_bytes=moved_bytes,
                             kernel_us=kernel_us, kernel_us_predicted=0.0, eager_us=None,
                             eager_us_predicted=0.0, graph_us=None, graph_us_predicted=0.0)


def test_family_curve_by_hand():
    # 1 MB in 10 us and 10 MB in 20 us at a 4.8 TB/s peak: the time is interpolated linearly
    # in bytes (constant below 1 MB) and written a quarter-decade apart from 1 kB
    rows = [_row("softmax", 10**6, 10.0), _row("softmax", 10**7, 20.0),
            _row("softmax", 10**7, 99.0, split="validation")]        # validation: not fitted
    curve = dict(tf.fit_family_curves(rows, 4.8e12, ["softmax", "cat"])["softmax"])
    assert curve[0.001] == pytest.approx(1e3 / 10e-6 / 4.8e12, rel=1e-3)     # 2.083e-5
    assert curve[1.0] == pytest.approx(0.02083)                             # 1e6 / 10 us / peak
    assert curve[10.0] == pytest.approx(0.1042)                             # 1e7 / 20 us / peak
    # 10^6.5 bytes: 10 + (3.162e6 - 1e6) / 9e6 * 10 = 12.4025 us -> 0.05312
    assert curve[3.162] == pytest.approx(0.05312)
    assert len(curve) == 17         # 10^3 .. 10^6.75 by quarter decades, and 10 MB
    assert "cat" not in tf.fit_family_curves(rows, 4.8e12, ["cat"])


def test_family_curve_keeps_the_l2_slope_up_to_its_capacity():
    # an add measured at 6.29 MB (1.82 us), 12.58 MB (2.50 us), both inside a 50 MB L2, and at
    # 50.33 MB (11.90 us), beyond it. Up to 50 MB the time follows the L2 slope,
    # (2.50 - 1.82) / 6.29 = 0.1081 us per MB: 2.50 + 37.42 x 0.1081 = 6.545 us at 50 MB
    rows = [_row("elementwise", b, t) for b, t in ((6_290_000, 1.82), (12_580_000, 2.50),
                                                  (50_330_000, 11.90))]
    curve = dict(tf.fit_family_curves(rows, 4.8e12, ["elementwise"], l2_bytes=50e6)["elementwise"])
    assert curve[50.0] == pytest.approx(50e6 / 6.545e-6 / 4.8e12, rel=1e-3)          # 1.592
    # 31.62 MB (10^7.5, a grid point) on the L2 slope: 2.50 + 19.04 x 0.1081 = 4.558 us
    assert curve[31.62] == pytest.approx(31.62e6 / 4.558e-6 / 4.8e12, rel=2e-3)      # 1.445
    # without the capacity, a straight line from 12.58 to 50.33 MB: 7.241 us at 31.62 MB
    plain = dict(tf.fit_family_curves(rows, 4.8e12, ["elementwise"])["elementwise"])
    assert plain[31.62] == pytest.approx(31.62e6 / 7.241e-6 / 4.8e12, rel=2e-3)     # 0.910


def test_family_curve_past_l2_runs_no_faster_than_the_first_measurement_beyond():
    # a row sum measured at 8 MB (4 us) and 16 MB (6 us) inside a 50 MB L2, and at 268 MB
    # (90 us) beyond it: 2.978 TB/s there. The L2 knot: 6 + 34 x 0.25 = 14.5 us at 50 MB.
    # A line from the knot to 268 MB would give 14.5 + 17.78 / 218 x 75.5 = 20.66 us at
    # 67.78 MB (a grid point, 10^7.75 x 1.2); past the capacity the time is at least the
    # bytes at 2.978 TB/s: 100 MB (a grid point) in 33.58 us, not 14.5 + 50 / 218 x 75.5 =
    # 31.82 us
    rows = [_row("reduce_row", b, t) for b, t in ((8_000_000, 4.0), (16_000_000, 6.0),
                                                 (268_000_000, 90.0))]
    curve = dict(tf.fit_family_curves(rows, 4.8e12, ["reduce_row"], l2_bytes=50e6)["reduce_row"])
    assert curve[50.0] == pytest.approx(50e6 / 14.5e-6 / 4.8e12, rel=1e-3)      # the knot: 0.7184
    rate = 268e6 / 90e-6                                                      # 2.978 TB/s
    assert curve[50.05] == pytest.approx(rate / 4.8e12, rel=2e-3)             # just past: 0.6204
    assert curve[100.0] == pytest.approx(rate / 4.8e12, rel=2e-3)
    assert curve[268.0] == pytest.approx(rate / 4.8e12, rel=2e-3)
    # 17.78 MB, inside L2, stays on the L2 slope: 6 + 1.78 x 0.25 = 6.445 us
    assert curve[17.78] == pytest.approx(17.78e6 / 6.445e-6 / 4.8e12, rel=2e-3)


def test_family_curve_above_a_floor_measurement_is_the_floor_or_the_next_rate():
    # a vocabulary softmax (rows of 256 kB) measured at 10 MB in 30 us, on its floor (30 us),
    # and at 100 MB in 60 us. Up to where 100 MB's rate (1.667 TB/s) takes longer than the
    # floor the time is the floor's: 30 us at 31.62 MB (a grid point), not the line's
    # 30 + 21.62 / 90 x 30 = 37.21 us; at 56.23 MB, 56.23 / 100 x 60 = 33.74 us (line: 45.41)
    def row(nbytes, us):
        return replace(_row("softmax_long_row", nbytes, us), row_bytes=256_000, rows=1)
    rows = [row(10_000_000, 30.0), row(100_000_000, 60.0)]
    fit = tf.fit_family_curves(rows, 4.8e12, ["softmax_long_row"],
                               row_floors={"softmax_long_row": [(256.0, 30.0)]})
    curve = dict(fit["softmax_long_row"])
    assert curve[31.62] == pytest.approx(31.62e6 / 30e-6 / 4.8e12, rel=2e-3)        # 0.2196
    assert curve[56.23] == pytest.approx(56.23e6 / 33.74e-6 / 4.8e12, rel=2e-3)     # 0.3472
    assert curve[100.0] == pytest.approx(100e6 / 60e-6 / 4.8e12, rel=2e-3)
    # 30 us is more than 1.1 x a 20 us floor: a measurement off the floor, the line stays
    lifted = dict(tf.fit_family_curves(rows, 4.8e12, ["softmax_long_row"], row_floors={
        "softmax_long_row": [(256.0, 20.0)]})["softmax_long_row"])
    assert lifted[31.62] == pytest.approx(31.62e6 / 37.21e-6 / 4.8e12, rel=2e-3)


def test_row_floor_fit_by_hand():
    # few-row cases (at most 8 rows per SM) give a row length its least time; the 65536-row
    # case is bandwidth-bound and is not a floor sample
    def row(rb, rows, us):
        return replace(_row("rms_norm", rb * rows, us), row_bytes=rb, rows=rows)
    rows = [row(8192, 4, 3.97), row(8192, 64, 4.26), row(4096, 1, 2.60), row(2048, 64, 2.90),
            row(16384, 65536, 786.0)]
    assert tf.fit_row_floors(rows, 132) == {"rms_norm": [(2.048, 2.9), (4.096, 2.6),
                                                          (8.192, 3.97)]}


def test_the_spec_curves_are_its_calibrations_fit(hw):
    # the measured spec's kernel_families are exactly what its calibration's torch run fits to
    cal = ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-r9.json"
    rows = tc.compare(tc.load(cal), hw)
    per_index = {"embedding": tf.fit_per_index(rows, "embedding")}
    assert hw.family_per_index_s["embedding"] == pytest.approx(per_index["embedding"], rel=1e-3)
    floors = tf.fit_row_floors(rows, hw.sm_count)
    fitted = tf.fit_family_curves(rows, hw.hbm_bytes_per_s, FAMILIES, hw.l2_bytes, per_index,
                                  floors)
    # r9 predates the strided cat's cases (that family is priced as a plain cat there), the
    # grouped expert GEMMs' and the foreach copy's
    assert set(fitted) == set(hw.family_curves) - {GEMM_FAMILY} == \
        set(FAMILIES) - {GEMM_FAMILY, "cat_strided", "grouped_mm", "foreach_copy"}
    for fam, pts in fitted.items():
        spec = hw.family_curves[fam]
        assert [b for b, _ in spec] == pytest.approx([mb * 1e6 for mb, _ in pts])
        assert [f for _, f in spec] == pytest.approx([f for _, f in pts])
    assert set(floors) == set(ROW_FAMILIES) == set(hw.family_row_floors)
    # rms_norm's rows of 4096 bf16 (8 KB): 4 rows took 4.02 µs, the least of its few-row cases
    assert dict(hw.family_row_floors["rms_norm"])[8192] == pytest.approx(4.02e-6, rel=0.01)


def test_suite_coverage(rows, rows_r3):
    assert len(rows) == 195 and len(rows_r3) == 32
    assert {r.family for r in rows + rows_r3} == \
        set(FAMILIES) - {GEMM_FAMILY, "cat_strided", "grouped_mm", "foreach_copy"} | {
            "gemm", "bmm", "sdpa", "step"}
    assert sum(r.split == "validation" for r in rows) == 90
    # the H100 lease of 2026-12-06 ran every case of the suite, the strided cat's included,
    # but the calibration cases added after its shape study, the grouped expert GEMMs and the
    # foreach copies, and the reduction and linear chains
    h100 = tc.load(RUN_H100)
    assert {c.id for c in torch_suite.select()} - {r["id"] for r in h100["cases"]} == {
        "sum_col_4096x4096_bf16", "sum_col_16384x4096_bf16", "softmax_2048x6144_bf16",
        "softmax_1024x7168_bf16", "softmax_256x128256_bf16"} | {
        c.id for c in torch_suite.select("^(grouped_mm|foreach_copy|reduction_chain|linear_chain)")}


def test_validation_errors_are_pinned(rows):
    # Targets (issue 14): per kernel median 8 %, p90 20 %; whole call eager and graph 10 %.
    # The curves come from another lease's calibration; each op kind's eager call is fitted
    # on this run's own calibration cases. Met: all four (eager 9.3 %, graph 8.6 %).
    # Not met: the eager->graph speedup (11.8 %: this run measured no synchronize cost).
    # Pinned, so that a change of the model shows here.
    s = tc.summary([r for r in rows if r.split == "validation"])
    assert s["kernel_median"] == pytest.approx(0.042, abs=0.005)
    assert s["kernel_p90"] == pytest.approx(0.180, abs=0.01)
    assert s["eager_median"] == pytest.approx(0.093, abs=0.005)
    assert s["graph_median"] == pytest.approx(0.086, abs=0.005)
    assert s["speedup_median"] == pytest.approx(0.118, abs=0.005)
    fam = tc.by_family([r for r in rows if r.split == "validation"])
    assert fam["elementwise_broadcast"]["kernel_median"] < 0.02
    assert fam["gemm"]["kernel_median"] < 0.08


def test_repeat_kv_and_masked_decode_sdpa_errors_are_pinned(rows_r3):
    # the copy out of an expanded view runs at ~1.2 TB/s: its own family curve prices it
    fam = tc.by_family([r for r in rows_r3 if r.split == "validation"])
    assert fam["copy_broadcast"]["kernel_median"] == pytest.approx(0.049, abs=0.005)
    assert fam["copy_broadcast"]["kernel_p90"] == pytest.approx(0.063, abs=0.005)
    assert fam["sdpa"]["kernel_median"] == pytest.approx(0.100, abs=0.005)
    # masked decode: the mask's fill and where, the attention kernel and cuDNN's reduction
    mask = [r for r in rows_r3 if r.id.startswith("sdpa_decode_mask_b4")]
    assert all(r.kernels_measured == r.kernels_predicted == 4 for r in mask)


def test_the_gate_fails_without_the_copy_broadcast_curve(rows_r3, hw):
    curves = {k: v for k, v in hw.family_curves.items() if k != "copy_broadcast"}
    broken = tc.compare(tc.load(RUN_R3), replace(hw, family_curves=curves),
                        only_split="validation")
    fam = tc.by_family(broken)
    assert fam["copy_broadcast"]["kernel_median"] > 0.6        # priced at copy bandwidth


def test_the_gate_fails_on_a_broken_model(doc, hw):
    # without the family curves every ATen kernel is priced at copy bandwidth (the model
    # before the curves): the per-kernel median grows fourfold
    broken = tc.compare(doc, replace(hw, family_curves={}, family_row_floors={},
                                     family_per_index_s={}), only_split="validation")
    assert tc.summary(broken)["kernel_median"] > 0.2


def test_a_case_on_the_meta_trace_matches_the_run_by_hand(rows):
    # add of two 128M-element bf16 tensors: 3 x 256 MiB moved, measured 182.8 us; its family
    # curve's last point is that case itself (a calibration case), so it is predicted exactly
    r = next(r for r in rows if r.id == "add_128M_bf16")
    assert r.moved_bytes == 3 * 2**27 * 2
    assert r.kernel_error == pytest.approx(0.0, abs=0.005)


def test_not_a_run_is_one_line(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"schema": "other"}')
    with pytest.raises(RooflabError, match="not a torch-suite run file"):
        tc.load(bad)
    bad.write_text("{")
    with pytest.raises(RooflabError, match="cannot read"):
        tc.load(bad)


def test_compiled_host_fit_pinned(doc):
    # 8 host-bound compiled calibration cases, least squares on Inductor's real kernel counts:
    # compiled_us = (45.295 - L) + triton x L + extern x E, where 45.295 us is the median of
    # the four one-Triton-kernel cases (43.76, 44.583, 46.007, 54.963 us)
    fit = tc.fit_compiled_host(doc)
    assert fit["cases"] == 8
    assert fit["compiled_launch_us"] == pytest.approx(34.61, abs=0.01)
    assert fit["compiled_extern_us"] == pytest.approx(23.65, abs=0.01)
    assert fit["compiled_call_us"] == pytest.approx(45.295 - 34.614, abs=0.01)


def test_inductor_kernel_counts_by_name():
    names = ["triton_red_fused__fused_rms_norm_0", "Memset (Device)",
             "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_splitK_TNT",
             "void cublasLt::splitKreduce_kernel<32, 16, int, float>(...)",
             "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7"]
    # a split-K GEMM (its memset and reduction are parts of the one cuBLAS call) and SDPA
    assert tc.inductor_kernel_counts(names) == (1, 2)
    # at decode sizes cuDNN's SDPA reduces over its split KV blocks in a second kernel, part of
    # the one call (a compiled Llama-3.2-1B decode step: 16 of them, lab/compiled_steps)
    decode = names + ["void cudnn::fusion::lean_reduction_kernel<false, false, false>(...)"]
    assert tc.inductor_kernel_counts(decode) == (1, 2)


@pytest.mark.parametrize("model, layers", [("llama3.2-1b", 16), ("qwen2.5-0.5b", 24)])
def test_inductor_counts_of_a_real_decode_step(model, layers):
    # what torch.compile ran for a transformers decode step (batch 1, a StaticCache of 1,024
    # tokens), profiled on an H100 (lab/compiled_steps/h100-2026-12-07), against `inductor`.
    # Per layer both run 10 Triton kernels: two norms, the query's rotary, the key's rotary
    # with its cache write, the value's cache write, the copies of K and V for SDPA, the
    # additive mask of each SDPA call, SiLU x up, the cache length's update. Outside the
    # layers Inductor recomputes the rotary tables and the mask in their readers (2 kernels
    # where `inductor` runs 6).
    pytest.importorskip("transformers")
    run = ROOT / "lab" / "compiled_steps" / "h100-2026-12-07" / f"{model}_b1.json"
    measured = tc.inductor_kernel_counts(json.loads(run.read_text())["default"]["kernels"])
    graph = api.load_workload(f"hf:{model}", {"batch": 1, "context": 1024}, "decode")
    pred = api.predict_graph(graph, api.load_hardware("h100-sxm"), "inductor", "compiled")
    assert measured == (10 * layers + 2, 8 * layers + 2)
    assert pred.schedule.triton_and_extern() == (10 * layers + 6, 8 * layers + 2)


def test_compiled_validation_errors_are_pinned(rows):
    # Targets (issue 14): compiled whole-call median 10 %, eager->compiled speedup median 10 %.
    # Met for the call (8.6 %), not for the speedup (12.2 %): the compiled host cost per call
    # varies 44-55 us for one Triton kernel within this run. Inductor's kernel counts match on
    # every case (the rotary embeddings of q and k are one kernel: sibling fusion).
    val = [r for r in rows if r.split == "validation"]
    s = tc.summary(val)
    assert s["compiled_median"] == pytest.approx(0.086, abs=0.005)
    assert s["compiled_speedup_median"] == pytest.approx(0.122, abs=0.005)
    compiled = [r for r in rows if r.compiled_us]
    assert len(compiled) == 40
    wrong = sorted(r.id for r in compiled if r.inductor_kernels != r.inductor_kernels_predicted)
    assert wrong == []


def test_split_reductions_match_inductor(rows):
    # Inductor split sum over 16 M fp32 and over [8192, 4096]'s columns into 2 kernels and
    # softmax over rows of 128,256 into 5; the split kernels spread over the grid
    by_id = {r.id: r for r in rows}
    assert by_id["sum_all_16M_fp32"].inductor_kernels_predicted == (2, 0)
    assert by_id["sum_col_8192x4096_bf16"].inductor_kernels_predicted == (2, 0)
    assert by_id["softmax_128x128256_bf16"].inductor_kernels_predicted == (5, 0)
    assert by_id["softmax_64x1024_bf16"].inductor_kernels_predicted == (1, 0)
    # 64 MiB read over the grid, not one program on one SM (2.2 ms before the split)
    assert by_id["sum_all_16M_fp32"].compiled_us_predicted < 100


def test_calibrate_puts_a_runs_figures_into_the_spec(doc):
    # what `rooflab calibrate --gpu` does with its torch-suite run, on the committed run and
    # the committed calibration: curves, torch.compile's host figures, a source that cites it
    import json
    from rooflab.hardware import to_core
    from rooflab.hardware_spec import HardwareFile
    from rooflab.validate.calspec import write_spec
    from rooflab.yamlio import load_yaml
    base = HardwareFile.model_validate(load_yaml(ROOT / "hardware_specs/h200.yaml", "spec").data)
    raw = json.loads((ROOT / "reports/calibration/h200-2026-12-03.json").read_text())
    spec = write_spec(base, raw["measured"], raw["provenance"], "cal.json")
    out = tf.add_to_spec(spec, doc, "cal-torch.json")
    hw = to_core(HardwareFile.model_validate(out))
    # not in that run: the repeat_kv copy and the kernels by shape
    assert set(hw.family_curves) == set(FAMILIES) - {
        "copy_broadcast", "softmax_warp", "softmax_wide_row", "softmax_long_row",
        "embedding_small_index", "cat_strided", "grouped_mm", "foreach_copy"}
    assert hw.compiled_launch_s == pytest.approx(34.61e-6, abs=1e-8)
    assert hw.compiled_call_s == pytest.approx((45.295 - 34.61) * 1e-6, abs=2e-8)
    assert hw.graph_gap_s is None                  # that run did not measure the replay gap
    assert "cal-torch.json" in out["sources"]["CAL-TORCH"]
    assert out["kernel_families"]["softmax"]["source"] == "CAL-TORCH"
    assert "kernel_families" not in spec or spec["kernel_families"] != out["kernel_families"]
    import yaml
    yaml.safe_dump(out)             # plain numbers: the spec is written as YAML


def test_the_fresh_calibrations_validation_run_is_pinned(hw):
    # `rooflab validate --gpu --backend torch --split validation` on the lease after the
    # calibration: a validation-only run cannot fit torch.compile's host figures, and another
    # machine's differ, so its compiled calls are not compared; Inductor's kernel counts are
    doc = tc.load(ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-fresh.json")
    assert tc.compiled_host_of(doc) is None
    rows = tc.compare(doc, hw)
    s = tc.summary(rows)
    assert s["cases"] == 100
    assert s["kernel_median"] == pytest.approx(0.044, abs=0.005)
    assert s["graph_median"] == pytest.approx(0.067, abs=0.005)
    compiled = [r for r in rows if r.compiled_us]
    assert len(compiled) == 25 and all(r.compiled_us_predicted is None for r in compiled)
    assert s["inductor_count_match"] == pytest.approx(1.0)
    assert "calls are not compared" in tc.report(doc, hw)


def test_cli_validate_from_a_torch_run_and_its_errors(tmp_path):
    from typer.testing import CliRunner
    from rooflab.cli import app
    runner = CliRunner()
    r = runner.invoke(app, ["validate", "--from", str(RUN_R3), "-H", str(SPEC)])
    assert r.exit_code == 0, r.output
    assert "repeat_kv4_b64_h8_s4096_d128_bf16" in r.stdout and "  copy_broadcast" in r.stdout
    for args, expected in [
            (["--backend", "torch"], "validate runs kernels only with --gpu"),
            (["--backend", "torch", "workloads/rmsnorm.yaml"], "not a workload"),
            (["--backend", "cuda"], "--backend cuda: expected triton or torch"),
            (["--backend", "torch", "--split", "train", "--from", str(RUN_R3)],
             "--split train: expected calibration or validation")]:
        r = runner.invoke(app, ["validate", *args])
        lines = r.output.strip().splitlines()
        assert r.exit_code == 2 and len(lines) == 1 and expected in lines[0], r.output


def test_calibrate_from_rebuilds_the_shipped_spec(tmp_path, monkeypatch):
    # the shipped spec is exactly what its calibration (raw figures + torch run) rebuilds to,
    # run from the checkout as `rooflab calibrate --gpu` was (the spec cites relative paths)
    from typer.testing import CliRunner
    from rooflab.cli import app
    monkeypatch.chdir(ROOT)
    out = tmp_path / "h200.yaml"
    r = CliRunner().invoke(app, ["calibrate", "--from", "reports/calibration/h200-2026-12-04.json",
                                 "--torch-run", "reports/validation/torch/h200-2026-12-04-r9.json",
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text() == SPEC.read_text()
    # the calibration's own torch run (a slow host state: a one-kernel compiled call took
    # 110 us) gives every torch.compile host figure, cudagraph trees' call among them
    assert api.load_hardware(str(out)).compiled_graph_call_s == pytest.approx(151.66e-6,
                                                                             abs=1e-8)
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    r = CliRunner().invoke(app, ["calibrate", "--from", str(bad), "-o", str(tmp_path / "x.yaml")])
    assert r.exit_code == 2 and "not a calibration's raw figures" in r.output



def test_a_run_with_its_synchronize_cost_pins_eager_and_the_speedup(hw):
    # reports/validation/torch/h200-2026-12-04-fresh2.json: the validation split on a lease
    # that also measured what a synchronize after a call adds (sync_us, 4.9 us there); the
    # measured eager calls are each followed by one, so the prediction adds it
    doc = tc.load(ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-fresh2.json")
    assert doc["host"]["sync_us"] == pytest.approx(4.9)
    s = tc.summary(tc.compare(doc, hw))
    # (a validation-only run: no per-kind eager calls of its own, every op costs its tiny op)
    assert s["eager_median"] == pytest.approx(0.117, abs=0.005)
    assert s["speedup_median"] == pytest.approx(0.134, abs=0.005)
    assert s["graph_median"] == pytest.approx(0.087, abs=0.005)
    doc["host"].pop("sync_us")           # without it, as before the runs measured it
    s = tc.summary(tc.compare(doc, hw))
    assert s["eager_median"] == pytest.approx(0.198, abs=0.005)
    assert s["speedup_median"] == pytest.approx(0.213, abs=0.005)


def test_a_users_module_runs_as_a_torch_case_and_compares(tmp_path):
    # `validate --backend torch py:FILE:FACTORY --input ...`: the module becomes a `step` case;
    # on the CPU the runner times it eagerly only, and the comparison traces the same module
    from rooflab.errors import RooflabError
    from rooflab.validate import torch_run, torch_suite
    src = f"py:{ROOT / 'examples' / 'transformer_block.py'}:build_mlp"
    case = torch_suite.program_case(src, ("x=[4,1024]:bf16",))
    assert (case.id, case.family, case.compile) == ("transformer_block.build_mlp", "step", True)
    assert case.inputs[0].shape == (4, 1024) and case.inputs[0].fill == "randn"
    run = torch_run.run([case], device="cpu", budget_s=60, command="test")
    assert run["cases"][0]["eager_us"] > 0
    rows = tc.compare(run, api.load_hardware("h200"), extra_cases=[case])
    assert [r.id for r in rows] == ["transformer_block.build_mlp"]
    assert rows[0].kernels_predicted >= 3 and rows[0].eager_us is None   # no sync on the CPU
    with pytest.raises(RooflabError, match="give the forward's inputs with --input"):
        torch_suite.program_case(src, ())
    with pytest.raises(RooflabError, match="fills only"):
        torch_suite.program_case(src, ("x=[4,1024]:int8",))


def test_a_users_module_measured_on_the_h200_is_pinned(hw):
    # `rooflab validate --gpu --backend torch py:examples/transformer_block.py:build --input
    # "x=[8,512,1024]:bf16"` on the lent H200: its kernels +1.4 %, the graph replay -1.0 %,
    # 4 kernels short (26 of 30: cuBLAS's and cuDNN's memsets). Its causal SDPA reads q, k, v
    # as views of the qkv GEMM's output: priced over those views' 128 heads (22.6 µs measured,
    # 14.8 predicted), not the root's one (84 µs: the over-prediction of +23 % before)
    from rooflab.validate import torch_suite
    case = torch_suite.program_case(f"py:{ROOT / 'examples' / 'transformer_block.py'}:build",
                                    ("x=[8,512,1024]:bf16",))
    doc = tc.load(ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-block.json")
    assert "no case of this run is a torch-suite case" in tc.report(doc, hw)
    (row,) = tc.compare(doc, hw, extra_cases=[case])
    assert (row.kernels_predicted, row.kernels_measured) == (26, 30)
    assert row.kernel_error == pytest.approx(0.014, abs=0.005)
    assert row.graph_error == pytest.approx(-0.010, abs=0.005)


RUN_R7 = ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-r7.json"


def test_the_shipped_specs_validation_on_another_lease_is_pinned(hw):
    # `rooflab validate --gpu --backend torch` with the shipped spec on a later lease (both
    # splits; its own torch.compile host fit): the 103 validation cases, kernels ATen picks by
    # shape and SDPA backends included. Per-kernel median and p90 within their targets (8 and
    # 20 %), eager and graph too (10 %); compiled not (13.6 %)
    doc = tc.load(RUN_R7)
    assert tc.compiled_host_of(doc) is not None
    val = [r for r in tc.compare(doc, hw) if r.split == "validation"]
    s = tc.summary(val)
    assert s["cases"] == 103
    assert s["kernel_median"] == pytest.approx(0.045, abs=0.005)
    assert s["kernel_p90"] == pytest.approx(0.161, abs=0.01)
    assert s["graph_median"] == pytest.approx(0.080, abs=0.005)
    assert s["eager_median"] == pytest.approx(0.056, abs=0.005)
    assert s["compiled_median"] == pytest.approx(0.136, abs=0.005)
    fam = tc.by_family(val)
    assert fam["sdpa"]["kernel_median"] == pytest.approx(0.065, abs=0.005)
    assert fam["embedding_small_index"]["kernel_median"] == pytest.approx(0.087, abs=0.005)


def test_the_gate_fails_without_the_sdpa_backends(hw):
    # SDPA at the Triton FlashAttention's efficiency for every backend: the masked and fp32
    # calls are off by 30-40 % again
    doc = tc.load(RUN_R7)
    broken = tc.compare(doc, replace(hw, attention_backend_efficiency={}), only_split="validation")
    assert tc.by_family(broken)["sdpa"]["kernel_median"] > 0.12


def test_a_run_with_the_bare_module_call_charges_it(hw):
    # reports/validation/torch/h200-2026-12-04-r8.json measured a bare nn.Module's call
    # (2.0 us on that lease): each case's eager call pays it once for itself, and the fit of
    # each op kind's eager call takes it out first. Without it measured, the add's fitted
    # call absorbs it: the prediction of a one-add case is the same either way
    doc = tc.load(ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-r8.json")
    assert doc["host"]["module_call_us"] == pytest.approx(2.0, abs=0.01)
    val = [r for r in tc.compare(doc, hw) if r.split == "validation"]
    s = tc.summary(val)
    assert s["cases"] == 104
    assert s["kernel_median"] == pytest.approx(0.041, abs=0.005)
    assert s["kernel_p90"] == pytest.approx(0.158, abs=0.01)
    assert s["eager_median"] == pytest.approx(0.057, abs=0.005)
    assert s["graph_median"] == pytest.approx(0.081, abs=0.005)
    add = next(r for r in val if r.id == "add_64K_bf16")
    doc["host"].pop("module_call_us")
    without = next(r for r in tc.compare(doc, hw, only_split="validation")
                   if r.id == "add_64K_bf16")
    assert add.eager_us_predicted == pytest.approx(without.eager_us_predicted, abs=0.01)


def test_reduce_overhead_prices_the_input_copies(hw):
    # torch.compile(mode="reduce-overhead") on the later lease: Inductor's kernels replayed as
    # a CUDA graph after the non-static inputs are copied in. The Llama-3 embedding passes its
    # 1.05 GB table beside int64 ids (a copy_ each): ~2.1 GB moved by the copy alone, ~500 us
    # of the call
    doc = tc.load(ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-r8.json")
    rows = tc.compare(doc, hw)
    emb = next(r for r in rows if r.id == "embedding_1024x4096_v128256_bf16")
    assert emb.compiled_graph_us == pytest.approx(510.3, abs=0.1)
    assert emb.compiled_graph_error == pytest.approx(-0.051, abs=0.005)
    val = [r for r in rows if r.split == "validation"]
    assert sum(r.compiled_graph_us_predicted is not None for r in val) == 25
    assert tc.summary(val)["compiled_graph_median"] == pytest.approx(0.122, abs=0.005)
    # a validation-only run cannot fit cudagraph trees' own call: no comparison
    fresh = tc.compare(tc.load(ROOT / "reports" / "validation" / "torch" /
                               "h200-2026-12-04-fresh.json"), hw)
    assert all(r.compiled_graph_us_predicted is None for r in fresh)


def test_reduce_overhead_copies_its_inputs_with_one_foreach_copy():
    # cudagraph trees copy the non-static inputs with one torch._foreach_copy_: one dtype
    # throughout takes ATen's multi_tensor_apply kernel (one call, the foreach_copy curve),
    # two dtypes a copy_ each (a dispatch each, the elementwise curve). Curves flat at 0.5
    # and 0.8 of the H200's 4.8 TB/s; the product's price (launch.reduce_overhead_s) is what
    # the comparison takes
    from rooflab import workload
    from rooflab.launch import reduce_overhead_s
    base = replace(api.load_hardware("h200"), eager_dispatch_s=5e-6,
                   eager_call_s_by_kind={"foreach_copy": 9e-6}, compiled_graph_call_s=20e-6,
                   family_curves={"foreach_copy": ((1e3, 0.5), (1e10, 0.5)),
                                  "elementwise": ((1e3, 0.8), (1e10, 0.8))})

    def parts(ids_dtype):
        g = workload.load_dict({"name": "two", "tensors": {
            "x": {"shape": [2 ** 25], "dtype": "bf16"},
            "y": {"shape": [2 ** 25], "dtype": "bf16"},
            "ids": {"shape": [1024], "dtype": ids_dtype}}, "ops": [
            {"name": "a", "kind": "add", "inputs": ["x", "y"], "outputs": ["s"]},
            {"name": "c", "kind": "cast", "dtype": "bf16", "inputs": ["ids"],
             "outputs": ["t"]}]})
        g = replace(g, call_inputs=frozenset({"x", "y"} if ids_dtype == "bf16" else {"x", "ids"}))
        return reduce_overhead_s(api.predict_graph(g, base, "inductor", "reduce-overhead")
                                 .schedule, base)
    host, gpu = parts("bf16")
    # x and y, 64 MiB each, read and written: 268.4 MB at 2.4 TB/s = 111.85 us
    assert host == pytest.approx(20e-6 + 9e-6)
    assert gpu == pytest.approx(111.8481e-6, rel=1e-5)
    host, gpu = parts("int64")
    # x and 1,024 int64 ids: 134.2 MB and 16.4 kB at 3.84 TB/s: 34.953 + 0.004 us
    assert host == pytest.approx(20e-6 + 2 * 5e-6)
    assert gpu == pytest.approx(34.9568e-6, rel=1e-5)


def test_a_graph_writing_its_input_is_not_replayed_under_reduce_overhead(hw):
    # cudagraph trees skip a graph that writes an input in place (the KV-cache write's cache
    # is the case's input): torch.compile runs it as a plain compiled call, 60.3 us at the
    # fastest window on the seventh H100 lease against 51.9 compiled; predicted as compiled
    rows = _h100_lease("h100-80gb-hbm3-2026-12-07-r3.json", 11, 42.32, 16.25, 29.97)
    kv = next(r for r in rows if r.id == "index_copy_b1_s4096_t512_h8_d128_bf16")
    assert kv.compiled_graph_us == pytest.approx(60.3, abs=0.1)
    assert kv.compiled_graph_us_predicted == kv.compiled_us_predicted
    assert kv.compiled_graph_error == pytest.approx(-0.029, abs=0.005)


def test_a_host_bound_copy_curve_is_named():
    # the 20:01 calibration's copy curve: 8 to 34 MB took ~20 us each (a loaded host's graph
    # launch), where a bandwidth-bound copy halves its time with its bytes; 18:11's did not
    import json
    from rooflab.validate.calspec import host_bound_sizes
    cal = ROOT / "reports" / "calibration"
    bad = json.loads((cal / "h200-2026-12-04-2.json").read_text())["measured"]
    good = json.loads((cal / "h200-2026-12-04.json").read_text())["measured"]
    assert [round(mb) for mb in host_bound_sizes(bad["copy_curve_mb_tb_per_s"])] == [8, 17, 34]
    assert host_bound_sizes(good["copy_curve_mb_tb_per_s"]) == []
    assert host_bound_sizes([(8.0, 4.0), (16.0, 4.0)]) == []          # 2 us then 4 us
    assert host_bound_sizes([(8.0, 1.0), (16.0, 1.6)]) == [8.0]       # 8 us then 10 us


RUN_R9 = ROOT / "reports" / "validation" / "torch" / "h200-2026-12-04-r9.json"


def test_the_shipped_specs_own_torch_run_is_pinned(hw):
    # reports/validation/torch/h200-2026-12-04-r9.json: both splits on one lease (a tiny op
    # 7.6 us there); its calibration split gave the shipped spec's GPU-side torch figures, its
    # validation split is checked here. On this lease the per-kernel median and p90 (8 and
    # 20 %), eager, graph, the eager->graph and eager->compiled speedups (10 %) meet their
    # targets, and so does reduce-overhead (9.5 %); the compiled call (10 %) misses by a hair
    # (10.4 %)
    doc = tc.load(RUN_R9)
    val = [r for r in tc.compare(doc, hw) if r.split == "validation"]
    s = tc.summary(val)
    assert s["cases"] == 106
    assert s["kernel_median"] == pytest.approx(0.040, abs=0.005)
    assert s["kernel_p90"] == pytest.approx(0.151, abs=0.01)
    assert s["eager_median"] == pytest.approx(0.082, abs=0.005)
    assert s["graph_median"] == pytest.approx(0.073, abs=0.005)
    assert s["speedup_median"] == pytest.approx(0.055, abs=0.005)
    assert s["compiled_median"] == pytest.approx(0.104, abs=0.005)
    assert s["compiled_speedup_median"] == pytest.approx(0.098, abs=0.005)
    assert s["compiled_graph_median"] == pytest.approx(0.095, abs=0.005)


def test_eager_call_fit_by_hand():
    # host-bound calibration cases of one op kind: (eager back to back - module call 2 µs -
    # views x 1 µs) / calls, the median per kind
    from types import SimpleNamespace as NS

    def graph(*kinds):
        return NS(ops=[NS(kind=k) for k in kinds])
    cases = [("a", "calibration", 12, 4, graph("add")),                  # 10
             ("b", "calibration", 16, 5, graph("add")),                  # 14
             ("c", "calibration", 30, 20, graph("add")),                 # device-bound: out
             ("d", "validation", 12, 3, graph("add")),                   # validation: out
             ("e", "calibration", 25, 5, graph("reshape", "expand", "copy", "reshape")),  # 20
             ("f", "calibration", 40, 5, graph("matmul", "add")),        # two kinds: out
             ("g", "calibration", 62, 10, graph("matmul", "permute", "matmul"))]          # 29.5
    doc = {"host": {"module_call_us": 2.0, "view_dispatch_us": 1.0},
           "cases": [{"id": i, "split": sp, "eager_us": e, "graph_us": g}
                     for i, sp, e, g, _ in cases]}
    fit = tc.fit_eager_calls(doc, {i: gr for i, *_, gr in cases})
    assert fit == {"add": (pytest.approx(12.0), 2), "copy": (pytest.approx(20.0), 1),
                   "matmul": (pytest.approx(29.5), 1)}


def test_per_index_fit_by_hand():
    # the same 33.6 MB moved as 32768 rows of 512 B (21.1 us) and as 2048 rows of 8 KB
    # (7.4 us): 13.7 us more for 30720 more ids, 0.446 ns each; a lone size fits nothing
    def gather(moved, ids, us):
        return replace(_row("embedding", moved, us), indices=ids)
    rows = [gather(33_816_576, 32768, 21.1), gather(33_570_816, 2048, 7.4),
            gather(1_073_741_824, 65536, 285.0)]
    assert tf.fit_per_index(rows, "embedding") == pytest.approx(13.7e-6 / 30720, rel=1e-6)
    assert tf.fit_per_index(rows[2:], "embedding") == 0.0
    # the curve then holds the time less that cost: both sizes at (21.1 - 14.61) and (7.4 -
    # 0.913) us, one measurement of 6.49 us at 33.7 MB
    curve = dict(tf.fit_family_curves(rows, 4.8e12, ["embedding"],
                                      per_index_s={"embedding": 13.7e-6 / 30720})["embedding"])
    assert curve[33.69] == pytest.approx(33.69e6 / 6.4875e-6 / 4.8e12, rel=2e-3)


def test_a_second_calibration_of_the_day_keeps_the_first(tmp_path):
    from rooflab.validate.calspec import unused_raw_path
    raw = tmp_path / "h200-2026-12-04.json"
    assert unused_raw_path(raw) == raw
    raw.write_text("{}")
    assert unused_raw_path(raw) == tmp_path / "h200-2026-12-04-2.json"
    (tmp_path / "h200-2026-12-04-2-torch.json").write_text("{}")     # its torch run alone
    assert unused_raw_path(raw) == tmp_path / "h200-2026-12-04-3.json"


def _gemm(flops, moved, us, split="calibration"):
    return replace(_row("gemm", moved, us, split), gemm_flops=flops)


def test_gemm_curves_by_hand():
    # peaks 1 PFLOP/s and 1 TB/s. A (1 GFLOP, 1 MB, 3 µs) is the smallest: a point of both
    # curves; B (1 TFLOP, 100 MB: 1000 µs of math, 100 of bytes) a FLOP point; C (10 GFLOP,
    # 1 GB) a byte point. D (100 GFLOP, 100 MB) is neither: the FLOP curve gives it
    # 3 + 99/999 x 1997 = 200.90 µs, the byte curve 3 + 99/999 x 1497 = 151.35 µs; measured at
    # the larger, the two do not overlap
    rows = [_gemm(1e9, 10**6, 3.0), _gemm(1e12, 10**8, 2000.0), _gemm(1e10, 10**9, 1500.0),
            _gemm(1e11, 10**8, 200.9009), _gemm(1e11, 10**8, 999.0, split="validation")]
    fit = tf.fit_gemm_curves(rows, 1e15, 1e12)
    assert fit["overlap"] == 0.0 and fit["cases"] == 4
    c, m = dict(fit["gflop_points"]), dict(fit["points"])
    assert c[1.0] == pytest.approx(1e9 / 3e-6 / 1e15, rel=1e-3)            # 0.3333
    assert c[100.0] == pytest.approx(1e11 / 200.9009e-6 / 1e15, rel=1e-3)  # 0.4978
    assert c[1000.0] == pytest.approx(0.5, rel=1e-3)
    assert m[100.0] == pytest.approx(1e8 / 151.3483e-6 / 1e12, rel=1e-3)   # 0.6607
    assert m[1000.0] == pytest.approx(1e9 / 1500e-6 / 1e12, rel=1e-3)
    # below the smallest GEMM the time stays its 3 µs
    assert c[0.0001] == pytest.approx(1e5 / 3e-6 / 1e15, rel=1e-3)
    # too few points of either kind: no curves
    assert tf.fit_gemm_curves(rows[:2], 1e15, 1e12) is None


def test_gemm_overlap_is_recovered_from_cases_made_with_it():
    # times made by the model itself (max + 0.2 x min of two known curves): the fit finds 0.2
    def t_c(f):
        return 2e-6 + f / 0.7e15

    def t_m(b):
        return 2e-6 + b / 0.9e12

    shapes = [(1e9, 1e6), (1e12, 1e8), (4e12, 3e8), (1e10, 1e9), (1e9, 3e8),
              (1e11, 1e8), (3e11, 3e8), (3e10, 3e7)]
    rows = [_gemm(f, int(b), 1e6 * (max(t_c(f), t_m(b)) + 0.2 * min(t_c(f), t_m(b))))
            for f, b in shapes]
    fit = tf.fit_gemm_curves(rows, 1e15, 1e12)
    assert fit["overlap"] == pytest.approx(0.2, abs=0.01)
    # and the FLOP curve without the bytes' share: 100 GFLOP in 2 + 142.86 µs
    frac = dict(fit["gflop_points"])[100.0]
    assert 1e11 / (1e15 * frac) == pytest.approx(t_c(1e11), rel=0.01)



def test_a_seventh_h100_lease_with_grouped_expert_gemms_is_pinned():
    # lease.sh on an H100 SXM (2026-12-07 09:20 UTC, asked for an H200) at commit 5148c59,
    # the first with the grouped_mm family (lab/leases/h100-2026-12-07-r3/). Its 10 validation
    # cases: per kernel median 7.2 %, p90 22.1 % on the calibrated curve, where the copy curve
    # had priced them at a median of -20 % (to -86 %). Met: per kernel median 4.3 % and p90
    # 18.2 %, eager 5.8 %, graph 7.1 %, compiled 7.2 %, eager->graph 4.0 %, Inductor's
    # counts; missed: eager->compiled 11.1 % and reduce-overhead 12.9 % (10; at the median of
    # the compiled windows 15.0 and 17.2 %), on this host's compiled calls (42.3 µs a call,
    # the sixth lease's 28.8; one decoder layer's call took 799 µs against 386 there)
    rows = _h100_lease("h100-80gb-hbm3-2026-12-07-r3.json", 11, 42.32, 16.25, 29.97)
    s = tc.summary([r for r in rows if r.split == "validation"])
    _assert_pinned(s, cases=126, kernel_median=0.043, kernel_p90=0.182, eager_median=0.058,
                   graph_median=0.071, speedup_median=0.040, compiled_median=0.072,
                   compiled_speedup_median=0.111, compiled_graph_median=0.087)
    assert s["inductor_count_match"] == pytest.approx(1.0)
    grouped = tc.summary([r for r in rows if r.split == "validation"
                          and r.family == "grouped_mm"])
    _assert_pinned(grouped, cases=10, kernel_median=0.072, kernel_p90=0.221,
                   graph_median=0.065)


def test_an_eighth_h100_lease_measuring_the_foreach_copy_is_pinned():
    # lease.sh on an H100 SXM (2026-12-07 13:28 UTC, asked for any one-GPU kind) at commit
    # 98e221a, the first with the foreach_copy family's 11 cases; its calibration ships as
    # hardware_specs/measured/h100-sxm.yaml (lab/leases/h100-2026-12-07-r4/). Every bar met:
    # per kernel median 4.2 % and p90 18.9 %, eager 9.3 %, graph 9.1 %, compiled 7.1 %,
    # eager->graph 5.2 %, eager->compiled 8.9 %, reduce-overhead 5.9 % (7.5 % on the seventh
    # lease's spec, which prices reduce-overhead's input copy at the copy curve), Inductor's
    # counts
    rows = _h100_lease("h100-80gb-hbm3-2026-12-07-r4.json", 11, 38.03, 14.52, 40.37,
                       spec=ROOT / "hardware_specs" / "measured" / "h100-sxm.yaml")
    s = tc.summary([r for r in rows if r.split == "validation"])
    _assert_pinned(s, cases=128, kernel_median=0.042, kernel_p90=0.189, eager_median=0.0935,
                   graph_median=0.091, speedup_median=0.0525, compiled_median=0.071,
                   compiled_speedup_median=0.089, compiled_graph_median=0.060)
    assert s["inductor_count_match"] == pytest.approx(1.0)
    # the largest inputs' reduce-overhead calls, device-bound, were 18-34 % under on every
    # lease while the input copy was priced at the copy curve; at the foreach curve:
    big = {r.id: r.compiled_graph_error for r in rows}
    assert big["pointwise_chain5_64M_bf16"] == pytest.approx(-0.070, abs=0.005)
    assert big["silu_64M_bf16"] == pytest.approx(-0.087, abs=0.005)


def test_a_ninth_h100_lease_at_the_l2_residency_model_is_pinned():
    # lease.sh on an H100 SXM (2026-12-07 22:20 UTC, asked for an H200) at commit 1720584,
    # the first with replayed kernels priced from L2 (lab/leases/h100-2026-12-07-r5/). Every
    # bar met on the lease's own calibration: per kernel median 4.1 % and p90 18.1 %, eager
    # 7.7 %, graph 6.4 %, compiled 4.3 %, eager->graph 5.9 %, eager->compiled 8.1 %,
    # reduce-overhead 5.5 %, Inductor's counts; and on the shipped spec, another lease's
    # calibration, as well (its graph 6.0 %)
    rows = _h100_lease("h100-80gb-hbm3-2026-12-07-r5.json", 12, 36.07, 10.75, 31.16)
    s = tc.summary([r for r in rows if r.split == "validation"])
    _assert_pinned(s, cases=132, kernel_median=0.041, kernel_p90=0.181, eager_median=0.077,
                   graph_median=0.064, speedup_median=0.059, compiled_median=0.043,
                   compiled_speedup_median=0.081, compiled_graph_median=0.055)
    assert s["inductor_count_match"] == pytest.approx(1.0)
    shipped = api.load_hardware("measured/h100-sxm.yaml")
    run = tc.load(RUN_H100.with_name("h100-80gb-hbm3-2026-12-07-r5.json"))
    s = tc.summary([r for r in tc.compare(run, shipped) if r.split == "validation"])
    _assert_pinned(s, cases=132, kernel_median=0.043, kernel_p90=0.182, eager_median=0.076,
                   graph_median=0.060, speedup_median=0.061, compiled_median=0.043,
                   compiled_speedup_median=0.081, compiled_graph_median=0.056)
    # the same lease's Triton suite, on its calibration: 182 kernels, PASS
    triton = records.load(ROOT / "lab" / "leases" / "h100-2026-12-07-r5" / "triton.json")
    got = accuracy.evaluate(triton, api.load_hardware(
        str(RUN_H100.with_name("h100-80gb-hbm3-2026-12-07-r5-spec.yaml"))))
    assert len(got.kernels) == 182
    assert (got.median_abs_error, got.p90_abs_error, got.speedup_median_abs_error) == \
        pytest.approx((0.0246, 0.1279, 0.0479), abs=5e-4)


def test_the_shipped_h100_spec_is_the_eighth_leases_calibration(tmp_path, monkeypatch):
    # hardware_specs/measured/h100-sxm.yaml is what the eighth H100 lease's calibration
    # rebuilds to byte for byte (its Triton run is gated in tests/test_validate.py, its torch
    # run pinned above), with the torch suite's curves
    from typer.testing import CliRunner
    from rooflab.cli import app
    monkeypatch.chdir(ROOT)
    out = tmp_path / "h100-sxm.yaml"
    r = CliRunner().invoke(app, ["calibrate", "--from",
                                 "reports/calibration/h100-sxm-2026-12-07.json", "-o", str(out)])
    assert r.exit_code == 0, r.output
    shipped = ROOT / "hardware_specs" / "measured" / "h100-sxm.yaml"
    assert out.read_text() == shipped.read_text()
    hw = api.load_hardware("measured/h100-sxm.yaml")
    assert {"grouped_mm", "foreach_copy", "copy_broadcast"} <= set(hw.family_curves)
    assert hw.gemm_flops_curve and hw.compiled_call_s == pytest.approx(30.29e-6, abs=1e-8)
    # cudagraph trees' own call, fitted on the calibration's 10 host-bound reduce-overhead cases
    assert hw.compiled_graph_call_s == pytest.approx(78.29e-6, abs=1e-8)


def _assert_pinned(s: dict, cases: int, **figures: float) -> None:
    """A validation summary's case count, and each of `figures` within half a point (the
    per-kernel p90, whose single cases move it most, within a point)."""
    assert s["cases"] == cases
    for key, value in figures.items():
        assert s[key] == pytest.approx(value, abs=0.01 if key == "kernel_p90" else 0.005), key


def test_an_h100_lease_calibrated_and_validated_in_one_go_is_pinned():
    # lab/torch_kernels/lease.sh on an H100 SXM (2026-12-06): `rooflab calibrate --gpu`, then
    # the whole torch suite on the spec it wrote (beside the run: H100 fractions over the H200
    # datasheet's peaks, the base calibrate took then). One host throughout, so every figure
    # is the lease's own. Met on this lease: per kernel median (4.7 %) and p90 (19.7 %: 21.3
    # before softmax rows of up to 6144 took the register kernel's faster family), eager,
    # graph, compiled and both speedups (under 7 %)
    hw = api.load_hardware(str(RUN_H100.with_name(RUN_H100.stem + "-spec.yaml")))
    doc = tc.load(RUN_H100)
    assert doc["provenance"]["gpu"] == "NVIDIA H100 80GB HBM3"
    val = [r for r in tc.compare(doc, hw) if r.split == "validation"]
    s = tc.summary(val)
    _assert_pinned(s, cases=116, kernel_median=0.047, kernel_p90=0.197, eager_median=0.057,
                   graph_median=0.064, speedup_median=0.046, compiled_median=0.056,
                   compiled_speedup_median=0.056)
    assert s["inductor_count_match"] == pytest.approx(1.0)


def test_a_second_h100_lease_with_seven_compiled_windows_is_pinned():
    # lab/torch_kernels/lease.sh on an H100 SXM (2026-12-06, 17:04 UTC): calibrate on the
    # H100's own datasheet spec (reports/calibration/h100-80gb-hbm3-2026-12-06.json, kept),
    # then the torch suite with each compiled call timed in 7 windows (compared at its
    # fastest, torch_compare.compiled_us). Met: per kernel median 4.6 %, eager, graph,
    # compiled (5.3 %), both speedups and reduce-overhead (under 10 %), Inductor's kernel
    # count on every case; missed: per kernel p90 20.8 % (target 20)
    spec = RUN_H100_R2.with_name(RUN_H100_R2.stem + "-spec.yaml")
    hw = api.load_hardware(str(spec))
    assert hw.name == "h100-sxm"
    doc = tc.load(RUN_H100_R2)
    # one-kernel compiled calls 41-46 us; the fit over the 7 host-bound calibration cases
    fit = tc.fit_compiled_host(doc)
    assert fit["cases"] == 7
    assert fit["compiled_call_us"] + fit["compiled_launch_us"] == pytest.approx(41.84, abs=0.01)
    assert fit["compiled_launch_us"] == pytest.approx(21.29, abs=0.01)
    assert fit["compiled_extern_us"] == pytest.approx(21.25, abs=0.01)
    s = tc.summary([r for r in tc.compare(doc, hw) if r.split == "validation"])
    _assert_pinned(s, cases=116, kernel_median=0.046, kernel_p90=0.208, eager_median=0.053,
                   graph_median=0.048, speedup_median=0.035, compiled_median=0.053,
                   compiled_speedup_median=0.045, compiled_graph_median=0.075)
    assert s["inductor_count_match"] == pytest.approx(1.0)


def _h100_lease(run_name: str, cases: int, call_us: float, launch_us: float, extern_us: float,
                spec: Path | None = None):
    """The H100 lease's run and its spec (`spec`; default: the one beside it, `-spec.yaml`),
    its torch.compile host fit checked against the figures given (µs), and the run's rows on
    that spec."""
    run = RUN_H100.with_name(run_name)
    hw = api.load_hardware(str(spec or run.with_name(run.stem + "-spec.yaml")))
    doc = tc.load(run)
    fit = tc.fit_compiled_host(doc)
    assert fit["cases"] == cases
    assert fit["compiled_call_us"] == pytest.approx(call_us, abs=0.01)
    assert fit["compiled_launch_us"] == pytest.approx(launch_us, abs=0.01)
    assert fit["compiled_extern_us"] == pytest.approx(extern_us, abs=0.01)
    return tc.compare(doc, hw)


def test_a_third_h100_lease_with_compiled_split_reductions_is_pinned():
    # lease.sh again on an H100 SXM (2026-12-06, ~17:48 UTC), with three host-bound split
    # reductions compiled in the calibration split (2 and 5 Triton kernels, no extern call):
    # the compiled host fit now sees what an extra Triton launch costs apart from an extern
    # call. Met: per kernel median 3.8 % and p90 18.6 % (20.6 before softmax rows of up to
    # 6144 took the register kernel's faster family), eager, graph, compiled (2.8 %), both
    # speedups (under 5 %), Inductor's count on every case, reduce-overhead 6.7 % (11.6 while
    # each input's copy was priced as a copy_ and a graph writing its input as replayed)
    rows = _h100_lease("h100-80gb-hbm3-2026-12-06-r3.json", 10, 33.36, 12.29, 29.58)
    s = tc.summary([r for r in rows if r.split == "validation"])
    _assert_pinned(s, cases=116, kernel_median=0.038, kernel_p90=0.186, eager_median=0.041,
                   graph_median=0.066, speedup_median=0.024, compiled_median=0.028,
                   compiled_speedup_median=0.036, compiled_graph_median=0.073)
    assert s["inductor_count_match"] == pytest.approx(1.0)


def test_a_fourth_h100_lease_after_the_shape_study_is_pinned():
    # lease.sh again (2026-12-06 19:31) at a tree with the floor-aware row curves, softmax rows
    # up to 6144 in the faster register family and five more calibration cases: its validation
    # split is out of sample for them. Met: per kernel median 3.5 % and p90 17.4 %, eager,
    # graph, compiled (6.7 %), eager->graph (4.2 %), eager->compiled (9.9 %), reduce-overhead
    # (6.6 %), Inductor's counts (at the median of the compiled windows: 7.9, 10.1 and 17.9 %)
    rows = _h100_lease("h100-80gb-hbm3-2026-12-06-r4.json", 11, 32.47, 15.33, 29.08)
    s = tc.summary([r for r in rows if r.split == "validation"])
    _assert_pinned(s, cases=116, kernel_median=0.035, kernel_p90=0.174, eager_median=0.054,
                   graph_median=0.064, speedup_median=0.042, compiled_median=0.067,
                   compiled_speedup_median=0.099, compiled_graph_median=0.058)
    assert s["inductor_count_match"] == pytest.approx(1.0)
    by_id = {r.id: r for r in rows}
    for case, error in (("softmax_4096x6144_bf16", 0.040), ("softmax_128x128256_bf16", 0.003),
                        ("sum_col_8192x4096_bf16", -0.131)):
        assert by_id[case].kernel_error == pytest.approx(error, abs=0.005), case


def test_a_fifth_h100_lease_at_39cd95b_is_pinned():
    # lease.sh on an H100 SXM (2026-12-07 03:56 UTC, asked for an H200) at commit 39cd95b:
    # calibration, torch suite and Triton suite on one host (lab/leases/h100-2026-12-07/).
    # Met: per kernel median 3.9 % and p90 16.9 %, eager 7.1 %, graph 6.3 %, compiled 3.0 %,
    # eager->graph 5.3 %, eager->compiled 4.2 %, Inductor's counts, reduce-overhead 8.4 %
    # (13.4 with each input's copy priced as a copy_, a miss)
    rows = _h100_lease("h100-80gb-hbm3-2026-12-07.json", 10, 32.42, 13.17, 29.11)
    s = tc.summary([r for r in rows if r.split == "validation"])
    _assert_pinned(s, cases=116, kernel_median=0.039, kernel_p90=0.169, eager_median=0.071,
                   graph_median=0.063, speedup_median=0.053, compiled_median=0.030,
                   compiled_speedup_median=0.042, compiled_graph_median=0.079)
    assert s["inductor_count_match"] == pytest.approx(1.0)


def test_a_sixth_h100_lease_at_9e93ea9_is_pinned():
    # lease.sh on an H100 SXM (2026-12-07 07:34 UTC, asked for an H200) at commit 9e93ea9,
    # after the SDPA-over-views balance, the family curves' fixed time and eager SDPA's
    # per-head K/V reads (lab/leases/h100-2026-12-07-r2/). Met: per kernel median 4.2 % and
    # p90 18.0 %, eager 5.5 %, graph 6.2 %, compiled 3.9 %, eager->graph 5.7 %,
    # eager->compiled 9.2 %, reduce-overhead 5.8 %, Inductor's counts (at the median of the
    # compiled windows eager->compiled was 11.1 %, a miss)
    rows = _h100_lease("h100-80gb-hbm3-2026-12-07-r2.json", 11, 28.83, 17.52, 32.90)
    s = tc.summary([r for r in rows if r.split == "validation"])
    _assert_pinned(s, cases=116, kernel_median=0.042, kernel_p90=0.180, eager_median=0.055,
                   graph_median=0.062, speedup_median=0.057, compiled_median=0.039,
                   compiled_speedup_median=0.092, compiled_graph_median=0.050)
    assert s["inductor_count_match"] == pytest.approx(1.0)


def test_the_third_h100_lease_rebuilt_with_the_current_fit(tmp_path, monkeypatch):
    # `rooflab calibrate --from` the lease's raw figures (and the torch run beside them): the
    # curves now run no faster past L2 than their first measurement beyond it, so the row
    # sum of 67 MB comes out at -11 % (-27 % on the lease's spec); above a measurement on
    # its floor a row kernel's curve is the floor or the next rate, so the vocabulary
    # softmax of 128 rows comes out at -3 % (+29 %); rows of 6144 are priced with the
    # register kernel's faster instances (+3.5 %, was +32 %). Per kernel: median 3.6 %, p90
    # 16.5 % (4.3 and 20.6 % on the lease's spec)
    from typer.testing import CliRunner
    from rooflab.cli import app
    monkeypatch.chdir(ROOT)
    out = tmp_path / "h100.yaml"
    r = CliRunner().invoke(app, ["calibrate", "--from",
                                 "reports/calibration/h100-80gb-hbm3-2026-12-06-2.json",
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    hw = api.load_hardware(str(out))
    assert hw.name == "h100-sxm"
    rows = tc.compare(tc.load(RUN_H100.with_name("h100-80gb-hbm3-2026-12-06-r3.json")), hw)
    by_id = {r.id: r for r in rows}
    assert by_id["sum_row_8192x4096_bf16"].kernel_error == pytest.approx(-0.107, abs=0.005)
    assert by_id["softmax_128x128256_bf16"].kernel_error == pytest.approx(-0.026, abs=0.005)
    s = tc.summary([r for r in rows if r.split == "validation"])
    assert s["kernel_median"] == pytest.approx(0.036, abs=0.005)
    assert s["kernel_p90"] == pytest.approx(0.165, abs=0.005)
    assert by_id["softmax_4096x6144_bf16"].kernel_error == pytest.approx(0.035, abs=0.005)
    assert s["graph_median"] == pytest.approx(0.060, abs=0.005)
    assert s["compiled_median"] == pytest.approx(0.026, abs=0.005)
