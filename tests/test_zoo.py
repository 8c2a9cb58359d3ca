"""The bundled model zoo: configs resolve by name or path with one-line errors, and the counts
`rooflab models` prints are the ones worked out by hand from the configs."""

import json
import sys

import pytest

from rooflab import bundled
from rooflab.errors import RooflabError
from rooflab.trace import zoo

ZOO = ["deepseek-v3", "gemma3-1b", "llama3-70b", "llama3-8b", "llama3.2-1b", "mixtral-8x7b",
       "qwen2.5-0.5b", "qwen2.5-7b"]


@pytest.fixture(scope="module")
def infos():
    pytest.importorskip("transformers")
    return {i.name: i for i in zoo.list_models()}


def _error(fn, *args) -> str:
    with pytest.raises(RooflabError) as e:
        fn(*args)
    return str(e.value)


def test_the_eight_bundled_configs_lie_in_the_checkouts_models_folder():
    assert zoo.bundled_names() == ZOO
    name, config, path = zoo.resolve_config("llama3.2-1b")
    assert (name, path) == ("llama3.2-1b", bundled.MODEL_DIR / "llama3.2-1b.json")
    assert config["model_type"] == "llama" and config["hidden_size"] == 2048


def test_a_config_by_file_or_by_the_folder_holding_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    text = (bundled.MODEL_DIR / "qwen2.5-0.5b.json").read_text()
    (tmp_path / "my-qwen").mkdir()
    (tmp_path / "my-qwen/config.json").write_text(text)
    (tmp_path / "tiny.json").write_text(text)
    # a folder, and its config.json, are named after the folder; any other file by its stem
    for given in ("my-qwen", "my-qwen/", "my-qwen/config.json", str(tmp_path / "my-qwen")):
        name, config, path = zoo.resolve_config(given)
        assert name == "my-qwen" and config["hidden_size"] == 896 and path.name == "config.json"
    assert zoo.resolve_config("tiny.json")[0] == "tiny"
    # the bundled file by its checkout path, from anywhere (here: no models/ folder in the cwd)
    assert zoo.resolve_config("models/gemma3-1b.json")[2] == bundled.MODEL_DIR / "gemma3-1b.json"


def test_config_errors_are_one_line_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _error(zoo.resolve_config, "lama3-8b").startswith(
        "unknown model 'lama3-8b' (did you mean 'llama3-8b'?); bundled: deepseek-v3, ")
    assert _error(zoo.resolve_config, "nope/config.json") == "nope/config.json: no such file"
    (tmp_path / "empty").mkdir()
    assert _error(zoo.resolve_config, "empty") == "empty: folder holds no config.json"
    (tmp_path / "bad.json").write_text('{\n  "model_type": "llama",\n  "hidden_size": 4096,,\n}\n')
    # line 3: two spaces, the 13-character key, ": ", 4096, a comma at 22, the stray one at 23
    assert _error(zoo.resolve_config, "bad.json") == \
        "bad.json:3: not valid JSON: Expecting property name enclosed in double quotes (column 23)"
    (tmp_path / "list.json").write_text("[1, 2]")
    assert _error(zoo.resolve_config, "list.json") == \
        "list.json: expected a JSON object (a Hugging Face config.json), found a list"
    (tmp_path / "untyped.json").write_text('{"hidden_size": 4096}')
    assert _error(zoo.resolve_config, "untyped.json") == \
        "untyped.json: no 'model_type' field: not a Hugging Face config.json"
    for message in (_error(zoo.resolve_config, p) for p in ("bad.json", "lama3-8b")):
        assert "\n" not in message
    assert _error(zoo.resolve_config, " ") == \
        "expected a bundled model name or the path of a config.json"


def test_an_architecture_transformers_does_not_know():
    transformers = pytest.importorskip("transformers")
    message = _error(zoo.meta_model, {"model_type": "lama", "hidden_size": 64}, "bf16", "x.json")
    assert message == ("x.json: config of an unknown architecture: model_type 'lama' is not one "
                       f"transformers {transformers.__version__} knows (did you mean 'llama'?)")


def test_a_config_transformers_cannot_build_is_one_line():
    pytest.importorskip("transformers")
    # no attention heads: transformers divides hidden_size by them
    config = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 0,
              "num_hidden_layers": 1, "intermediate_size": 128, "vocab_size": 100}
    message = _error(zoo.meta_model, config, "bf16", "zero.json")
    assert message.startswith("zero.json: transformers ") and \
        "cannot build a causal LM from this config (llama): " in message and "\n" not in message
    assert _error(zoo.meta_model, config, "int8") == \
        "dtype 'int8': a model is built in one of bf16, fp16, fp32"


def test_a_billion_layers_is_refused_before_building():
    pytest.importorskip("transformers")
    _, config, _ = zoo.resolve_config("llama3.2-1b")
    assert _error(zoo.meta_model, {**config, "num_hidden_layers": 10**9}, "bf16", "big.json") \
        == "big.json: num_hidden_layers 1000000000: more than 1,000; not building that"
    assert _error(zoo.meta_model, {**config, "num_local_experts": 10**6}) == \
        "num_local_experts 1000000: more than 4,096; not building that"


def test_without_transformers_the_trace_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)      # import transformers fails
    _, config, path = zoo.resolve_config("llama3-8b")
    with pytest.raises(zoo.MissingExtra) as e:
        zoo.meta_model(config, source=path)
    assert str(e.value) == ("tracing Hugging Face models needs the trace extra: "
                            "pip install 'rooflab[trace]'")


def test_meta_model_builds_on_meta_in_the_dtype_asked():
    pytest.importorskip("transformers")
    _, config, _ = zoo.resolve_config("qwen2.5-0.5b")
    model = zoo.meta_model(config, "fp16")
    p = next(model.parameters())
    assert p.device.type == "meta" and str(p.dtype) == "torch.float16" and not model.training
    assert model.config._attn_implementation == "sdpa"


def test_llama32_1b_counted_by_hand(infos):
    i = infos["llama3.2-1b"]
    # hidden 2048, 32 heads of 64, 8 KV heads (k/v 8*64 = 512 wide), MLP 8192, 16 layers,
    # vocab 128256, lm_head tied to the embedding (counted once), no biases:
    #   embedding            128256*2048                            =   262,668,288
    #   q, o                 2 * 2048*2048                          =     8,388,608
    #   k, v                 2 * 512*2048                           =     2,097,152
    #   gate, up, down       3 * 2048*8192                          =    50,331,648
    #   two RMSNorms         2 * 2048                               =         4,096
    #   one layer            8,388,608 + 2,097,152 + 50,331,648 + 4,096 = 60,821,504
    #   16 layers            16 * 60,821,504                        =   973,144,064
    #   final norm           2048
    #   total                262,668,288 + 973,144,064 + 2,048      = 1,235,814,400
    assert i.params == 1_235_814_400 and i.active_params == i.params and i.experts == 0
    assert i.weight_bytes == 2 * 1_235_814_400 == 2_471_628_800            # bf16
    # KV cache: 16 layers * (k + v) * 8 KV heads * 64 * 2 bytes = 32,768 bytes per token
    assert i.kv_bytes_per_token == 16 * 2 * 8 * 64 * 2 == 32_768
    assert (i.architecture, i.repo, i.dtype, i.layers, i.hidden, i.heads, i.kv_heads) == \
        ("LlamaForCausalLM", "meta-llama/Llama-3.2-1B", "bf16", 16, 2048, 32, 8)


def test_qwen25_05b_counted_by_hand(infos):
    i = infos["qwen2.5-0.5b"]
    # hidden 896, 14 heads of 64, 2 KV heads (k/v 128 wide), MLP 4864, 24 layers, vocab
    # 151936, tied lm_head; q, k and v carry biases, o does not:
    #   embedding            151936*896                             =   136,134,656
    #   q                    896*896 + 896                          =       803,712
    #   k, v                 2 * (128*896 + 128)                    =       229,632
    #   o                    896*896                                =       802,816
    #   gate, up, down       3 * 896*4864                           =    13,074,432
    #   two RMSNorms         2 * 896                                =         1,792
    #   one layer            803,712 + 229,632 + 802,816 + 13,074,432 + 1,792 = 14,912,384
    #   24 layers            24 * 14,912,384                        =   357,897,216
    #   total                136,134,656 + 357,897,216 + 896        =   494,032,768
    assert i.params == 494_032_768 and i.active_params == i.params
    assert i.weight_bytes == 988_065_536                                     # 2 bytes each
    # KV cache: 24 layers * 2 * 2 KV heads * 64 * 2 bytes = 12,288 bytes per token
    assert i.kv_bytes_per_token == 24 * 2 * 2 * 64 * 2 == 12_288
    assert (i.architecture, i.heads, i.kv_heads) == ("Qwen2ForCausalLM", 14, 2)


def test_mixtral_active_params_are_two_of_eight_experts(infos):
    i = infos["mixtral-8x7b"]
    # per layer: attention 2*4096*4096 + 2*1024*4096 = 41,943,040; router 8*4096 = 32,768;
    # experts 8 * 3*4096*14336 = 1,409,286,144; norms 8,192  -> 1,451,270,144; * 32 layers
    # = 46,440,644,608; + embedding and untied lm_head 2*32000*4096 = 262,144,000 + final
    # norm 4,096 = 46,702,792,704
    assert i.params == 46_702_792_704 and i.experts == 8
    # a token runs 2 of the 8 experts: the routed 32 * 1,409,286,144 = 45,097,156,608 count
    # 2/8 -> 46,702,792,704 - 45,097,156,608 * 6/8 = 12,879,925,248
    assert i.active_params == 46_702_792_704 - 33_822_867_456 == 12_879_925_248
    assert i.kv_bytes_per_token == 32 * 2 * 8 * 128 * 2 == 131_072


def test_deepseek_v3_caches_the_mla_latent_and_runs_eight_of_256_experts(infos):
    i = infos["deepseek-v3"]
    assert i.params == 671_026_404_352 and i.experts == 256 and i.layers == 61
    # routed experts: 61 - 3 dense layers = 58 MoE layers of 256 experts of 3*7168*2048 =
    # 44,040,192 each -> 58*256*44,040,192 = 653,908,770,816; a token runs 8 of them
    # (20,434,649,088), the shared expert and all the rest whole:
    # 671,026,404,352 - 653,908,770,816 + 20,434,649,088 = 37,552,282,624
    assert i.active_params == 37_552_282_624
    # transformers caches the compressed latent (kv_lora_rank 512) and the shared rotary key
    # (64) per layer, not per-head keys and values: 61 * (512 + 64) * 2 bytes = 70,272
    assert i.kv_bytes_per_token == 61 * (512 + 64) * 2 == 70_272


def test_a_quantization_rooflab_does_not_price_is_named(infos):
    # an FP8 checkpoint is priced as stored (tests/test_stored_dtypes.py); another method,
    # or --set weight_dtype=bf16 on the FP8 one, is priced at 16 bits and says so
    assert infos["llama3-8b"].quantization_note == ""
    _, config, _ = zoo.resolve_config("deepseek-v3")
    assert zoo.quantization_note("deepseek-v3", config, "bf16") == (
        "deepseek-v3: its quantization_config stores the weights as fp8 e4m3, blocks of "
        "128x128; rooflab traces and prices the model in bf16, not as those weights")
    assert zoo.quantization_note("m", {"quantization_config": {"quant_method": "awq"},
                                       "torch_dtype": "float16"}) == (
        "m: its quantization_config stores the weights as awq; rooflab traces and prices the "
        "model in float16, not as those weights")
    assert zoo.quantization_note("m", {"quantization_config": "fp8"}) is None   # not a config
    assert zoo.quantization_note("m", {}) is None
    assert zoo.quantization_note("m", {}, "nvfp4") == (
        "m: the decoder layers' weights priced as nvfp4 (--set weight_dtype), activations "
        "quantized to it before each GEMM")


def test_gemma3_and_the_larger_dense_models(infos):
    # Gemma 3 1B: 26 layers, one KV head of 256: 26 * 2 * 256 * 2 bytes = 26,624 per token
    assert infos["gemma3-1b"].kv_bytes_per_token == 26_624
    assert infos["gemma3-1b"].architecture == "Gemma3ForCausalLM"
    # Llama 3 8B: 32 layers * 2 * 8 KV heads * 128 * 2 bytes; 70B: 80 layers of the same
    assert infos["llama3-8b"].kv_bytes_per_token == 131_072
    assert infos["llama3-70b"].kv_bytes_per_token == 327_680
    assert {n: i.params for n, i in infos.items() if n in ("llama3-8b", "llama3-70b",
                                                           "qwen2.5-7b", "gemma3-1b")} == {
        "llama3-8b": 8_030_261_248, "llama3-70b": 70_553_706_496,
        "qwen2.5-7b": 7_615_616_512, "gemma3-1b": 999_885_952}
    assert list(infos) == ZOO


def test_weight_bytes_follow_the_configs_dtype(tmp_path):
    pytest.importorskip("transformers")
    config = json.loads((bundled.MODEL_DIR / "qwen2.5-0.5b.json").read_text())
    (tmp_path / "fp32.json").write_text(json.dumps({**config, "torch_dtype": "float32"}))
    i = zoo.model_info(str(tmp_path / "fp32.json"))
    # 494,032,768 parameters * 4 bytes; the KV cache in fp32 too: 24*2*2*64*4
    assert (i.name, i.dtype, i.weight_bytes, i.kv_bytes_per_token) == \
        ("fp32", "fp32", 1_976_131_072, 24_576)
    (tmp_path / "int.json").write_text(json.dumps({**config, "torch_dtype": "int8"}))
    assert _error(zoo.model_info, str(tmp_path / "int.json")).endswith(
        "int.json: dtype 'int8' is not a weight dtype rooflab knows (bfloat16, float16, float32)")


def test_first_layers_cuts_the_model_and_its_per_layer_lists():
    cfg = {"model_type": "gemma3_text", "num_hidden_layers": 4,
           "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                           "full_attention"], "hidden_size": 8}
    one = zoo.first_layers(cfg, 1)
    assert one["num_hidden_layers"] == 1 and one["layer_types"] == ["sliding_attention"]
    assert one["hidden_size"] == 8 and cfg["num_hidden_layers"] == 4     # the original stays
    assert zoo.first_layers(cfg, 0) is cfg and zoo.first_layers(cfg, 4) == cfg
    assert "the model has 4 decoder layers" in _error(zoo.first_layers, cfg, 5)


def test_one_layer_of_llama3_8b_by_hand():
    pytest.importorskip("transformers")
    from rooflab import api
    g = api.load_workload("hf:llama3-8b", {"layers": 1, "batch": 1, "context": 1024}, "decode")
    # decode b1: one layer's 7 GEMMs (q 4096x4096, k and v 4096x1024, o 4096x4096, gate and
    # up 4096x14336, down 14336x4096) and lm_head 4096x128256, 2 FLOPs per weight
    weights = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 4096 * 128256
    pred = api.predict_graph(g, api.load_hardware("h200"), "unfused", "graph")
    assert sum(k.tensor_flops for k in pred.kernels if "matmul" in k.kinds) == 2 * weights
    assert g.params["layers"] == 1
