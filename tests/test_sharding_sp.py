"""Sequence parallelism: reduce-scatter + all-gather in place of each TP all-reduce, by hand."""

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers")

from rooflab import api  # noqa: E402
from rooflab.cli import app  # noqa: E402
from rooflab.errors import RooflabError  # noqa: E402
from rooflab.trace.source import load  # noqa: E402

SIZES = {"batch": 2, "seq": 64}        # prefill: 128 tokens of hidden 2048 (Llama-3.2-1B)


def _graphs():
    return (load("hf:llama3.2-1b", {**SIZES, "tp": 2}, "prefill"),
            load("hf:llama3.2-1b", {**SIZES, "tp": 2, "sp": 1}, "prefill"))


def test_all_reduces_become_reduce_scatter_and_all_gather_pairs():
    tp_g, sp_g = _graphs()
    kinds = [o.kind for o in sp_g.ops]
    # 16 layers x 2 blocks + the embedding: 33 reduce-scatters, no all-reduce left; an
    # all-gather before each block (32), before the last-token slice (1) and of the logits (1)
    assert kinds.count("all_reduce") == 0 and kinds.count("reduce_scatter") == 33
    assert kinds.count("all_gather") == 34
    rs = next(o for o in sp_g.ops if o.name == "model.layers.0.self_attn.reduce_scatter")
    # [2, 64, 2048] bf16 partial sums in, [1, 64, 2048] out: the batch axis split two ways
    assert sp_g.tensors[rs.inputs[0]].shape == (2, 64, 2048)
    assert sp_g.tensors[rs.outputs[0]].shape == (1, 64, 2048)
    norm = next(o for o in sp_g.ops if o.name == "model.layers.0.post_attention_layernorm.mul_1")
    assert sp_g.tensors[norm.outputs[0]].shape == (1, 64, 2048)
    ag = next(o for o in sp_g.ops if o.name == "model.layers.0.mlp.input_all_gather")
    assert sp_g.tensors[ag.outputs[0]].shape == (2, 64, 2048)


def test_same_link_bytes_fewer_hbm_bytes_and_flops():
    hw = api.load_hardware("h100-sxm")
    a, b = (api.predict_graph(g, hw, "unfused", "graph").totals for g in _graphs())
    # an all-reduce of S = 524,288 B sends 2 (n-1)/n S = S on 2 GPUs; reduce-scatter of the
    # input (n-1)/n S plus all-gather of the output (n-1)/n S: S again. 33 of them, plus the
    # logits' all-gather: [2, 1, 128256] bf16 = 513,024 B gathered, half of it sent
    S = 2 * 64 * 2048 * 2
    assert a.link_bytes == b.link_bytes == 33 * S + 513024 // 2
    assert b.hbm_bytes < a.hbm_bytes and b.flops < a.flops
    # on 2 GPUs a ring all-reduce is 2 steps, reduce-scatter and all-gather one each: same time
    assert b.link_s == pytest.approx(a.link_s, rel=1e-12)


def test_tokens_that_do_not_divide_and_sp_without_tp_are_one_line():
    with pytest.raises(RooflabError, match=r"--sp: 3 tokens \(batch x sequence 3 x 1\) do not "
                                           r"divide by --tp 2"):
        load("hf:llama3.2-1b", {"batch": 3, "context": 64, "tp": 2, "sp": 1}, "decode")
    for args, msg in ((["--tp", "2", "--sp", "--set", "batch=3"], "--sp: 3 tokens"),
                      (["--sp"], "--sp: sequence parallelism splits"),
                      (["--tp", "0"], "--tp 0: expected a positive number"),
                      (["--ep", "-1"], "--ep -1: expected a positive number"),
                      (["--tp", "2", "--pp", "0"], "--pp 0: expected a positive number"),
                      (["--tp", "2", "--pp", "2", "--nodes", "0"], "--nodes 0"),
                      (["--tp", "2", "--pp", "2", "--microbatches", "0"], "--microbatches 0")):
        r = CliRunner().invoke(app, ["predict", "hf:llama3.2-1b", *args])
        assert r.exit_code == 2, args
        assert msg in r.output and len(r.output.strip().splitlines()) == 1, r.output
    r = CliRunner().invoke(app, ["serve", "hf:llama3.2-1b", "--dp", "0"])
    assert r.exit_code == 2 and "--dp: a positive number of GPUs, got 0" in r.output


def test_predict_sp_runs():
    r = CliRunner().invoke(app, ["predict", "hf:llama3.2-1b", "--tp", "2", "--sp", "--set",
                                 "batch=8", "-s", "fused", "-l", "graph"])
    assert r.exit_code == 0, r.output
    assert "reduce_scatter" in r.output and "interconnect:" in r.output
