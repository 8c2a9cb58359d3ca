"""Hostile or careless input, one test per class: one line `file:line: place: problem` on
stderr, exit status 2, no traceback, no hang, well under a second."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab.cli import app
from rooflab.hardware import SPEC_DIR

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent

from test_errors import GOOD  # the same small valid workload the error tests break

REPEAT = """\
name: r
params: {L: %s, D: 8}
tensors:
  x: {shape: [D, D], dtype: bf16}
ops:
  - repeat: L
    name: layer
    carry: {x: y}
    ops:
      - {kind: relu, inputs: [x], outputs: [y]}
"""


def _fails(args, *expected):
    t0 = time.perf_counter()
    r = runner.invoke(app, args)
    elapsed = time.perf_counter() - t0
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert "Traceback" not in r.output + r.stderr
    assert len(err.splitlines()) == 1, err
    assert elapsed < 1.0, elapsed
    for e in expected:
        assert re.search(e, err), f"{e!r} not in {err!r}"
    return err


def _file(tmp_path, text, name="bad.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _good(tmp_path):
    return _file(tmp_path, GOOD, "good.yaml")


# ---------------------------------------------------------------- duplicate keys
def test_duplicate_key_in_workload(tmp_path):
    p = _file(tmp_path, GOOD.replace("{M: 64, N: 32}", "{M: 64, N: 32, M: 8}"))
    _fails(["predict", p], r"bad\.yaml:2: ", "duplicate key 'M' \\(first at line 2\\)")


def test_duplicate_key_in_spec(tmp_path):
    p = _file(tmp_path, (SPEC_DIR / "h200.yaml").read_text() + "name: other\n", "gpu.yaml")
    n = len((SPEC_DIR / "h200.yaml").read_text().splitlines()) + 1
    _fails(["hardware", "show", p], rf"gpu\.yaml:{n}: duplicate key 'name'")


def test_duplicate_key_in_policy(tmp_path):
    pol = _file(tmp_path, "name: p\nedges: []\nname: q\n", "pol.yaml")
    _fails(["predict", _good(tmp_path), "-s", pol], r"pol\.yaml:3: duplicate key 'name' "
           r"\(first at line 1\)")


def test_alias_bomb(tmp_path):
    text = "a: &a [x,x,x,x,x,x,x,x,x,x]\n"
    for prev, cur in zip("abcdefgh", "bcdefghi"):
        text += f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 10) + "]\n"
    p = _file(tmp_path, text + "name: x\nops: [*i]\n")            # 10**9 nodes once built
    _fails(["predict", p], "expands to more than 10000000 nodes")


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize("value, problem", [
    ("'2**2**2**2**2**2'", r"exceeds 2\*\*63"),
    ("'10**100000000'", r"exceeds 2\*\*63"),
    ("9" * 40, r"exceeds 2\*\*63"),
    ("'2**63 + 1'", r"exceeds 2\*\*63"),
    ("'2**-1'", "negative exponent"),
    ("'" + "+".join(["1"] * 100000) + "'", "longer than 1000 characters"),
    ("'" + "-" * 900 + "1'", "nests more than 50 operators deep"),
])
def test_exploding_parameter(tmp_path, value, problem):
    p = _file(tmp_path, GOOD.replace("M: 64", f"M: {value}"))
    _fails(["predict", p], r"bad\.yaml:2: params\.M: ", problem)


def test_huge_set(tmp_path):
    _fails(["predict", _good(tmp_path), "--set", "M=" + "9" * 5000],
           r"--set M=9{38}… \(5002 characters\): value exceeds 2\*\*63")
    _fails(["predict", _good(tmp_path), "--set", "M=9223372036854775809"], r"exceeds 2\*\*63")
    _fails(["predict", _good(tmp_path), "--set", "M=2", "--set", "M=3"], "--set M: given twice")


def test_tensor_over_2_63_bytes(tmp_path):
    # 2**62 x 32 bf16 elements = 2**62 * 64 bytes = 2.95e20 bytes
    p = _file(tmp_path, GOOD.replace("M: 64", "M: '2**62'"))
    _fails(["predict", p], r"bad\.yaml:4: tensor x: shape \[4611686018427387904, 32\] bf16 "
           r"is 2\.95e\+20 bytes")


def test_float_dimension(tmp_path):
    _fails(["predict", _file(tmp_path, GOOD.replace("[M, N]", "[2.5, N]"))],
           r"bad\.yaml:4: tensors\.x\.shape\[0\]", "expected an integer or a name or expression, got 2.5")


def test_repeat_a_billion_is_refused_before_expanding(tmp_path):
    _fails(["predict", _file(tmp_path, REPEAT % "1000000000")],
           r"bad\.yaml:6: ops\[0\]\.repeat: the workload would expand to more than 1,000,000 "
           r"ops \(1,000,000,000 repeats of 1 ops here\)")


def test_nested_repeats_multiply(tmp_path):
    text = REPEAT.replace("      - {kind: relu", "      - repeat: 1001\n        name: inner\n"
                          "        carry: {x: y}\n        ops:\n          - {kind: relu")
    text = text.replace("outputs: [y]}", "outputs: [y]}").replace("L: %s", "L: 1000")
    _fails(["predict", _file(tmp_path, text)], r"ops\[0\]\.repeat",
           r"more than 1,000,000 ops \(1,000 repeats of 1,001 ops here\)")


def test_parameter_name_not_an_identifier(tmp_path):
    _fails(["predict", _file(tmp_path, GOOD.replace("N: 32}", "N: 32, 'a b': 3}"))],
           r"bad\.yaml:2: ", "parameter name 'a b' is not an identifier")


# ---------------------------------------------------------------- hardware specs
@pytest.mark.parametrize("old, new, problem", [
    ("sm_count: {value: 132", "sm_count: {value: .inf", r"sm_count\.value: .*finite"),
    ("sm_count: {value: 132", "sm_count: {value: .nan", r"sm_count\.value: .*finite"),
    ("sm_count: {value: 132", "sm_count: {value: 132.5", r"sm_count\.value: .*whole number"),
    ("eager_dispatch_us: {value: ", "eager_dispatch_us: {value: -", r"eager_dispatch_us\.value"),
    ("hbm_tb_per_s: {value: 4.8", "hbm_tb_per_s: {value: 4.8e-308",
     r"hbm_tb_per_s\.value: 4\.8e-308 is outside 1e-06 to 1e\+09"),
    ("hbm_tb_per_s: {value: 4.8", "hbm_tb_per_s: {value: 4.8e+300", r"4\.8e\+300 is outside"),
    ("  tf32: {value: 494.7", "  tf33: {value: 494.7",
     r"gpu\.yaml:25: tensor_tflops\.tf33: unknown tensor dtype 'tf33'"),
    ("      min_gpus: 5\n", "      min_gpus: 5\n      max_gpus: 4\n",
     r"interconnect\.collectives\.nvls: .*max_gpus 4 is below min_gpus 5"),
    ("      min_gpus: 5\n", "      min_gpus: 1\n", r"nvls\.min_gpus: must be at least 2, got 1"),
])
def test_bad_spec_numbers(tmp_path, old, new, problem):
    text = (SPEC_DIR / "h200.yaml").read_text()
    assert old in text
    p = _file(tmp_path, text.replace(old, new, 1), "gpu.yaml")
    _fails(["hardware", "show", p], r"gpu\.yaml:\d+: ", problem)


def test_infinite_launch_cost(tmp_path):
    import yaml
    data = yaml.safe_load((SPEC_DIR / "h200.yaml").read_text())
    data["launch"]["graph_launch_us"]["value"] = float("inf")
    p = _file(tmp_path, yaml.safe_dump(data), "gpu.yaml")
    _fails(["predict", _good(tmp_path), "-H", p], r"gpu\.yaml:\d+: launch\.graph_launch_us"
           r"\.value: Input should be a finite number")


# ---------------------------------------------------------------- control characters
def test_control_characters_are_escaped_in_tables(tmp_path):
    text = (GOOD.replace("name: mm", 'name: "mm\\e]0;pwn\\a\\0"')
            .replace("name: t", 'name: "t\\e[31m"'))
    p = _file(tmp_path, text)
    for args in (["predict", p, "-H", "h200"], ["predict", p, "--compare", "unfused,fused"],
                 ["fusions", p]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", r.output), args
    r = runner.invoke(app, ["predict", p, "-H", "h200"])
    assert r"mm\x1b]0;pwn\x07\x00" in r.output
    assert r"t\x1b[31m on NVIDIA H200" in r.output


def test_control_characters_are_escaped_in_error_lines(tmp_path):
    p = _file(tmp_path, GOOD.replace("inputs: [y]", 'inputs: ["y\\e]0;x\\a\\nfake"]'))
    err = _fails(["predict", p], r"unknown tensor 'y\\x1b\]0;x\\x07\\nfake'")
    assert "\x1b" not in err


def test_control_characters_are_escaped_in_spec_view(tmp_path):
    text = (SPEC_DIR / "h200.yaml").read_text().replace(
        "display_name: ", 'display_name: "\\e[2J"  #', 1)
    r = runner.invoke(app, ["hardware", "show", _file(tmp_path, text, "gpu.yaml")])
    assert r.exit_code == 0, r.output
    assert r.output.startswith(r"\x1b[2J (h200)")
    assert "\x1b" not in r.output


# ---------------------------------------------------------------- special files
def test_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "w.yaml"
    os.mkfifo(fifo)
    _fails(["predict", str(fifo)], r"w\.yaml: not a regular file")
    _fails(["predict", _good(tmp_path), "-H", str(fifo)], "not a regular file")
    _fails(["predict", _good(tmp_path), "-s", str(fifo)], "not a regular file")


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null"])
def test_device_file(path):
    _fails(["predict", path], f"{path}: not a regular file")


def test_directory(tmp_path):
    _fails(["predict", str(tmp_path)], "is a directory")


def test_huge_file(tmp_path):
    p = tmp_path / "big.yaml"
    with open(p, "wb") as f:
        f.write(GOOD.encode())
        f.truncate(65 * 1024 * 1024)           # sparse: 65 MiB on paper, nothing on disk
    _fails(["predict", str(p)], r"big\.yaml: file is 68157440 bytes; .*at most 67108864")


def test_non_utf8(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_bytes(GOOD.encode() + b"# \xff\n")
    _fails(["predict", str(p)], r"not UTF-8 text \(byte 229\)")


def test_unreadable_file(tmp_path, monkeypatch):
    p = _good(tmp_path)
    real_open = os.open

    def refuse(path, *a, **k):          # root reads a mode-000 file, so fake the refusal
        if str(path) == p:
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **k)
    monkeypatch.setattr(os, "open", refuse)
    _fails(["predict", p], r"good\.yaml: cannot read the workload file: Permission denied")


# ---------------------------------------------------------------- arguments
@pytest.mark.parametrize("args, problem", [
    (["--hardware", ","], "--hardware ',': expected one or more names"),
    (["--launch", ","], "--launch ',': expected one or more names"),
    (["--compare", ","], "--compare ,: expected two or more schedules"),
    (["--compare", ""], "--compare : expected two or more schedules"),
])
def test_empty_lists(tmp_path, args, problem):
    _fails(["predict", _good(tmp_path), *args], problem)


def test_negative_top(tmp_path):
    _fails(["fusions", _good(tmp_path), "--top", "-1"], "--top -1: expected a count of zero")


def test_output_paths(tmp_path):
    g = _good(tmp_path)
    _fails(["predict", g, "--html", g + "/x.html"], "a part of the path is a file")
    _fails(["report", g, "-o", g + "/x.html"], "a part of the path is a file")
    _fails(["report", g, "-o", str(tmp_path / "nope" / "x.html")], "folder .*nope does not exist")
    _fails(["report", g, "-o", str(tmp_path / ("a" * 300 + ".html"))], "file name too long")
    _fails(["predict", g, "--html", "/".join(["a" * 200] * 30)], "file name too long")
    _fails(["report", g, "-o", str(tmp_path)], "is a folder")
    _fails(["calibrate", "--gpu", "-o", str(tmp_path / ("a" * 300))], "file name too long")


def test_existing_file_is_kept(tmp_path):
    g = _good(tmp_path)
    _fails(["report", g, "-o", g], "which this command reads; not writing over it")
    _fails(["report", g, "-o", g, "--force"], "which this command reads; not writing over it")
    assert Path(g).read_text() == GOOD
    other = str(tmp_path / "other.html")
    Path(other).write_text("mine")
    _fails(["report", g, "-o", other], "exists; pass --force")
    assert Path(other).read_text() == "mine"
    # a device is never replaced, even with --force
    _fails(["predict", g, "--html", "/dev/null", "--force"], "not a regular file")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


def test_exit_status_from_a_real_process(tmp_path):
    fifo = tmp_path / "w.yaml"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "rooflab.cli", "predict", str(fifo)], cwd=ROOT,
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: {fifo}: not a regular file (a FIFO, "
                                             "device or socket), expected a workload YAML file"]


@pytest.mark.parametrize("argv,message", [
    (["predict", "--nosuch", "x"], "error: rooflab predict: No such option: --nosuch"),
    (["predict"], "error: rooflab predict: Missing argument 'workload'."),
    (["fusions", "llama3_8b_decode", "--top", "many"],
     "error: rooflab fusions: Invalid value for '--top': "),
])
def test_usage_errors_are_one_line_exit_2(argv, message):
    """The installed entry point, not the test runner: Typer would box these in a panel."""
    r = subprocess.run([sys.executable, "-m", "rooflab.cli", *argv], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message)
    assert lines[0].endswith(f"(see rooflab {argv[0]} -h)")


def test_no_arguments_print_the_help_and_exit_2():
    r = subprocess.run([sys.executable, "-m", "rooflab.cli"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "predict" in r.stdout and r.stderr == ""


# ---------------------------------------------------------------- sources and runs


def test_a_non_utf8_run_file(tmp_path):
    p = tmp_path / "run.json"
    p.write_bytes(b'{"schema": "x", "note": "\xe9"}')
    _fails(["validate", "--from", str(p)], r"run\.json: not JSON")


def test_a_negative_size_in_a_model_config(tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama",\n "hidden_size": 64,\n "num_hidden_layers": -3}')
    _fails(["trace", f"hf:{p}"], r"config\.json:3: num_hidden_layers: a size must be a positive "
                                 r"integer, got -3")


def test_an_input_too_large_to_describe(tmp_path):
    pytest.importorskip("torch")
    src = _file(tmp_path, "import torch\n\ndef build():\n    return torch.nn.Identity()\n",
                "m.py")
    _fails(["trace", f"py:{src}:build", "--input", "x=[99999999999,99999999999,1024]:bf16"],
           r"--input 'x=\[99999999999,99999999999,1024\]:bf16': Storage size calculation "
           r"overflowed")


def test_a_run_priced_on_another_gpus_spec_says_so():
    runs = ROOT / "reports" / "validation"
    r = runner.invoke(app, ["validate", "--from", str(runs / "h100-sxm-2026-12-07.json"),
                            "-H", "measured/h200.yaml"])
    assert r.exit_code == 0 and "was measured on NVIDIA H100 80GB HBM3; -H measured/h200.yaml " \
        "is another GPU's spec (h200)" in r.stderr
    r = runner.invoke(app, ["validate", "--from", str(runs / "h200-2026-12-04.json")])
    assert r.exit_code == 0 and "note: priced on measured/h200.yaml, the spec of the run's GPU " \
        "(NVIDIA H200)" in r.stderr and "PASS" in r.stdout


def test_an_output_for_a_rechecked_run_is_refused(tmp_path):
    # --from writes nothing: an --output given with it would be silently dropped
    _fails(["validate", "--from", str(ROOT / "reports/validation/h200-2026-12-04.json"), "-o",
            str(tmp_path / "out.json")], r"--output names where a run on the GPU writes")
    assert not (tmp_path / "out.json").exists()


def test_a_run_whose_case_does_not_build_names_the_run_and_the_case(tmp_path):
    import json
    doc = json.loads((ROOT / "reports/validation/h200-2026-12-04.json").read_text())
    case = doc["cases"][0]                          # pointwise_chain/T=1,D=4096
    case["params"]["T"] = -5
    p = tmp_path / "run.json"
    p.write_text(json.dumps(doc))
    _fails(["validate", "--from", str(p), "-H", "h200"],
           rf"run\.json: case {re.escape(case['case'])}: params\.T: .*must be positive")


@pytest.mark.parametrize("args, problem", [
    (["predict", "mlp_block", "--launch", "eager,eager"], r"--launch 'eager,eager': eager is named "
                                                          r"twice"),
    (["predict", "mlp_block", "-H", "h200,"], r"--hardware 'h200,': an empty name between commas"),
    (["predict", "mlp_block", "--compare", "unfused,,fused"], r"an empty name between commas"),
    (["predict", "mlp_block", "--html", ""], r"--html: expected a file name"),
    (["fusions", "mlp_block", "--compare", "unfused,fused", "--baseline", "epilogue"],
     r"--compare BASELINE,SCHEDULE names both; leave out --baseline and --schedule"),
])
def test_lists_and_options_that_would_be_dropped(args, problem):
    _fails(args, problem)
