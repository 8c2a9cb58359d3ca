"""The CLI as a new user meets it: every bundled workload on every bundled GPU, tables, JSON."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab import hardware
from rooflab.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = sorted(p.name for p in (ROOT / "workloads").glob("*.yaml"))
SPECS = list(hardware.spec_paths())


def ok(*args):
    r = runner.invoke(app, list(args))
    assert r.exit_code == 0, r.output + (r.stderr or "")
    return r.stdout


@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("spec", SPECS)
def test_predict_every_workload_on_every_gpu(workload, spec):
    out = ok("predict", str(ROOT / "workloads" / workload), "--hardware", spec, "--json")
    pred = json.loads(out)["predictions"][0]
    assert pred["hardware"] == spec
    assert pred["totals"]["time_s"] > 0 and pred["totals"]["kernels"] == len(pred["kernels"])
    assert sum(k["hbm_read_bytes"] for k in pred["kernels"]) == pred["totals"]["hbm_read_bytes"]


def test_hardware_show_b200_dense_fp4_and_bf16():
    out = ok("hardware", "show", "b200")
    assert "tensor fp4 (dense)" in out and "9000 TFLOP/s = 9 PFLOP/s" in out
    assert "tensor bf16 (dense)" in out and "2250 TFLOP/s = 2.25 PFLOP/s" in out
    assert "NV-BW-DS" in out                        # the source is printed with the figure


def test_hardware_list_names_every_spec():
    out = ok("hardware", "list")
    for name in SPECS:
        assert f"\n{name} " in out


def test_predict_table_columns_and_totals():
    out = ok("predict", str(ROOT / "workloads/gemm_bias_gelu_residual.yaml"), "-H", "h100-sxm")
    header = next(line for line in out.splitlines() if line.startswith("kernel"))
    for col in ["ops", "FLOPs", "unit", "HBM read", "HBM write", "FLOP/B", "compute", "memory",
                "launch", "bound", "time"]:
        assert col in header
    assert "total (4 kernels)" in out
    assert "gemm" in out and "tc bf16" in out


def test_a_folded_row_is_bound_by_most_of_its_time_and_links_get_a_column():
    from rooflab import api
    from rooflab.report.table import collapse
    pred = api.predict("llama3_8b_decode", "h200", sets={"batch": 64, "context": 8192})
    (q,) = [r for r in collapse(pred.kernels) if r.name == "layer[*].q_proj"]
    # layer 0's q_proj waits on its launch (the eager dispatch before it); the other 31 are
    # memory-bound, and so is the row
    assert q.first.bound == "launch" and q.count == 32
    assert q.bound == "memory"
    out = ok("predict", "llama3_8b_decode", "-H", "h200", "--set", "batch=64", "--set",
             "context=8192")
    assert next(line for line in out.splitlines() if "q_proj" in line).split()[-3] == "memory"
    assert " link " not in out.splitlines()[2]
    header = ok("predict", "tp_layer_allreduce", "-H", "h100-sxm").splitlines()[2]
    assert header.split()[-5:] == ["memory", "link", "launch", "bound", "time"]


def test_predict_llama_decode_with_sets_and_json():
    out = ok("predict", str(ROOT / "workloads/llama3_8b_decode.yaml"), "--hardware", "h200",
             "--set", "batch=64", "--set", "context=8192", "--json")
    doc = json.loads(out)
    assert doc["schema"] == "rooflab.prediction/1"
    pred = doc["predictions"][0]
    assert pred["params"]["batch"] == 64 and pred["params"]["context"] == 8192
    attn = [k for k in pred["kernels"] if k["kinds"] == ["attention"]]
    assert len(attn) == 32
    # each layer reads its whole KV cache: 64 x 8 heads x 8192 x 128 x 2 bytes, for k and v
    kv = 2 * 64 * 8 * 8192 * 128 * 2
    assert all(k["hbm_read_bytes"] == kv + 64 * 32 * 128 * 2 for k in attn)


def test_compare_and_launch_modes():
    out = ok("predict", str(ROOT / "workloads/llama3_8b_decode.yaml"), "-H", "h200",
             "--compare", "unfused,fused", "--launch", "eager,graph")
    assert out.count("fused vs unfused on h200") == 2
    assert "(eager launch)" in out and "(graph launch)" in out
    assert "stopped growing because" in out


def test_fusions_ranking():
    out = ok("fusions", str(ROOT / "workloads/gemm_bias_gelu_residual.yaml"), "-H", "h100-sxm")
    assert " 1. matmul → add → gelu → add: epilogue fusion saves" in out
    assert "on h100-sxm" in out


def test_fusions_json():
    doc = json.loads(ok("fusions", str(ROOT / "workloads/llama3_8b_decode.yaml"), "-H", "h200",
                        "--json"))
    assert doc["baseline"] == "unfused" and doc["candidate"] == "fused"
    times = [f["time_saved_s"] for f in doc["fusions"]]
    assert times == sorted(times, reverse=True) and times[0] > 0


def test_bundled_workload_by_name():
    ok("predict", "rmsnorm", "-H", "h200")


def test_version_and_help():
    assert "rooflab" in ok("--version")
    assert "predict" in ok("--help")


def test_predict_inductor_compiled_three_schedules():
    r = runner.invoke(app, ["predict", "gemm_bias_gelu_residual", "-H", "h200", "--compare",
                            "unfused,inductor,fused", "--launch", "eager,compiled"])
    assert r.exit_code == 0, r.output
    assert "schedule inductor, launch compiled" in r.output
    assert "inductor vs unfused on h200 (compiled launch)" in r.output
    assert "fused vs unfused on h200 (eager launch)" in r.output
    # h200.yaml has no compiled figures: the note says which defaults priced them
    assert "no measured compiled_call_us" in r.output
    r = runner.invoke(app, ["predict", "gemm_bias_gelu_residual", "--launch", "jit"])
    assert r.exit_code == 2
    assert "--launch jit: expected one of eager, graph, compiled" in r.output


def test_fusions_what_torch_compile_leaves():
    r = runner.invoke(app, ["fusions", "gemm_bias_gelu_residual", "-H", "h200", "--baseline",
                            "inductor", "-s", "fused", "-l", "compiled"])
    assert r.exit_code == 0, r.output
    assert "fused vs inductor" in r.output and "epilogue" in r.output
    same = runner.invoke(app, ["fusions", "gemm_bias_gelu_residual", "-H", "h200", "--compare",
                               "inductor,fused", "-l", "compiled"])
    assert same.exit_code == 0 and same.output == r.output
    bad = runner.invoke(app, ["fusions", "gemm_bias_gelu_residual", "--compare", "fused"])
    assert bad.exit_code == 2 and "expected BASELINE,SCHEDULE" in bad.output


ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args", [
    ["report", "{w}", "-H", "h200", "-o", "{w}"],
    ["predict", "{w}", "-H", "h200", "--html", "{w}"],
    ["predict", "{w}", "-H", "{spec}", "--html", "{spec}"],
    ["sweep", "{w}", "--batch", "1,2", "--csv", "{w}"],
    ["trace", "{py}:build", "--input", "x=[8,512,1024]:bf16", "-o", "{py}"],
    ["trace", "py:{py}:build", "--input", "x=[8,512,1024]:bf16", "-o", "{py}"],
    ["validate", "--from", "{run}", "--html", "{run}"],
    ["calibrate", "--from", "{cal}", "-o", "{cal}"],
    ["trace", "hf:./cfg.json", "-o", "cfg.json"],
    ["trace", "hf:cfgdir", "-o", "cfgdir/config.json"],
])
def test_no_output_writes_over_a_file_the_command_reads(tmp_path, monkeypatch, args):
    # even with --force: the user's workload, spec, program or run would be lost
    w, spec = tmp_path / "mine.yaml", tmp_path / "gpu.yaml"
    w.write_text((ROOT / "workloads" / "rmsnorm.yaml").read_text())
    spec.write_text((ROOT / "hardware_specs" / "h200.yaml").read_text())
    py = tmp_path / "model.py"
    py.write_text((ROOT / "examples" / "transformer_block.py").read_text())
    run = tmp_path / "run.json"
    run.write_text((ROOT / "reports" / "validation" / "h200-2026-12-04.json").read_text())
    cal = tmp_path / "h200-2026-12-04.json"
    cal.write_text((ROOT / "reports" / "calibration" / "h200-2026-12-04.json").read_text())
    config = (ROOT / "models" / "llama3.2-1b.json").read_text()
    (tmp_path / "cfg.json").write_text(config)
    (tmp_path / "cfgdir").mkdir()
    (tmp_path / "cfgdir" / "config.json").write_text(config)
    monkeypatch.chdir(tmp_path)
    names = dict(w="mine.yaml", spec="gpu.yaml", py="model.py", run="run.json", cal=cal.name)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    r = runner.invoke(app, [a.format(**names) for a in args] + ["--force"])
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in r.output
    assert "which this command reads; not writing over it, even with --force" in err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_bundled_name_is_not_the_file_of_that_name_here(tmp_path, monkeypatch):
    # -H h200 reads the bundled spec, not ./h200: writing ./h200 loses nothing read
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h200").write_text("an old report")
    r = runner.invoke(app, ["predict", "rmsnorm", "-H", "h200", "--html", "h200", "--force"])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "h200").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("run", ["validation/torch/h200-2026-12-04-r9.json",
                                 "hf_eager/h200-2026-12-03.json",
                                 "serving/h200-serve-2026-12-03.json"])
def test_html_of_a_run_without_one_is_refused_not_skipped(tmp_path, run):
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["validate", "--from", str(ROOT / "reports" / run),
                            "--html", str(out)])
    assert r.exit_code == 2 and "--html: the HTML report is of Triton-backend runs" in r.stderr
    assert not out.exists()
    r = runner.invoke(app, ["validate", "--dry-run", "--cases", "rmsnorm", "--html", str(out)])
    assert r.exit_code == 2 and "--dry-run prints the kernels' source" in r.stderr
    assert not out.exists()


@pytest.mark.parametrize("args,message", [
    (["predict", "rmsnorm", "-s", "fused", "--compare", "unfused,epilogue"],
     "-s and --compare: --compare names every schedule printed"),
    (["predict", "rmsnorm", "--nodes", "2"], "--nodes: the nodes a pipeline's stages spread over"),
    (["validate", "--from", "reports/validation/h200-2026-12-04.json", "--split", "validation"],
     "--split validation: the torch suite's calibration or validation cases"),
    (["predict", "examples/transformer_block.py"],
     "a Python file is traced as py:examples/transformer_block.py:FACTORY"),
    (["validate", "hf:llama3.2-1b", "--tp", "2", "--split", "validation"],
     "--split validation: the torch suite's calibration or validation cases"),
    (["serve", "examples/transformer_block.py:build"],
     "serve needs a model's prefill and decode steps"),
])
def test_options_a_command_would_drop_are_refused(monkeypatch, args, message):
    monkeypatch.chdir(ROOT)
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and message in r.stderr, r.output + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_python_factory_needs_no_py_prefix(monkeypatch):
    monkeypatch.chdir(ROOT)
    pytest.importorskip("torch")
    args = ["--input", "x=[8,512,1024]:bf16", "--json"]
    bare = runner.invoke(app, ["predict", "examples/transformer_block.py:build", *args])
    prefixed = runner.invoke(app, ["predict", "py:examples/transformer_block.py:build", *args])
    assert bare.exit_code == 0, bare.stderr
    assert json.loads(bare.stdout) == json.loads(prefixed.stdout)


def test_serve_says_when_not_one_sequence_fits(monkeypatch):
    # Llama-3-70B's bf16 weights alone (141 GB) outgrow an L4's 24 GB
    monkeypatch.chdir(ROOT)
    r = runner.invoke(app, ["serve", "workloads/llama3_70b_decode.yaml", "-H", "l4", "--batch", "1"])
    assert r.exit_code == 0, r.stderr
    assert "largest batch that fits on l4 at 2048 + 256 tokens: none (not one sequence fits)" \
        in r.stdout
    r = runner.invoke(app, ["serve", "workloads/llama3_8b_decode.yaml", "--batch", "1",
                            "--chunk", "100000"])
    assert r.exit_code == 0, r.stderr
    assert "prefilling at most 100000 tokens of every prompt" in r.stdout
