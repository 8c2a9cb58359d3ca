"""Serving hf: models: parametric traces, tensor parallelism, and the CLI's answers on them."""

import pytest
from typer.testing import CliRunner

pytest.importorskip("transformers")

from rooflab import serve  # noqa: E402
from rooflab.cli import app  # noqa: E402
from rooflab.trace import parametric, zoo  # noqa: E402
from rooflab.trace.source import load  # noqa: E402


@pytest.mark.parametrize("phase, x, y", [("decode", 9, 200), ("prefill", 2, 333),
                                         ("decode", 40, 1000)])
def test_a_parametric_step_is_the_trace_at_that_size(phase, x, y):
    # fitted from five other sizes; batch 40 also crosses cuBLAS's split-K boundary (m > 16)
    step = parametric.hf_step("llama3.2-1b", phase)
    axes = ("batch", "context") if phase == "decode" else ("batch", "seq")
    got, want = step.graph(x, y), load("hf:llama3.2-1b", dict(zip(axes, (x, y))), phase)
    assert [(o.name, o.kind, o.inputs, o.outputs, o.launches) for o in got.ops] == \
        [(o.name, o.kind, o.inputs, o.outputs, o.launches) for o in want.ops]
    assert {n: t.shape for n, t in got.tensors.items()} == \
        {n: t.shape for n, t in want.tensors.items()}
    assert [o.attrs for o in got.ops] == [o.attrs for o in want.ops]


def test_shard_config_by_hand():
    _, cfg, _ = zoo.resolve_config("llama3-70b")
    s = zoo.shard_config(cfg, 8)
    # 64 heads / 8, 8 KV heads / 8, 28672 / 8 MLP columns, 128256 / 8 vocabulary entries
    assert (s["num_attention_heads"], s["num_key_value_heads"], s["intermediate_size"],
            s["vocab_size"], s["head_dim"], s["hidden_size"]) == (8, 1, 3584, 16032, 128, 8192)
    s16 = zoo.shard_config(cfg, 16)          # fewer KV heads than GPUs: one each, replicated
    assert s16["num_key_value_heads"] == 1 and s16["num_attention_heads"] == 4


def test_mla_attention_shards_by_heads_and_keeps_the_latent_cache_whole():
    # DeepSeek-V3 on 8 GPUs: 128 heads -> 16; q_a_proj and kv_a_proj_with_mqa (into the 1,536
    # and 512 + 64 latents) replicated; q_b_proj 16 x (128 + 64) = 3,072 columns, kv_b_proj
    # 16 x (128 + 128) = 4,096, o_proj 16 x 128 = 2,048 rows; expert MLPs 2,048 -> 256 columns.
    # Every GPU caches the whole latent (512 + 64 per token), as MLA serving engines do.
    _, cfg, _ = zoo.resolve_config("deepseek-v3")
    s = zoo.shard_config(cfg, 8)
    assert (s["num_attention_heads"], s["moe_intermediate_size"], s["kv_lora_rank"]) == \
        (16, 256, 512) and "head_dim" not in s
    g = load("hf:deepseek-v3", {"batch": 2, "context": 64, "layers": 4, "tp": 8}, "decode")
    shapes = {o.name.split(".")[-2]: g.tensors[o.inputs[1]].shape for o in g.ops
              if o.kind == "matmul" and ".layers.3." in o.name}
    assert [shapes[k] for k in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj",
                                "o_proj")] == [(7168, 1536), (1536, 3072), (7168, 576),
                                               (512, 4096), (2048, 7168)]
    assert g.tensors["kv_cache.3.keys"].shape == (2, 1, 64, 512)
    assert [o.kind for o in g.ops].count("all_reduce") == 2 * 4 + 1


def test_tensor_parallel_weights_and_collectives_by_hand():
    # Llama-3.2-1B on 2 GPUs: hidden 2048, 16 layers, heads 32 -> 16 x 64, KV heads 8 -> 4 x 64,
    # MLP 8192 -> 4096, vocabulary 128256 -> 64128 (tied: embedding and lm_head are one tensor)
    per_layer = (2048 * 1024 + 2 * 2048 * 256 + 1024 * 2048   # q, k, v, o
                 + 3 * 2048 * 4096 + 2 * 2048)                # gate, up, down; two norms
    weights = 2 * (16 * per_layer + 64128 * 2048 + 2048) + 32 * 4   # + rotary inv_freq fp32
    row = serve.serve("hf:llama3.2-1b", ["h200"], [4], [256], [4], tp=2).rows()[0]
    assert row["gpus"] == 2 and row["weights_bytes"] == weights
    # KV per GPU: 16 layers x (k + v) x 4 heads x 64 x 2 B = 16,384 B per token
    assert row["kv_cache_bytes"] == 4 * 260 * 16384
    g = load("hf:llama3.2-1b", {"batch": 4, "context": 64, "tp": 2}, "decode")
    kinds = [o.kind for o in g.ops]
    # an all-reduce after each attention and MLP block and the embedding; the logits gathered
    assert kinds.count("all_reduce") == 2 * 16 + 1 and kinds.count("all_gather") == 1
    gather = next(o for o in g.ops if o.kind == "all_gather")
    assert g.tensors[gather.outputs[0]].shape[-1] == 128256


def test_tp_that_does_not_divide_is_one_line():
    r = CliRunner().invoke(app, ["serve", "hf:llama3-8b", "--tp", "3"])
    assert r.exit_code == 2
    assert "--tp 3: 32 attention heads do not divide by 3" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1


def test_expert_parallel_splits_the_experts_and_exchanges_the_rows():
    # Mixtral-8x7B at batch 2 (decode): 2 tokens x top-2 = 4 routed rows of 4096 bf16
    g = load("hf:mixtral-8x7b", {"batch": 2, "context": 64, "ep": 4}, "decode")
    a2a = [o for o in g.ops if o.kind == "all_to_all"]
    assert len(a2a) == 2 * 32                          # dispatch and combine, 32 layers
    assert all(g.tensors[o.inputs[0]].shape == (4, 4096) and o.attrs["world_size"] == 4
               for o in a2a)
    made = {t for o in g.ops for t in o.outputs}
    w1 = next(t for n, t in g.tensors.items() if n not in made and "experts" in n)
    assert w1.shape[0] == 2                            # 8 experts / 4 GPUs
    r = CliRunner().invoke(app, ["serve", "hf:mixtral-8x7b", "--ep", "3"])
    assert r.exit_code == 2 and "--ep 3: 8 experts do not divide by 3" in r.output


def test_pipeline_stages_by_hand():
    from rooflab import api
    from rooflab.trace import pipeline
    # Llama-3.2-1B prefill, 16 layers in 4 stages of 4; each later stage receives the residual
    # stream [2, 64, 2048] bf16 = 524,288 B through one send_recv
    g = load("hf:llama3.2-1b", {"batch": 2, "seq": 64}, "prefill")
    st = pipeline.stages(g, 4)
    recv = [[o for o in s.ops if o.kind == "send_recv"] for s in st]
    assert [len(r) for r in recv] == [0, 1, 1, 1]
    assert all(s.tensors[r[0].inputs[0]].nbytes == 2 * 64 * 2048 * 2 for s, r in zip(st[1:],
                                                                                      recv[1:]))
    layers = [{int(n.split("layers.")[1].split(".")[0]) for n in (o.name for o in s.ops)
               if "layers." in n} for s in st]
    assert layers == [set(range(4 * i, 4 * i + 4)) for i in range(4)]
    # what each stage's call is passed (what reduce-overhead copies): the ids, then the stream
    assert [s.call_inputs for s in st] == [{"input_ids"}] + [{r[0].outputs[0]} for r in recv[1:]]
    assert sum(o.name.startswith("lm_head") for o in st[3].ops) > 0
    assert not any(o.name.startswith("lm_head") for s in st[:3] for o in s.ops)
    # 3 stages of 16 layers do not exist
    with pytest.raises(Exception, match="16 layers do not divide into 3 stages"):
        pipeline.stages(g, 3)
    # the step: stages in turn for the first of 4 micro-batches, then 3 at the slowest's pace
    t = pipeline.PipelineTime((1.0, 2.0, 1.0, 1.0), 4)
    assert t.time_s == 5.0 + 3 * 2.0 and t.bubble == pytest.approx(1 - 5 * 4 / (4 * 11))
    hw = api.load_hardware("h100-sxm")
    preds, timing = api.predict_pipeline("hf:llama3.2-1b", hw, {"batch": 8, "seq": 64},
                                         "prefill", "fused", "graph", pp=4, microbatches=4)
    assert timing.time_s == pytest.approx(sum(p.totals.time_s for p in preds)
                                          + 3 * max(p.totals.time_s for p in preds))


def test_data_parallel_replicas_multiply_throughput_not_latency():
    one = serve.serve("hf:llama3.2-1b", ["h200"], [4], [256], [4], tp=2).rows()[0]
    four = serve.serve("hf:llama3.2-1b", ["h200"], [4], [256], [4], tp=2, dp=4).rows()[0]
    assert (one["gpus"], four["gpus"]) == (2, 8)                     # tp x dp
    assert four["latency_s"] == one["latency_s"] and four["ttft_s"] == one["ttft_s"]
    assert four["tokens_per_s"] == one["tokens_per_s"]                # per GPU: unchanged
    # the deployment: 4 replicas x batch 4 x 4 tokens over the latency
    assert four["total_tokens_per_s"] == pytest.approx(4 * 4 * 4 / one["latency_s"])
    assert four["total_tokens_per_s"] == pytest.approx(4 * one["total_tokens_per_s"])
    assert four["total_tokens_per_s"] == pytest.approx(four["tokens_per_s"] * four["gpus"])
    r = CliRunner().invoke(app, ["serve", "hf:llama3.2-1b", "--tp", "2", "--dp", "4",
                                 "--batch", "4", "--input", "256", "--output", "4"])
    assert r.exit_code == 0 and "tok/s all" in r.output
    assert "2 tensor-parallel x 4 data-parallel replicas" in r.output
