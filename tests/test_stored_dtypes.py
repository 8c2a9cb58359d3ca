"""Weights stored narrow (an FP8 checkpoint, --set weight_dtype): which weights, the GEMMs
rewritten W8A8, and the bytes, worked out by hand from the configs."""

import pytest

from rooflab import api
from rooflab.errors import RooflabError
from rooflab.trace import zoo
from rooflab.trace.stored_dtypes import checkpoint_weight_dtype, stored_narrow, weight_dtype


def test_which_parameters_a_checkpoint_stores_narrow():
    assert stored_narrow("model.layers.0.mlp.gate_proj.weight", 2)
    assert stored_narrow("model.layers.3.mlp.experts.gate_up_proj", 3)       # an expert stack
    assert stored_narrow("model.layers.0.self_attn.kv_b_proj.weight", 2)
    assert not stored_narrow("model.layers.3.mlp.gate.weight", 2)            # DeepSeek's router
    assert not stored_narrow("model.layers.0.block_sparse_moe.gate.weight", 2)   # Mixtral's
    assert not stored_narrow("model.layers.0.input_layernorm.weight", 1)
    assert not stored_narrow("model.embed_tokens.weight", 2)
    assert not stored_narrow("lm_head.weight", 2)


def test_the_checkpoint_dtype_comes_from_an_fp8_quantization_config():
    _, config, _ = zoo.resolve_config("deepseek-v3")
    assert checkpoint_weight_dtype(config) == "fp8_e4m3"
    assert checkpoint_weight_dtype({"quantization_config": {"quant_method": "awq"}}) is None
    assert checkpoint_weight_dtype({"quantization_config": {"quant_method": "fp8",
                                                            "fmt": "e5m2"}}) is None
    assert checkpoint_weight_dtype({}) is None
    assert weight_dtype("fp8").name == "fp8_e4m3" and weight_dtype("bf16").name == "bf16"
    with pytest.raises(RooflabError, match=r"weight_dtype=int4: one of fp8_e4m3, nvfp4, mxfp4.*"
                                           r"weight-only int GEMMs are not priced"):
        weight_dtype("int4")
    with pytest.raises(RooflabError, match="weight_dtype=fp32: one of"):
        weight_dtype("fp32")


@pytest.fixture(scope="module")
def llama_1b():
    pytest.importorskip("transformers")
    sizes = {"batch": 2, "context": 64, "layers": 1}
    from rooflab.trace.source import load
    return (load("hf:llama3.2-1b", sizes, "decode"),
            load("hf:llama3.2-1b", {**sizes, "weight_dtype": "fp8"}, "decode"))


def _input_bytes(g):
    made = {t for op in g.ops for t in op.outputs}
    read = {t for op in g.ops for t in op.inputs}
    return sum(t.nbytes for n, t in g.tensors.items() if n in read and n not in made)


def test_fp8_weights_halve_the_layers_weights_and_quantize_each_activation_once(llama_1b):
    bf16, fp8 = llama_1b
    # Llama-3.2-1B, one layer: q and o 2048x2048, k and v 2048x512, gate/up/down 2048x8192:
    # 60,817,408 weights, one byte fewer each; embedding (tied lm_head) and norms stay bf16
    assert _input_bytes(bf16) - _input_bytes(fp8) == 60_817_408
    assert fp8.tensors["model.embed_tokens.weight"].dtype.name == "bf16"
    assert fp8.tensors["model.layers.0.mlp.down_proj.weight"].dtype.name == "fp8_e4m3"
    # one quantize per activation: q/k/v share theirs, gate/up theirs
    quantized = [(o.name.split(".")[-3], fp8.tensors[o.inputs[0]].shape)
                 for o in fp8.ops if o.kind == "quantize"]
    assert quantized == [("q_proj", (2, 2048)), ("o_proj", (2, 2048)),
                         ("gate_proj", (2, 2048)), ("down_proj", (2, 8192))]
    gemms = {o.name: o for o in fp8.ops if o.kind == "matmul"}
    k_proj = gemms["model.layers.0.self_attn.k_proj.mm"]
    assert [fp8.tensors[t].dtype.name for t in (*k_proj.inputs, *k_proj.outputs)] == \
        ["fp8_e4m3", "fp8_e4m3", "bf16"]
    assert fp8.tensors[gemms["lm_head.mm"].inputs[1]].dtype.name == "bf16"
    assert fp8.notes[-1] == ("llama3.2-1b: the decoder layers' weights priced as fp8_e4m3 "
                             "(--set weight_dtype), activations quantized to it before each GEMM")


def test_unfused_hbm_bytes_of_the_fp8_step_by_hand(llama_1b):
    bf16, fp8 = llama_1b
    hw = api.load_hardware("h200")
    a, b = (api.predict_graph(g, hw, "unfused", "eager").totals for g in llama_1b)
    # the seven GEMMs read 60,817,408 weight bytes fewer and their activations at one byte:
    # q, k, v read [2, 2048] (4,096 B less each), o 4,096, gate and up 4,096 each, down
    # [2, 8192] 16,384: 40,960 B less. The four quantize kernels read the bf16 activations
    # (8,192 * 3 + 32,768) and write them at one byte (4,096 * 3 + 16,384).
    saved = 60_817_408 + 40_960
    added = (8_192 * 3 + 32_768) + (4_096 * 3 + 16_384)
    assert a.hbm_bytes - b.hbm_bytes == saved - added
    assert b.flops == a.flops + 2 * (2048 * 2 * 3 + 8192 * 2)     # quantize: 2 FLOPs a value


def test_deepseek_v3_is_priced_as_its_fp8_checkpoint():
    pytest.importorskip("transformers")
    info = zoo.model_info("deepseek-v3")
    # 671,026,404,352 parameters; kept 16-bit: embedding and lm_head 129,280 x 7,168 each,
    # 58 routers 256 x 7,168, norms (61 x (7,168 * 2 + 1,536 + 512) + 7,168): 1,960,795,136
    wide = 2 * 926_679_040 + 58 * 256 * 7168 + 61 * (7168 * 2 + 1536 + 512) + 7168
    assert wide == 1_960_795_136
    assert info.weight_bytes == (671_026_404_352 - wide) + 2 * wide == 672_987_199_488
    assert info.quantization_note == (
        "deepseek-v3: priced as its quantization_config stores it (fp8 e4m3, blocks of "
        "128x128): the decoder layers' weights in fp8_e4m3, activations quantized to it before "
        "each GEMM; --set weight_dtype=bf16 prices it unquantized")


def test_the_cli_takes_weight_dtype_and_refuses_what_it_does_not_price():
    pytest.importorskip("transformers")
    from typer.testing import CliRunner

    from rooflab.cli import app
    base = ["predict", "hf:llama3.2-1b", "--set", "layers=1", "-H", "h200"]
    r = CliRunner().invoke(app, base + ["--set", "weight_dtype=fp8"])
    assert r.exit_code == 0, r.output
    assert "note: llama3.2-1b: the decoder layers' weights priced as fp8_e4m3" in r.output
    r = CliRunner().invoke(app, base + ["--set", "weight_dtype=int4"])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        "error: --set weight_dtype=int4: one of fp8_e4m3, nvfp4, mxfp4, or bf16 / fp16 for "
        "16-bit weights (weight-only int GEMMs are not priced: rooflab/trace/stored_dtypes.py)"]
    r = CliRunner().invoke(app, base + ["--set", "weight_dtype=7"])
    assert r.exit_code == 2 and "--set weight_dtype=7: one of fp8_e4m3" in r.output


def test_an_fp8_kv_cache_halves_the_cache_and_quantizes_what_is_written(llama_1b):
    from rooflab.memory import probe_graphs, step_memory, tensor_roles
    from rooflab.trace.stored_dtypes import with_kv_dtype
    bf16, _ = llama_1b
    fp8 = with_kv_dtype(bf16, "fp8")
    # Llama-3.2-1B, one layer, batch 2, context 64: keys and values [2, 8, 64, 64]
    assert fp8.tensors["kv_cache.0.keys"].dtype.name == "fp8_e4m3"
    quantized = [fp8.tensors[o.inputs[0]].shape for o in fp8.ops if o.kind == "quantize"]
    assert quantized == [(2, 8, 1, 64), (2, 8, 1, 64)]          # the new key and value
    sdpa = next(o for o in fp8.ops if o.kind == "attention")
    assert [fp8.tensors[t].dtype.name for t in sdpa.inputs[:3] + sdpa.outputs] == \
        ["bf16", "fp8_e4m3", "fp8_e4m3", "bf16"]
    hw = api.load_hardware("h200")
    a, b = (api.predict_graph(g, hw, "unfused", "eager").totals for g in (bf16, fp8))
    # unfused: each index_copy reads and writes its new [2, 8, 1, 64] row at one byte (1,024
    # + 1,024 B less), after a quantize that reads it at two bytes and writes one (2,048 +
    # 1,024 B more); repeat_kv's two copies read the [2, 8, 64, 64] cache through the expand
    # and write [2, 32, 64, 64], one byte a value (65,536 + 262,144 B less each); the SDPA
    # reads the copied K and V at one byte (262,144 B less each)
    saved = 2 * 2 * 1024 + 2 * (65_536 + 262_144) + 2 * 262_144
    added = 2 * (2048 + 1024)
    assert a.hbm_bytes - b.hbm_bytes == saved - added
    # the cache's bytes halve: 2 x 2 x 8 x 64 x 64 = 131,072 elements
    memories = []
    for g, sets in ((bf16, {}), (fp8, {"kv_dtype": "fp8"})):
        base = {"batch": 2, "context": 64, "layers": 1, **sets}
        probes = probe_graphs(g, lambda s: api.load_workload("hf:llama3.2-1b", s, "decode"),
                              base)
        memories.append(step_memory(g, tensor_roles(g, probes)).kv_cache_bytes)
    assert memories == [131_072 * 2, 131_072]
    with pytest.raises(RooflabError, match="kv_dtype=int8: one of fp8_e4m3, fp8_e5m2"):
        with_kv_dtype(bf16, "int8")


def test_fbgemm_and_compressed_tensors_fp8_checkpoints_keep_what_they_list(tmp_path):
    fbgemm = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0,
              "modules_to_not_convert": ["model.layers.0.mlp.down_proj", "lm_head"]}
    ct = {"quant_method": "compressed-tensors", "ignore": ["re:.*self_attn\\.o_proj"],
          "config_groups": {"group_0": {"weights": {"type": "float", "num_bits": 8},
                                        "targets": ["Linear"]}}}
    assert checkpoint_weight_dtype({"quantization_config": fbgemm}) == "fp8_e4m3"
    assert checkpoint_weight_dtype({"quantization_config": ct}) == "fp8_e4m3"
    int4 = {**ct, "config_groups": {"g": {"weights": {"type": "int", "num_bits": 4}}}}
    assert checkpoint_weight_dtype({"quantization_config": int4}) is None
    skipped = ("model.layers.0.mlp.down_proj", "re:.*self_attn\\.o_proj")
    assert not stored_narrow("model.layers.0.mlp.down_proj.weight", 2, skipped)
    assert not stored_narrow("model.layers.3.self_attn.o_proj.weight", 2, skipped)
    assert stored_narrow("model.layers.1.mlp.down_proj.weight", 2, skipped)
    assert stored_narrow("model.layers.0.mlp.down_projection.weight", 2, skipped)
    pytest.importorskip("transformers")
    import json

    from rooflab.bundled import MODEL_DIR
    from rooflab.trace.source import load
    config = json.loads((MODEL_DIR / "llama3.2-1b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, "quantization_config": fbgemm}))
    g = load(f"hf:{path}", {"batch": 2, "context": 64, "layers": 1}, "decode")
    dtypes = {t.split(".")[-2]: g.tensors[t].dtype.name for t in g.tensors
              if t.startswith("model.layers.0.") and t.endswith("proj.weight")}
    assert dtypes == {"q_proj": "fp8_e4m3", "k_proj": "fp8_e4m3", "v_proj": "fp8_e4m3",
                      "o_proj": "fp8_e4m3", "gate_proj": "fp8_e4m3", "up_proj": "fp8_e4m3",
                      "down_proj": "bf16"}
    assert "(but the 2 modules it keeps unconverted)" in g.notes[-1]
    # the models table counts the same bytes: a byte saved on each of the 16 layers'
    # 60,817,408 linear weights but layer 0's down_proj (2048 x 8192), which keeps two
    info = zoo.model_info(str(path))
    assert info.weight_bytes == 2_471_628_800 - (16 * 60_817_408 - 2048 * 8192) \
        == 1_515_327_488
