"""Traced Hugging Face steps against numbers worked out by hand from the configs: the tensor-core
FLOPs of one decode and one prefill step of Llama-3.2-1B and Qwen2.5-0.5B (every projection,
the lm_head and attention), their GEMM and attention op counts, and the weight bytes a step
reads.

The conventions, as `trace_hf` calls the model (eager transformers, SDPA, a static cache):
- a GEMM of M tokens by an [N, K] weight is 2*M*N*K FLOPs; M is batch*1 in decode and
  batch*seq in prefill, except the prefill's lm_head, which runs on the last position of each
  sequence only (M = batch: logit_tokens 1, transformers' logits_to_keep=1, as a server asks);
- attention is 2*B*Hq*pairs*D for QKᵀ plus 2*B*Hq*pairs*Dv for PV. Decode attends one query
  against the whole static cache, max_cache_len = context keys (pairs = context); prefill is
  causal over seq keys (SDPA's is_causal), so query i scores i + 1 keys and
  pairs = seq*(seq+1)/2, as rooflab's attention op counts them;
- bias adds, norms, rotary and softmax are vector work; the rotary angles are an fp32 bmm
  (inv_freq x positions), a GEMM op on the vector units, so it counts in the GEMM ops but not
  in the tensor FLOPs.
"""

import pytest

from rooflab import api

pytest.importorskip("transformers")

from rooflab.trace import trace_hf, zoo  # noqa: E402  (needs transformers, checked above)

DECODE = dict(phase="decode", batch=4, context=1024)
PREFILL = dict(phase="prefill", batch=2, seq=128)


@pytest.fixture(scope="module")
def traced():
    """(model, phase) -> (graph, unfused eager prediction on the H200)."""
    hw = api.load_hardware("h200")
    out = {}
    for model in ("llama3.2-1b", "qwen2.5-0.5b"):
        for step in (DECODE, PREFILL):
            g = trace_hf(model, **step)
            out[model, step["phase"]] = g, api.predict_graph(g, hw, "unfused", "eager")
    return out


def _count(graph, kind: str) -> int:
    return sum(op.kind == kind for op in graph.ops)


def _parameter_bytes(graph, model_name: str) -> tuple[int, int]:
    """(parameters of the model found among the graph's tensors, their bytes)."""
    _, config, _ = zoo.resolve_config(model_name)
    names = {n for n, _ in zoo.meta_model(config).named_parameters()}
    found = [graph.tensors[n] for n in names if n in graph.tensors]
    assert len(found) == len(names), sorted(names - graph.tensors.keys())[:5]
    return len(found), sum(t.nbytes for t in found)


def _gemm_reads(pred) -> int:
    return sum(k.hbm_read_bytes for k in pred.kernels if "matmul" in k.kinds)


# Llama-3.2-1B: hidden 2048, 32 query heads and 8 KV heads of 64, MLP 8192, 16 layers, vocab
# 128256, lm_head tied to the embedding. Weight elements of the GEMMs of one layer:
#   q, o 2 * 2048*2048 = 8,388,608; k, v 2 * 512*2048 = 2,097,152; gate, up, down
#   3 * 8192*2048 = 50,331,648  -> 60,817,408; 16 layers 973,078,528; lm_head
#   128256*2048 = 262,668,288  -> 1,235,746,816 elements (2,471,493,632 bytes in bf16)
LLAMA_GEMM_WEIGHTS = 1_235_746_816


def test_llama32_1b_decode_flops_by_hand(traced):
    g, p = traced["llama3.2-1b", "decode"]
    # GEMMs: 2 * 4 tokens * 1,235,746,816                          =  9,885,974,528
    # attention per layer: 2 * 4 * 32 heads * 1 * 1024 keys * (64 + 64) = 33,554,432;
    #   16 layers                                                   =    536,870,912
    assert p.totals.tensor_flops == 9_885_974_528 + 536_870_912 == 10_422_845_440
    # q, k, v, o, gate, up, down per layer, the lm_head and the rotary bmm; one SDPA a layer
    assert (_count(g, "matmul"), _count(g, "attention")) == (16 * 7 + 2, 16)


def test_llama32_1b_prefill_flops_by_hand(traced):
    g, p = traced["llama3.2-1b", "prefill"]
    # layer GEMMs: 2 * (2*128 = 256 tokens) * 973,078,528          = 498,216,206,336
    # lm_head on the last position of 2 sequences: 2 * 2 * 262,668,288 = 1,050,673,152
    # attention: causal over 128 keys, 128*129/2 = 8,256 pairs; per layer
    #   2 * 2 * 32 * 8,256 * (64 + 64) = 135,266,304; 16 layers    =   2,164,260,864
    assert (p.totals.tensor_flops == 498_216_206_336 + 1_050_673_152 + 2_164_260_864
            == 501_431_140_352)
    assert (_count(g, "matmul"), _count(g, "attention")) == (16 * 7 + 2, 16)


def test_llama32_1b_weight_bytes_a_step_reads(traced):
    for phase in ("decode", "prefill"):
        g, _ = traced["llama3.2-1b", phase]
        # every parameter is read: 16 layers * 9 tensors (7 GEMM weights, 2 norms) + the tied
        # embedding + the final norm = 146 tensors, 1,235,814,400 * 2 bytes (tests/test_zoo.py)
        assert _parameter_bytes(g, "llama3.2-1b") == (146, 2_471_628_800)
    # decode GEMM kernels read their weights, 2,471,493,632 bytes, and activations of only
    # 4 tokens: per layer x [4, 2048] bf16 (16,384 bytes) for q, k, v, gate, up and o, and
    # [4, 8192] (65,536) for down -> 163,840 * 16 + the lm_head's 16,384 = 2,637,824 bytes;
    # the rotary bmm reads inv_freq [1, 32, 1] and the position [1, 1, 1] in fp32, 132 bytes
    _, p = traced["llama3.2-1b", "decode"]
    assert _gemm_reads(p) == 2_471_493_632 + 2_637_824 + 132 == 2_474_131_588
    # and the attention kernels read the whole cache: 16 layers * k and v [4, 8, 1024, 64]
    # bf16 = 16 * 2 * 4,194,304 = 134,217,728 bytes at least (more after repeat_kv's copies)
    assert sum(k.hbm_read_bytes for k in p.kernels if "attention" in k.kinds) >= 134_217_728


# Qwen2.5-0.5B: hidden 896, 14 query heads and 2 KV heads of 64, MLP 4864, 24 layers, vocab
# 151936, lm_head tied. Weight elements of the GEMMs of one layer (q, k and v biases are
# added in the GEMMs' epilogues, vector work):
#   q, o 2 * 896*896 = 1,605,632; k, v 2 * 128*896 = 229,376; gate, up, down
#   3 * 4864*896 = 13,074,432  -> 14,909,440; 24 layers 357,826,560; lm_head
#   151936*896 = 136,134,656  -> 493,961,216 elements (987,922,432 bytes in bf16)
QWEN_GEMM_WEIGHTS = 493_961_216


def test_qwen25_05b_decode_flops_by_hand(traced):
    g, p = traced["qwen2.5-0.5b", "decode"]
    # GEMMs: 2 * 4 tokens * 493,961,216                            =  3,951,689,728
    # attention per layer: 2 * 4 * 14 * 1 * 1024 * (64 + 64) = 14,680,064; 24 layers
    #                                                              =    352,321,536
    assert p.totals.tensor_flops == 3_951_689_728 + 352_321_536 == 4_304_011_264
    assert (_count(g, "matmul"), _count(g, "attention")) == (24 * 7 + 2, 24)


def test_qwen25_05b_prefill_flops_by_hand(traced):
    g, p = traced["qwen2.5-0.5b", "prefill"]
    # layer GEMMs: 2 * 256 tokens * 357,826,560                    = 183,207,198,720
    # lm_head on 2 last positions: 2 * 2 * 136,134,656             =     544,538,624
    # attention: 8,256 causal pairs; per layer 2 * 2 * 14 * 8,256 * 128 = 59,179,008;
    #   24 layers                                                   =   1,420,296,192
    assert (p.totals.tensor_flops == 183_207_198_720 + 544_538_624 + 1_420_296_192
            == 185_172_033_536)
    assert (_count(g, "matmul"), _count(g, "attention")) == (24 * 7 + 2, 24)


def test_qwen25_05b_weight_bytes_a_step_reads(traced):
    for phase in ("decode", "prefill"):
        g, _ = traced["qwen2.5-0.5b", phase]
        # 24 layers * 12 tensors (7 GEMM weights, 3 biases, 2 norms) + embedding + final norm
        # = 290 tensors, 494,032,768 * 2 bytes
        assert _parameter_bytes(g, "qwen2.5-0.5b") == (290, 988_065_536)
    # decode GEMM kernels: weights 987,922,432 bytes + the biases their epilogues add,
    # 24 * (896 + 2*128) * 2 = 55,296, and 4 tokens of activations: per layer [4, 896] bf16
    # (7,168 bytes) for q, k, v, gate, up and o, [4, 4864] (38,912) for down -> 81,920 * 24
    # + the lm_head's 7,168 = 1,973,248; the rotary bmm (32 frequencies) 132 bytes
    _, p = traced["qwen2.5-0.5b", "decode"]
    assert _gemm_reads(p) == 987_922_432 + 55_296 + 1_973_248 + 132 == 989_951_108


def test_the_hand_counts_are_the_models_parameters():
    # the GEMM weights above plus what is not a GEMM weight are the parameter counts of
    # tests/test_zoo.py: Llama norms 16*2*2048 + 2048 = 67,584; Qwen biases 24*1,152 = 27,648
    # and norms 24*2*896 + 896 = 43,904
    assert LLAMA_GEMM_WEIGHTS + 67_584 == zoo.model_info("llama3.2-1b").params
    assert QWEN_GEMM_WEIGHTS + 27_648 + 43_904 == zoo.model_info("qwen2.5-0.5b").params


def test_a_decode_steps_call_inputs_are_its_ids_not_its_static_cache(traced):
    # transformers marks a StaticCache's tensors static (mark_static_address), so
    # reduce-overhead copies only the token ids of a decode step (cache_position: no tensor the
    # step reads)
    g, _ = traced["llama3.2-1b", "decode"]
    assert g.call_inputs == {"input_ids"}
    assert g.tensors["input_ids"].nbytes == 4 * 8            # batch 4, one int64 id each
