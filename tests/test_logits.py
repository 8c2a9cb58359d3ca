"""Prefills compute logits for the last `logit_tokens` positions only (default 1), as serving
engines and transformers' `logits_to_keep` do; a count of seq or more keeps every position.
The bundled Llama prefill workloads slice the final norm's output before the lm_head; traced
hf: prefills pass logits_to_keep to the model."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from rooflab import api
from rooflab.cli import app
from rooflab.errors import RooflabError

ROOT = Path(__file__).resolve().parent.parent
W = ROOT / "workloads"


def _lm_head(workload: str, sets: dict, hw):
    g = api.load_workload(W / workload, sets)
    p = api.predict_graph(g, hw, "unfused", "eager")
    return g, p, next(k for k in p.kernels if k.name == "lm_head")


def test_llama3_8b_prefill_lm_head_runs_on_the_last_token(h200):
    # D 4096, vocab 128256, batch 1, seq 4096. Last token only: 2 * 1 * 4096 * 128256 FLOPs;
    # it reads the weight 4096*128256*2 = 1,050,673,152 bytes and one row of x, 4096*2 = 8,192,
    # and writes one row of logits, 128256*2 = 256,512 bytes
    g, _, k = _lm_head("llama3_8b_prefill.yaml", {"seq": 4096}, h200)
    assert k.tensor_flops == 2 * 1 * 4096 * 128256 == 1_050_673_152
    assert (k.hbm_read_bytes, k.hbm_write_bytes) == (1_050_673_152 + 8_192, 256_512)
    assert g.tensors["logits"].shape == (1, 1, 128256)
    # the final norm still runs over every position, as in transformers: [1, 4096, 4096] bf16
    assert g.tensors["xf"].shape == (1, 4096, 4096)


def test_logit_tokens_seq_or_more_keeps_every_position(h200):
    # all 4096 positions: 2 * 4096 * 4096 * 128256 FLOPs; x read whole, 4096*4096*2 =
    # 33,554,432 bytes; logits written whole, 4096*128256*2 = 1,050,673,152 bytes
    for n in (4096, 10_000):                    # a slice clips to the dimension, as Python's
        _, _, k = _lm_head("llama3_8b_prefill.yaml", {"seq": 4096, "logit_tokens": n}, h200)
        assert k.tensor_flops == 2 * 4096 * 4096 * 128256 == 4_303_557_230_592
        assert (k.hbm_read_bytes, k.hbm_write_bytes) == (1_050_673_152 + 33_554_432,
                                                         1_050_673_152)
    # 8 trailing positions: 8x the one-token FLOPs
    _, _, k = _lm_head("llama3_8b_prefill.yaml", {"seq": 4096, "logit_tokens": 8}, h200)
    assert k.tensor_flops == 2 * 8 * 4096 * 128256


def test_the_slice_changes_only_the_lm_head(h200):
    # at the default seq 2048: every other kernel is the same, so the step gets shorter by
    # exactly the lm_head's difference (2.73 ms all positions -> 0.26 ms last one, on the H200)
    _, last, k1 = _lm_head("llama3_8b_prefill.yaml", {}, h200)
    _, every, kn = _lm_head("llama3_8b_prefill.yaml", {"logit_tokens": 2048}, h200)
    others = [(k.name, k.time_s) for k in last.kernels if k.name != "lm_head"]
    assert others == [(k.name, k.time_s) for k in every.kernels if k.name != "lm_head"]
    assert every.totals.time_s - last.totals.time_s == pytest.approx(kn.time_s - k1.time_s,
                                                                     rel=1e-12)
    assert kn.tensor_flops == 2 * 2048 * 4096 * 128256 == 2_151_778_615_296
    assert 2.4e-3 < kn.time_s - k1.time_s < 2.6e-3


def test_llama3_70b_prefill_lm_head_runs_on_the_last_token(h200):
    # D 8192, vocab 128256: 2 * 1 * 8192 * 128256 FLOPs; weight 8192*128256*2 bytes + one
    # row of x, 8192*2
    g, _, k = _lm_head("llama3_70b_prefill.yaml", {}, h200)
    assert k.tensor_flops == 2 * 8192 * 128256 == 2_101_346_304
    assert k.hbm_read_bytes == 8192 * 128256 * 2 + 16_384 == 2_101_362_688
    assert g.params["logit_tokens"] == 1 and g.tensors["logits"].shape == (1, 1, 128256)


def test_set_logit_tokens_0_says_what_to_write():
    r = CliRunner().invoke(app, ["predict", str(W / "llama3_8b_prefill.yaml"), "-H", "h200",
                                 "--set", "logit_tokens=0"])
    assert r.exit_code == 2
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "--set logit_tokens=SEQ" in lines[0], r.output


# ----------------------------------------------------------------------------- hf: traces
def _last_tokens(graph) -> list:
    """The slices of the final norm's [batch, seq, hidden] output (the rotary halves are
    slices too)."""
    return [o for o in graph.ops if o.kind == "slice"
            and graph.tensors[o.inputs[0]].shape[1:] == (128, 2048) and o.attrs["axis"] == 1]


def _mm(graph):
    """(input shape, output shape) of the lm_head's GEMM."""
    op = next(o for o in graph.ops if o.name.endswith("lm_head.mm"))
    return graph.tensors[op.inputs[0]].shape, graph.tensors[op.outputs[0]].shape


@pytest.fixture(scope="module")
def hf_source():
    pytest.importorskip("transformers")
    from rooflab.trace import source
    return source


def test_traced_prefill_lm_head_shape(hf_source):
    # Llama-3.2-1B, hidden 2048, vocab 128256; batch 2, seq 128
    sizes = {"batch": 2, "seq": 128}
    g = hf_source.load("hf:llama3.2-1b", sizes, "prefill")
    # one position of each of 2 sequences: [2, 2048] x [2048, 128256]
    assert _mm(g) == ((2, 2048), (2, 128256))
    assert g.params == {"batch": 2, "seq": 128, "logit_tokens": 1}
    assert "logits of the last 1 position" in g.description
    [sl] = _last_tokens(g)
    assert (sl.attrs["start"], sl.attrs["end"]) == (127, 128)
    # 4 positions: 2*4 = 8 rows (eager copies the strided slice contiguous first)
    g4 = hf_source.load("hf:llama3.2-1b", {**sizes, "logit_tokens": 4}, "prefill")
    assert _mm(g4) == ((8, 2048), (8, 128256))
    assert any(o.name == "lm_head.clone" and o.kind == "copy" for o in g4.ops)
    # 0 (transformers' meaning) or seq and more: every position, 2*128 = 256 rows, no slice
    for n in (0, 128, 500):
        ga = hf_source.load("hf:llama3.2-1b", {**sizes, "logit_tokens": n}, "prefill")
        assert _mm(ga) == ((256, 2048), (256, 128256))
        assert _last_tokens(ga) == []
        assert ga.params["logit_tokens"] == 128 and "logits of every position" in ga.description


def test_traced_decode_is_unaffected(hf_source):
    sizes = {"batch": 4, "context": 256}
    a = hf_source.load("hf:llama3.2-1b", sizes, "decode")
    b = hf_source.load("hf:llama3.2-1b", {**sizes, "logit_tokens": 7}, "decode")
    assert [(o.name, o.kind) for o in a.ops] == [(o.name, o.kind) for o in b.ops]
    assert _mm(a) == ((4, 2048), (4, 128256)) and "logit_tokens" not in a.params


def test_the_disk_cache_keys_on_logit_tokens(hf_source, tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLAB_CACHE_DIR", str(tmp_path))
    hf_source._traced_hf.cache_clear()
    hf_source.load("hf:qwen2.5-0.5b", {"batch": 1, "seq": 64}, "prefill")
    hf_source._traced_hf.cache_clear()

    def no_trace(*a, **k):
        raise AssertionError("traced again")
    monkeypatch.setattr("rooflab.trace.hf.trace_hf", no_trace)
    hf_source.load("hf:qwen2.5-0.5b", {"batch": 1, "seq": 64, "logit_tokens": 1}, "prefill")
    with pytest.raises(AssertionError, match="traced again"):
        hf_source.load("hf:qwen2.5-0.5b", {"batch": 1, "seq": 64, "logit_tokens": 0}, "prefill")
    hf_source._traced_hf.cache_clear()


def test_hf_set_names_and_bad_counts_are_one_line(hf_source):
    with pytest.raises(RooflabError, match="takes batch, seq, context, logit_tokens, layers, "
                                           "weight_dtype, kv_dtype, tp and ep"):
        hf_source.load("hf:llama3.2-1b", {"logits": 1}, "prefill")
    from rooflab.trace import trace_hf
    with pytest.raises(RooflabError, match="logit_tokens: must be a whole number"):
        trace_hf("llama3.2-1b", "prefill", seq=16, logit_tokens=-1)


def test_a_forward_without_logits_to_keep_says_what_to_write(hf_source, monkeypatch):
    import torch

    from rooflab.trace import hf, zoo
    real = zoo.meta_model

    class Plain(torch.nn.Module):
        """A causal LM whose forward takes no logits_to_keep (it returns every position's)."""
        def __init__(self, inner):
            super().__init__()
            self.inner, self.config = inner, inner.config

        def forward(self, input_ids, past_key_values, cache_position, use_cache):
            return self.inner(input_ids=input_ids, past_key_values=past_key_values,
                              cache_position=cache_position, use_cache=use_cache)

    monkeypatch.setattr(zoo, "meta_model", lambda *a, **k: Plain(real(*a, **k)))
    with pytest.raises(RooflabError, match=r"takes no logits_to_keep.*--set logit_tokens=16"):
        hf.trace_hf("llama3.2-1b", "prefill", seq=16)
    g = hf.trace_hf("llama3.2-1b", "prefill", seq=16, logit_tokens=16)
    assert _mm(g) == ((16, 2048), (16, 128256))


def test_the_measured_prefills_are_traced_with_every_positions_logits():
    # lab/hf_eager/measure.py called the model without logits_to_keep: all logits
    from rooflab.validate.steps import MeasuredStep
    pre = MeasuredStep("llama3-8b", "prefill", 1, 2048, 1e-3, 1e-3, 100)
    dec = MeasuredStep("llama3-8b", "decode", 4, 1024, 1e-3, 1e-3, 100)
    assert pre.sets == {"batch": 1, "seq": 2048, "logit_tokens": 0}
    assert dec.sets == {"batch": 4, "context": 1024}
