"""The CI gate on measured generation (reports/serving/, lab/serve_h200/measure.py): every case is
re-predicted by `rooflab serve` with the current model, against transformers' own TTFT and TPOT
on the H200, eager and as CUDA-graph replays."""

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from rooflab import api  # noqa: E402
from rooflab.validate import serving  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "reports" / "serving" / "h200-serve-2026-12-03.json"


@pytest.fixture(scope="module")
def rows():
    run = serving.load(RUN)
    return serving.compare(run, api.load_hardware(str(ROOT / "hardware_specs/measured/h200.yaml")))


def test_the_run_holds_the_acceptance_cases_and_its_own_calibration():
    run = serving.load(RUN)
    # Llama-3.2-1B and Llama-3-8B at batch 1, 8, 32, input 512 and 2048, output 128
    assert sorted((c.model, c.batch, c.input_tokens) for c in run.cases) == sorted(
        (m, b, i) for m in ("llama3.2-1b", "llama3-8b") for b in (1, 8, 32) for i in (512, 2048))
    assert {c.output_tokens for c in run.cases} == {128}
    assert all(set(c.ttft_s) == set(c.tpot_s) == {"eager", "graph"} for c in run.cases)
    assert run.eager_dispatch_s == pytest.approx(8.245e-6, rel=1e-3)   # x.add_(1), same process


def test_ttft_within_the_15_percent_target(rows):
    for mode in serving.MODES:
        med = serving.median_abs(r.ttft_error for r in rows if r.mode == mode)
        assert med <= 0.15, (mode, med)          # eager 2.4 %, graph 3.6 % (model of 2026-12-04)


def test_tpot_under_cuda_graphs_within_the_target_and_eager_pinned(rows):
    # Under CUDA graphs a decode step is its kernels' device time, the repeat_kv copies of a
    # static cache priced as ATen's copy out of an expanded view (copy_broadcast), a kernel of
    # a few bytes at its family's fixed GPU time, the weights read from HBM past the curve's
    # L2-resident timing, an SDPA call adding the replay gap, a kernel reading from L2 the
    # warm figure: 7.5 %. (Like tests/test_hf_steps.py, this lease replayed each kernel with a
    # longer gap than the spec's calibration measured.)
    # Eager decode is host-bound and NOT within the target: generate() spends about 20 us per
    # ATen op of Python (sampling, stopping criteria, cache bookkeeping between steps) where
    # the host model charges transformers' forward alone; under-predicted, 31.6 %. Pinned.
    eager = serving.median_abs(r.tpot_error for r in rows if r.mode == "eager")
    graph = serving.median_abs(r.tpot_error for r in rows if r.mode == "graph")
    assert graph <= 0.15
    assert graph == pytest.approx(0.075, abs=0.005)
    assert eager == pytest.approx(0.316, abs=0.01)
    assert all(r.tpot_error < 0.1 for r in rows)     # never over-predicted by more than 10 %


def test_the_cli_rechecks_the_run_on_its_gpus_calibrated_spec():
    # `validate --from` a serving run takes the calibrated spec of the GPU the run names
    # (meta.gpu.name), as it does for the other kinds of run, not the H200's datasheet
    from typer.testing import CliRunner

    from rooflab.cli import app
    from rooflab.validate.common import run_gpu
    assert run_gpu(RUN) == "NVIDIA H200"
    r = CliRunner().invoke(app, ["validate", "--from", str(RUN)])
    assert r.exit_code == 0, r.stderr
    assert "median |error| graph: TTFT 1.9%, TPOT 7.5% (12 cases)" in r.stdout
    assert "priced on measured/h200.yaml" in r.stderr
