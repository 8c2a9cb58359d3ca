"""`rooflab models`: the bundled Hugging Face models as a table and as JSON, offline; without
transformers, one line saying what to install."""

import json
import sys

import pytest
from typer.testing import CliRunner

from rooflab.cli import app

runner = CliRunner()


def test_the_table_lists_the_eight_models_with_their_counts():
    pytest.importorskip("transformers")
    r = runner.invoke(app, ["models"])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("name "))
    rows = {line.split()[0]: line.split() for line in lines[header + 2:]
            if line.strip() and not line.startswith("note: ")}
    assert len(rows) == 8
    # the one quantized checkpoint is named under the table: its weights GB are as stored
    assert [line for line in lines if line.startswith("note: ")] == [
        "note: deepseek-v3: priced as its quantization_config stores it (fp8 e4m3, blocks of "
        "128x128): the decoder layers' weights in fp8_e4m3, activations quantized to it before "
        "each GEMM; --set weight_dtype=bf16 prices it unquantized"]
    # params B, active B, weights GB, KV bytes/token, layers, repository; Llama-3.2-1B:
    # 1,235,814,400 params -> 1.24 B, 2,471,628,800 bytes -> 2.5 GB, 16*2*8*64*2 = 32,768
    assert rows["llama3.2-1b"][1:] == ["LlamaForCausalLM", "1.24", "1.24", "2.5", "32,768", "16",
                                       "meta-llama/Llama-3.2-1B"]
    # Mixtral: 46.70 B, 12.88 B active (2 of 8 experts), 93.4 GB
    assert rows["mixtral-8x7b"][2:5] == ["46.70", "12.88", "93.4"]
    # DeepSeek-V3: 671.03 B, 37.55 B active, 672,987,199,488 bytes with its layers in fp8
    # (tests/test_stored_dtypes.py), 61 * (512 + 64) * 2 = 70,272 bytes per token
    assert rows["deepseek-v3"][2:6] == ["671.03", "37.55", "673.0", "70,272"]


def test_json_and_a_config_given_by_path(tmp_path):
    pytest.importorskip("transformers")
    from rooflab.bundled import MODEL_DIR
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine/config.json").write_text((MODEL_DIR / "qwen2.5-0.5b.json").read_text())
    r = runner.invoke(app, ["models", "qwen2.5-0.5b", str(tmp_path / "mine"), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["schema"] == "rooflab.models/1"
    assert [m["name"] for m in out["models"]] == ["qwen2.5-0.5b", "mine"]
    for m in out["models"]:
        # 494,032,768 parameters (tests/test_zoo.py works them out), 2 bytes each
        assert (m["params"], m["weight_bytes"], m["kv_bytes_per_token"], m["experts"]) == \
            (494_032_768, 988_065_536, 12_288, 0)


def test_an_unknown_name_is_one_line_exit_2():
    r = runner.invoke(app, ["models", "qwen2.5-05b"])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: unknown model 'qwen2.5-05b' (did you mean 'qwen2.5-0.5b'?)")
    assert r.stderr.count("\n") == 1 and not r.stdout


def test_without_transformers_it_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)      # import transformers fails
    r = runner.invoke(app, ["models"])
    assert r.exit_code == 2 and not r.stdout
    assert r.stderr == ("error: tracing Hugging Face models needs the trace extra: pip install "
                        "'rooflab[trace]' (bundled models: deepseek-v3, gemma3-1b, llama3-70b, "
                        "llama3-8b, llama3.2-1b, mixtral-8x7b, qwen2.5-0.5b, qwen2.5-7b)\n")
