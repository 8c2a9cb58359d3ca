"""A tensor-parallel step timed across processes (rooflab/validate/tp_run.py) and compared with
the prediction at that degree (tp_compare.py, `rooflab validate --tp` / `--from`). On CPU
processes with gloo here; on GPUs with NCCL where there are several."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab import api
from rooflab.cli import app
from rooflab.validate import tp_compare

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rooflab.validate import tp_run  # noqa: E402

runner = CliRunner()
# a llama of 2 layers, hidden 256, 4 heads (2 KV heads), vocabulary 1024: shards 2 ways
TINY = {"model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 1024, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    p = tmp_path_factory.mktemp("tp") / "tiny-llama.json"
    p.write_text(json.dumps(TINY))
    return p


@pytest.fixture(scope="module")
def cpu_run(tiny):
    return tp_run.run(str(tiny), [2], [(1, 64)], backend="gloo", command="test")


def test_two_cpu_processes_time_the_sharded_step(cpu_run):
    tp_compare.check(cpu_run)
    (r,) = cpu_run["runs"]
    # the collectives rooflab's sharding places: 2 layers x (attention + MLP), embedding, lm_head
    assert r["tp"] == 2 and r["collective_modules"] == 2 * 2 + 2
    (row,) = r["rows"]
    assert row["batch"] == 1 and row["tokens"] == 64 and "graph_s" not in row     # CPU: eager only
    assert row["eager_s"] > 0 and row["eager_s_compute"] > 0 and r["dispatch_s"] > 0
    assert cpu_run["provenance"]["multicast_off"]["NCCL_NVLS_ENABLE"] == "0"


def test_compare_prices_the_step_at_its_degree(cpu_run, tiny):
    hw = api.load_hardware("h200")
    (row,) = tp_compare.compare(cpu_run, hw)
    assert (row.tp, row.mode, row.measured_s) == (2, "eager", cpu_run["runs"][0]["rows"][0]["eager_s"])
    graph = api.load_workload(f"hf:{tiny}", {"batch": 1, "context": 64, "tp": 2}, "decode")
    collectives = [op for op in graph.ops if op.kind in ("all_reduce", "all_gather")]
    assert len(collectives) == 6            # the same six the run hooked
    # the link is the step less the same step without its collectives, as measured
    alone = tp_compare._without_collectives(graph)
    assert len(alone.ops) == len(graph.ops) - 6
    from dataclasses import replace
    run_hw = replace(hw, eager_dispatch_s=cpu_run["runs"][0]["dispatch_s"])
    without = api.predict_graph(alone, run_hw, "unfused", "eager").totals.time_s
    assert row.predicted_link_s == pytest.approx(row.predicted_s - without, rel=1e-12)
    assert 0 < row.predicted_link_s < row.predicted_s


def test_a_prefill_is_priced_with_every_position_s_logits(tiny):
    # the run calls the model without logits_to_keep: lm_head gathers logits of all 32 tokens
    doc = tp_run.run(str(tiny), [2], [(1, 32)], phase="prefill", backend="gloo", command="t")
    (row,) = tp_compare.compare(doc, api.load_hardware("h200"))
    assert row.tokens == 32 and row.predicted_link_s > 0
    graph = api.load_workload(f"hf:{tiny}", {"batch": 1, "seq": 32, "logit_tokens": 0, "tp": 2},
                              "prefill")
    (gather,) = [op for op in graph.ops if op.kind == "all_gather"]
    assert graph.tensors[gather.outputs[0]].shape == (1, 32, 1024)


def test_one_sharded_layer(tiny):
    # the tiny llama cut to its first layer: its attention and MLP all_reduces, the
    # embedding's and lm_head's gather; the prediction traces the same cut model
    doc = tp_run.run(str(tiny), [2], [(1, 64)], backend="gloo", command="t", layers=1)
    assert doc["layers"] == 1 and doc["runs"][0]["collective_modules"] == 1 * 2 + 2
    (row,) = tp_compare.compare(doc, api.load_hardware("h200"))
    graph = api.load_workload(f"hf:{tiny}", {"batch": 1, "context": 64, "tp": 2, "layers": 1},
                              "decode")
    assert sum(op.kind in ("all_reduce", "all_gather") for op in graph.ops) == 4
    assert 0 < row.predicted_link_s < row.predicted_s


def test_comparison_arithmetic_by_hand():
    # 10 ms measured, 8 ms of it compute: 2 ms of link; predicted 9 ms of which 1.5 ms link
    r = tp_compare.TPComparison(8, 16, 1024, "graph", 10e-3, 8e-3, 9e-3, 1.5e-3)
    assert r.measured_link_s == pytest.approx(2e-3)
    assert r.error == pytest.approx(-0.10) and r.compute_error == pytest.approx(7.5 / 8 - 1)
    assert r.link_error == pytest.approx(-0.25)
    assert tp_compare.TPComparison(2, 1, 64, "graph", 1e-3, 1.1e-3, 1e-3, 0).link_error is None
    assert tp_compare.summary([r]) == pytest.approx(
        {"graph total": 0.10, "graph compute": 0.0625, "graph link": 0.25})


def test_validate_from_a_tp_run(cpu_run, tmp_path):
    f = tmp_path / "tp.json"
    f.write_text(json.dumps(cpu_run))
    r = runner.invoke(app, ["validate", "--from", str(f), "-H", "h200"])
    assert r.exit_code == 0, r.output
    assert re.search(r"^\s+2\s+1\s+64\s+eager", r.output, re.M) and "median |error|" in r.output


@pytest.mark.parametrize("args, problem", [
    (["--backend", "torch", "hf:llama3-8b", "--tp", "3"], "32 attention heads do not divide by 3"),
    (["--backend", "torch", "hf:llama3-8b", "--tp", "2,x"], "expected GPU counts"),
    (["--backend", "torch", "models/x.yaml", "--tp", "2"], "of an hf: model"),
    (["--backend", "torch", "hf:llama3-8b", "--tp", "2"], "only with --gpu"),
    (["hf:llama3-8b", "--tp", "2", "--phase", "extend"], "--phase extend: a tensor-parallel run"),
    (["hf:llama3-8b", "--tp", "2", "--set", "seq=512"], "--set seq: a decode run takes batch"),
])
def test_bad_tp_requests_are_one_line(args, problem):
    r = runner.invoke(app, ["validate", *args])
    assert r.exit_code == 2 and problem in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_bad_tp_run_names_its_file(tmp_path):
    f = tmp_path / "tp.json"
    f.write_text(json.dumps({"schema": tp_compare.SCHEMA, "phase": "decode", "source": "x",
                             "provenance": {}, "runs": [{"tp": 2, "rows": [{"batch": 1}]}]}))
    r = runner.invoke(app, ["validate", "--from", str(f)])
    assert r.exit_code == 2 and str(f) in r.stderr and "rows[0]" in r.stderr


def test_default_cases():
    assert tp_run.cases("decode", {}) == [(1, 1024), (16, 1024), (64, 1024), (16, 4096)]
    assert tp_run.cases("decode", {"batch": 8, "context": 2048}) == [(8, 2048)]
    assert tp_run.cases("prefill", {"seq": 4096}) == [(1, 4096)]
    assert tp_run.cases("decode", {"layers": 1}) == tp_run.cases("decode", {})


ROOT_DIR = Path(__file__).resolve().parent.parent
TP_RUNS = sorted(ROOT_DIR.glob("reports/validation/tp/*.json"))


@pytest.mark.parametrize("path", TP_RUNS, ids=[p.name for p in TP_RUNS])
def test_committed_tp_runs_are_re_predicted(path):
    # none is committed yet (no multi-GPU machine lent); each one that lands is re-predicted
    # here on the calibrated spec, and its figures get pinned beside it
    rows = tp_compare.compare(tp_compare.load(path),
                              api.load_hardware(str(ROOT_DIR / "hardware_specs/measured/h200.yaml")))
    assert rows
    print(tp_compare.render(rows))
