"""Bad input: one line naming the file, the place and the problem; exit status 2; no traceback."""

import re

import pytest
from typer.testing import CliRunner

from rooflab.cli import app

runner = CliRunner()

GOOD = """\
name: t
params: {M: 64, N: 32}
tensors:
  x: {shape: [M, N], dtype: bf16}
  w: {shape: [N, N], dtype: bf16}
ops:
  - {kind: matmul, name: mm, inputs: [x, w], outputs: [y]}
  - {kind: relu, name: act, inputs: [y], outputs: [z]}
"""


def _fails(args, *expected):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert "Traceback" not in r.output + r.stderr
    assert len(err.splitlines()) == 1, err
    for e in expected:
        assert re.search(e, err), f"{e!r} not in {err!r}"
    return err


def _bad(tmp_path, text, *expected, extra=()):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    return _fails(["predict", str(p), *extra], str(p).replace(".", r"\."), *expected)


def test_good_file_works(tmp_path):
    p = tmp_path / "good.yaml"
    p.write_text(GOOD)
    r = runner.invoke(app, ["predict", str(p), "-H", "h200"])
    assert r.exit_code == 0, r.output


def test_malformed_yaml(tmp_path):
    _bad(tmp_path, GOOD.replace("outputs: [z]}", "outputs: [z]"), "malformed YAML", r":\d+:")


def test_unknown_op_kind(tmp_path):
    _bad(tmp_path, GOOD.replace("kind: relu", "kind: rleu"), ":8:", r"ops\[1\]\.kind",
         "unknown op kind 'rleu'", "did you mean 'relu'")


def test_unknown_dtype(tmp_path):
    _bad(tmp_path, GOOD.replace("dtype: bf16}\n  w", "dtype: bf17}\n  w"), ":4:", "tensor x",
         "unknown dtype 'bf17'")


def test_unknown_tensor(tmp_path):
    _bad(tmp_path, GOOD.replace("inputs: [y]", "inputs: [yy]"), ":8:", "op act",
         "unknown tensor 'yy'")


def test_unknown_parameter_in_shape(tmp_path):
    _bad(tmp_path, GOOD.replace("[M, N]", "[M, K]"), ":4:", "tensor x", "unknown parameter 'K'")


def test_unknown_field(tmp_path):
    _bad(tmp_path, GOOD.replace("outputs: [z]}", "outputs: [z], axes: 1}"), ":8:",
         "relu op has no attribute 'axes'")


def test_shape_mismatch(tmp_path):
    _bad(tmp_path, GOOD.replace("w: {shape: [N, N]", "w: {shape: [M, N]"), ":7:", "op mm",
         "inner dimensions differ")


def test_cycle(tmp_path):
    text = GOOD.replace("inputs: [x, w], outputs: [y]", "inputs: [z, w], outputs: [y]")
    _bad(tmp_path, text, "op", "cycle", "mm", "act")


@pytest.mark.parametrize("dim", ["0", "-4", "M - 64"])
def test_zero_or_negative_dimension(tmp_path, dim):
    _bad(tmp_path, GOOD.replace("[M, N]", f"[{dim}, N]"), ":4:", "tensor x", "must be positive")


def test_set_unknown_parameter(tmp_path):
    _bad(tmp_path, GOOD, "--set K", "unknown parameter 'K'", "M, N", extra=["--set", "K=3"])


def test_a_problem_a_set_brings_about_names_it(tmp_path):
    # the file is fine as written; --set N=16 makes x [64, 16] meet w [32, 32] at line 7
    text = GOOD.replace("w: {shape: [N, N]", "w: {shape: [32, 32]")
    _bad(tmp_path, text, ":7:", "op mm", "inner dimensions differ", r"\(with --set N=16\)$",
         extra=["--set", "N=16"])
    # without the --set, nothing to name
    p = tmp_path / "bad.yaml"
    assert runner.invoke(app, ["predict", str(p)]).exit_code == 0


def test_set_malformed(tmp_path):
    p = tmp_path / "good.yaml"
    p.write_text(GOOD)
    _fails(["predict", str(p), "--set", "M"], "--set M: expected name=value")


def test_missing_file(tmp_path):
    _fails(["predict", str(tmp_path / "nope.yaml")], "nope.yaml", "not found")


def test_empty_file(tmp_path):
    _bad(tmp_path, "   \n", "empty file")


def test_binary_file(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    _fails(["predict", str(p)], "bad.yaml", "binary file")


def test_top_level_not_a_mapping(tmp_path):
    _bad(tmp_path, "- 1\n- 2\n", "expected a mapping")


def test_two_producers(tmp_path):
    _bad(tmp_path, GOOD.replace("outputs: [z]", "outputs: [y]"), ":8:", "already written by op mm")


def test_unknown_hardware(tmp_path):
    p = tmp_path / "good.yaml"
    p.write_text(GOOD)
    _fails(["predict", str(p), "-H", "h300"], "unknown hardware 'h300'", "did you mean")
    # a name that starts several: each of them
    _fails(["predict", str(p), "-H", "h100"], r"\(did you mean 'h100-pcie' or 'h100-sxm'\?\)")


def test_hardware_spec_with_unknown_source(tmp_path):
    from rooflab.hardware import SPEC_DIR
    text = (SPEC_DIR / "h200.yaml").read_text().replace("source: TAO}", "source: TA0}")
    p = tmp_path / "gpu.yaml"
    p.write_text(text)
    _fails(["hardware", "show", str(p)], "gpu.yaml", "source 'TA0' is not in `sources`")


def test_hardware_spec_with_bad_fraction(tmp_path):
    from rooflab.hardware import SPEC_DIR
    text = (SPEC_DIR / "h200.yaml").read_text().replace("value: 0.89", "value: 1.89")
    p = tmp_path / "gpu.yaml"
    p.write_text(text)
    _fails(["hardware", "show", str(p)], r"gpu\.yaml:\d+", "efficiency.hbm", "must be at most 1")


def test_unknown_schedule(tmp_path):
    p = tmp_path / "good.yaml"
    p.write_text(GOOD)
    _fails(["predict", str(p), "-s", "fusd"], "unknown schedule 'fusd'", "did you mean 'fused'")


def test_flags_that_would_be_ignored_are_refused(tmp_path):
    # each used to exit 0 as if it had been applied, or (--launch warp) with a traceback
    from pathlib import Path
    run = CliRunner().invoke
    for args, words in (
            (["validate", "--from", str(Path(__file__).parents[1] / "reports" / "validation" /
                                        "h200-2026-12-04.json"), "--cases", "x"],
             "--from re-checks the whole run"),
            (["validate", "--dry-run", "--cases", "nosuchcase"], "no suite case matches"),
            (["predict", "hf:llama3-8b", "--microbatches", "4"], "give --pp 2 or more"),
            # a pipeline prints its stage tables only: these printed them and exited 0
            (["predict", "hf:llama3-8b", "--pp", "2", "--json"], "--pp with --json"),
            (["predict", "hf:llama3-8b", "--pp", "2", "--html", str(tmp_path / "p.html")],
             "--pp with --html"),
            (["predict", "hf:llama3-8b", "--pp", "2", "--compare", "unfused,fused"],
             "--pp with --compare"),
            (["predict", "hf:llama3-8b", "--pp", "2", "-l", "eager,graph"],
             "--pp with several --launch modes"),
            (["sweep", "llama3_8b_decode", "--batch", "1", "--csv", str(tmp_path / "f"),
              "--json", str(tmp_path / "f")], "--csv writes that file too"),
            (["serve", "llama3_70b_decode", "--tp", "8"],
             "tp 8: llama3_70b_decode declares no `tp` parameter"),
            (["serve", "llama3_8b_decode", "--batch", "1", "-l", "warp"],
             "unknown launch mode 'warp'"),
            (["validate", "--from", str(tmp_path / "missing.json")], "cannot be read")):
        r = run(app, args)
        assert r.exit_code == 2 and words in r.output, (args, r.output)
        assert len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "f").exists() and not (tmp_path / "p.html").exists()


def test_pydantic_wording_is_the_tools_own(tmp_path):
    # an empty list, a number given as text: said as every other problem is
    p = tmp_path / "empty.yaml"
    p.write_text(GOOD.replace("outputs: [z]}", "outputs: []}"))
    _fails(["predict", str(p)],
           r"empty\.yaml:\d+: ops\[1\]\.outputs: expected at least 1 item, got 0$")
    from rooflab.hardware import SPEC_DIR
    spec = tmp_path / "gpu.yaml"
    spec.write_text((SPEC_DIR / "h200.yaml").read_text().replace(
        "sm_count: {value: 132,", "sm_count: {value: lots,"))
    _fails(["predict", "rmsnorm", "-H", str(spec)],
           r"gpu\.yaml:\d+: sm_count\.value: expected a number, got 'lots'$")


def test_a_binary_model_config_is_named_as_such(tmp_path):
    p = tmp_path / "config.bin"
    p.write_bytes(bytes(range(128, 256)) * 8)
    _fails(["models", str(p)], r"config\.bin: a binary file, not a model config \(JSON\)$")
