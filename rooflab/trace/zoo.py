"""The bundled Hugging Face model configs, and the meta-device models transformers builds from
them (or from any `config.json`).

A config is named by its bundled name (`llama3-8b`, the stem of a file in the checkout's
`models/` folder or a wheel's `rooflab/bundled_models/`), by a path to a `config.json`, or by
a folder holding one. Nothing here reaches the Hugging Face hub: the config is the whole
input, and the model has no weights (its parameters are meta tensors), so building even
DeepSeek-V3 takes well under a second and no memory.

torch and transformers are imported only inside the functions that build a model, so a
config resolves, and its errors are reported, without them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rooflab.bundled import MODEL_DIR, model_file
from rooflab.dtypes import DTYPES, lookup
from rooflab.errors import RooflabError
from rooflab.trace.stored_dtypes import (checkpoint_skipped, checkpoint_weight_dtype,
                                         stored_narrow)
from rooflab.yamlio import did_you_mean

TRACE_EXTRA = "pip install 'rooflab[trace]'"

# config attributes that name the routed experts of a MoE layer, and how many a token takes
_EXPERT_COUNTS = ("num_local_experts", "n_routed_experts", "num_experts")
_TOP_K = "num_experts_per_tok"
# Building a layer on the meta device takes about a millisecond, so a config asking for a
# billion of them would hang rather than fail; real models have at most a few hundred (and
# transformers keeps a layer's experts in one tensor, or a list of at most a few hundred).
_MAX_COUNTS = {"num_hidden_layers": 1000, **{a: 4096 for a in _EXPERT_COUNTS}}


class MissingExtra(RooflabError):
    """torch or transformers is not installed; the message says what to install."""


def bundled_names() -> list[str]:
    """Names of the bundled model configs, sorted."""
    return sorted(p.stem for p in MODEL_DIR.glob("*.json"))


def _config_file(name_or_path: str) -> tuple[str, Path]:
    """(name, path of the config.json) for a bundled name, a file or a folder holding
    config.json. A folder's config is named after the folder, a file after its stem."""
    if not name_or_path.strip():
        raise RooflabError("expected a bundled model name or the path of a config.json")
    p = Path(name_or_path)
    looks_like_path = name_or_path.endswith(".json") or "/" in name_or_path or p.exists()
    if not looks_like_path:
        bundled = MODEL_DIR / f"{name_or_path}.json"
        if bundled.is_file():
            return name_or_path, bundled
        names = bundled_names()
        raise RooflabError(f"unknown model '{name_or_path}'" + did_you_mean(name_or_path, names)
                           + f"; bundled: {', '.join(names)} (or pass a path to a config.json)")
    p = Path(model_file(name_or_path))
    if not p.exists():
        # a Hub repository id ("meta-llama/Meta-Llama-3-8B") names the bundled config of it
        hub_id = (not name_or_path.endswith(".json") and name_or_path.count("/") == 1
                  and not name_or_path.startswith((".", "/", "~")))
        for bundled_name in bundled_names() if hub_id else ():
            bundled = MODEL_DIR / f"{bundled_name}.json"
            repo = json.loads(bundled.read_text(encoding="utf-8")).get("_name_or_path", "")
            if repo.casefold() == name_or_path.casefold():      # Hub ids ignore case
                return bundled_name, bundled
        raise RooflabError("no such file" + (", and no bundled model is that Hugging Face "
                                             "repository (`rooflab models` lists them; nothing "
                                             "is downloaded)" if hub_id else ""),
                           file=name_or_path)
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise RooflabError("folder holds no config.json", file=name_or_path)
        return p.resolve().name, p / "config.json"
    if not p.is_file():
        raise RooflabError("no such file" if not p.exists() else "not a regular file",
                           file=name_or_path)
    return (p.resolve().parent.name if p.name == "config.json" else p.stem), p


def resolve_config(name_or_path: str) -> tuple[str, dict, Path]:
    """(name, config dict, path) of a model config given by bundled name, by the path of a
    config.json, or by a folder holding one. RooflabError (one line, naming the file) when the
    name is unknown, the file is missing or not JSON, or the JSON is not a model config (an
    object with a `model_type`)."""
    name, path = _config_file(str(name_or_path))
    shown = str(name_or_path) if path.parent != MODEL_DIR else str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RooflabError("a binary file, not a model config (JSON)", file=shown) from None
    except OSError as e:
        raise RooflabError(f"cannot read: {e.strerror or e}", file=shown) from None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as e:
        raise RooflabError(f"not valid JSON: {e.msg} (column {e.colno})", file=shown,
                           line=e.lineno) from None
    if not isinstance(config, dict):
        raise RooflabError(f"expected a JSON object (a Hugging Face config.json), found a "
                           f"{type(config).__name__}", file=shown)
    if not isinstance(config.get("model_type"), str) or not config["model_type"]:
        raise RooflabError("no 'model_type' field: not a Hugging Face config.json", file=shown)
    for where, fields in (("", config), ("text_config.", config.get("text_config"))):
        for key in SIZE_FIELDS:
            v = fields.get(key) if isinstance(fields, dict) else None
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise RooflabError(f"{where}{key}: a size must be a positive integer, got {v!r}",
                                   file=shown, line=_line_of(text, key))
    return name, config, path


# the config fields that size a model (a count of layers, heads, experts or features)
SIZE_FIELDS = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
               "num_key_value_heads", "head_dim", "vocab_size", "moe_intermediate_size",
               "num_local_experts", "n_routed_experts", "num_experts_per_tok")


def _line_of(text: str, key: str) -> int | None:
    """The line of `"key":` in a JSON text, for the message; None where it is not found."""
    at = text.find(f'"{key}"')
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def _torch_dtype(dtype: str):
    """The torch dtype of a rooflab dtype name or alias (`bf16`, `bfloat16`, `fp16`, `fp32`)."""
    import torch
    d = lookup(dtype)
    table = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
    if d is None or d.name not in table:
        raise RooflabError(f"dtype '{dtype}': a model is built in one of {', '.join(table)}")
    return table[d.name]


def meta_model(config: dict, dtype: str = "bf16", source: str | Path | None = None):
    """The transformers causal LM of a config dict, built on the meta device (no weights, no
    memory, no download) with SDPA attention, in eval mode. Fields starting with `_` are
    dropped. `source` names the config's file in errors. RooflabError (one line) when torch or
    transformers is missing, the architecture is one transformers does not know, or the
    config does not build."""
    try:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    except ImportError:
        raise MissingExtra("tracing Hugging Face models needs the trace extra: "
                           + TRACE_EXTRA) from None
    file = str(source) if source is not None else None
    torch_dtype = _torch_dtype(dtype)
    # the model is built in `dtype` and priced so (quantization_note): transformers would
    # otherwise ask for the quantizer's packages
    fields = {k: v for k, v in config.items()
              if not k.startswith("_") and k != "quantization_config"}
    model_type = fields.pop("model_type", None)
    if model_type not in CONFIG_MAPPING:
        raise RooflabError(f"config of an unknown architecture: model_type '{model_type}' is "
                           f"not one transformers {transformers.__version__} knows"
                           + did_you_mean(model_type, CONFIG_MAPPING.keys()), file=file)
    for attr, most in _MAX_COUNTS.items():
        n = fields.get(attr)
        if isinstance(n, int) and not isinstance(n, bool) and n > most:
            raise RooflabError(f"{attr} {n}: more than {most:,}; not building that", file=file)
    try:
        cfg = AutoConfig.for_model(model_type, **fields)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch_dtype,
                                                     attn_implementation="sdpa")
    except Exception as e:  # noqa: BLE001 - any failure of transformers on this config
        # transformers' messages run over several lines; one line, shortened, is the answer
        first = " ".join(str(e).split())[:200]
        raise RooflabError(f"transformers {transformers.__version__} cannot build a causal LM "
                           f"from this config ({model_type}): {type(e).__name__}: {first}",
                           file=file) from None
    return model.eval()


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What one model config describes, counted on the model transformers builds from it.

    params: every parameter element (a tied lm_head counted once). weight_bytes: params as the
    checkpoint stores them: at `dtype`, the config's dtype, except the layers an FP8
    quantization_config stores in fp8 (stored_dtypes.stored_narrow). active_params:
    parameters one token uses; for a MoE, the routed experts count `top_k / experts` of theirs
    (shared experts, attention, router, embeddings count whole). kv_bytes_per_token: bytes
    one token adds to transformers' KV cache over all layers at `dtype` (for a sliding-window
    layer, until the window is full).
    """
    name: str
    repo: str                 # `_name_or_path` of the config; "" when it has none
    architecture: str         # the transformers class built, e.g. LlamaForCausalLM
    model_type: str
    dtype: str                # rooflab dtype name of the weights and the cache
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    experts: int              # routed experts per MoE layer; 0 for a dense model
    params: int
    weight_bytes: int
    active_params: int
    kv_bytes_per_token: int
    quantization_note: str = ""    # what its quantization_config says rooflab does not model


def quantization_note(name: str, config: dict, weight_dtype: str | None = None) -> str | None:
    """One note on how the model's weights are priced where that is not the config's dtype
    throughout, or None. `weight_dtype`: a --set weight_dtype (None: as the checkpoint stores
    them). A `quantization_config` rooflab prices (FP8: stored_dtypes.checkpoint_weight_dtype)
    is priced as stored; another (AWQ, GPTQ, ...) is named and priced at the config's dtype."""
    q = config.get("quantization_config")
    stored = weight_dtype or checkpoint_weight_dtype(config)
    dtype = config.get("dtype") or config.get("torch_dtype") or "bfloat16"
    model_dtype = lookup(str(dtype))
    narrow = stored and model_dtype and lookup(stored).bits < model_dtype.bits
    how = "activations quantized to it before each GEMM"
    if not isinstance(q, dict):
        return (f"{name}: the decoder layers' weights priced as {stored} (--set weight_dtype), "
                f"{how}") if narrow else None
    method = str(q.get("quant_method") or "unnamed")
    detail = [str(q["fmt"])] if q.get("fmt") else []
    block = q.get("weight_block_size")
    if isinstance(block, list) and block:
        detail.append("blocks of " + "x".join(map(str, block)))
    what = " ".join([method, *detail[:1]]) + (f", {detail[1]}" if len(detail) > 1 else "")
    if weight_dtype is None and narrow:
        n = len(checkpoint_skipped(config))
        kept = f" (but the {n} modules it keeps unconverted)" if n else ""
        return (f"{name}: priced as its quantization_config stores it ({what}): the decoder "
                f"layers' weights in {stored}{kept}, {how}; --set "
                f"weight_dtype={model_dtype.name} prices it unquantized")
    if narrow:
        return f"{name}: the decoder layers' weights priced as {stored} (--set weight_dtype), {how}"
    return (f"{name}: its quantization_config stores the weights as {what}; rooflab traces "
            f"and prices the model in {stored or dtype}, not as those weights")


def _config_dtype(config: dict, file: str) -> str:
    """The rooflab dtype name of a config's `dtype` (`torch_dtype` in older configs); bf16
    when it names none."""
    given = config.get("dtype") or config.get("torch_dtype") or "bfloat16"
    d = lookup(str(given)) if isinstance(given, str) else None
    if d is None or not d.is_float or d.block_size:
        raise RooflabError(f"dtype '{given}' is not a weight dtype rooflab knows (bfloat16, "
                           "float16, float32)", file=file)
    return d.name


def routed_expert_params(model) -> int:
    """Parameter elements of the routed experts: everything under a submodule named `experts`
    (transformers' fused expert tensors, or a ModuleList of expert MLPs). A `shared_experts`
    module is not routed and is not counted."""
    return sum(p.numel() for n, p in model.named_parameters() if "experts" in n.split("."))


def kv_bytes_per_token(cfg, nbytes: int) -> int:
    """Bytes one token adds to transformers' KV cache, over all layers, at `nbytes` bytes per
    element. Standard attention caches a key and a value of `head_dim` per KV head; MLA
    (DeepSeek-V3, a `kv_lora_rank`) caches, as transformers 5 does, the compressed latent and
    the shared rotary key: kv_lora_rank + qk_rope_head_dim per layer."""
    layers = cfg.num_hidden_layers
    if getattr(cfg, "kv_lora_rank", None):
        return layers * (cfg.kv_lora_rank + cfg.qk_rope_head_dim) * nbytes
    heads = cfg.num_attention_heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return layers * 2 * kv_heads * head_dim * nbytes


def describe(name: str, config: dict, model, file: str = "") -> ModelInfo:
    """The ModelInfo of a config and the meta model built from it."""
    cfg = model.config
    dtype = _config_dtype(config, file)
    nbytes = DTYPES[dtype].bits // 8
    params = sum(p.numel() for p in model.parameters())
    stored = DTYPES[checkpoint_weight_dtype(config) or dtype]
    skipped = checkpoint_skipped(config)
    weight_bytes = sum((stored if stored_narrow(n, p.dim(), skipped) else DTYPES[dtype])
                       .nbytes(p.numel()) for n, p in model.named_parameters())
    routed = routed_expert_params(model)
    n_experts = next((getattr(cfg, a) for a in _EXPERT_COUNTS if getattr(cfg, a, None)), 0)
    top_k = getattr(cfg, _TOP_K, None) or 0
    if routed and n_experts and top_k:
        # each routed expert holds routed / n_experts of the elements; a token runs top_k
        active = params - routed + routed * top_k // n_experts
    else:
        # no routed experts (or routing the config does not state): every parameter counts
        active, n_experts = params, (n_experts if routed else 0)
    heads = cfg.num_attention_heads
    return ModelInfo(
        name=name, repo=str(config.get("_name_or_path", "")), architecture=type(model).__name__,
        model_type=config["model_type"], dtype=dtype, layers=cfg.num_hidden_layers,
        hidden=cfg.hidden_size, heads=heads,
        kv_heads=getattr(cfg, "num_key_value_heads", None) or heads, experts=n_experts,
        params=params, weight_bytes=weight_bytes, active_params=active,
        kv_bytes_per_token=kv_bytes_per_token(cfg, nbytes),
        quantization_note=quantization_note(name, config) or "")


def model_info(name_or_path: str) -> ModelInfo:
    """The ModelInfo of one model config (bundled name, config.json or folder)."""
    name, config, path = resolve_config(name_or_path)
    model = meta_model(config, source=path)
    return describe(name, config, model, str(path))


def list_models() -> list[ModelInfo]:
    """ModelInfo of every bundled model, by name."""
    return [model_info(n) for n in bundled_names()]


def first_layers(config: dict, layers: int, file: str = "") -> dict:
    """The config of the model cut to its first `layers` decoder layers (0: all of them), with
    every per-layer list (layer_types, ...) cut alike: one layer's cost, or a few layers', with
    the embedding and lm_head around them. RooflabError in one line when the model has fewer."""
    if layers == 0:
        return config
    n = config.get("num_hidden_layers")
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 0:
        raise RooflabError(f"--set layers={layers}: a number of decoder layers", file=file or None)
    if not isinstance(n, int) or layers > n:
        raise RooflabError(f"--set layers={layers}: the model has {n} decoder layers",
                           file=file or None)
    out = {k: (v[:layers] if isinstance(v, list) and len(v) == n and n != layers else v)
           for k, v in config.items()}
    out["num_hidden_layers"] = layers
    return out


def shard_config(config: dict, tp: int, file: str = "") -> dict:
    """The config of what one of `tp` GPUs holds under Megatron-style tensor parallelism:
    attention heads, KV heads (replicated when there are fewer than `tp`: each GPU keeps one),
    the MLP's (and every expert's) intermediate size, and the vocabulary (a vocab-parallel
    embedding and lm_head) divided by `tp`; hidden size and layers unchanged. `head_dim` is
    written out so that it stays hidden / heads of the whole model. RooflabError in one line
    when a degree does not divide the model."""
    if not isinstance(tp, int) or tp < 1:
        raise RooflabError(f"--tp: a positive number of GPUs, got {tp}", file=file or None)
    if tp == 1:
        return config
    out = dict(config)
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads") or heads
    if not config.get("kv_lora_rank"):
        out.setdefault("head_dim", config["hidden_size"] // heads)

    def divide(key: str, what: str) -> None:
        n = config.get(key)
        if n is None:
            return
        if n % tp:
            raise RooflabError(f"--tp {tp}: {n} {what} do not divide by {tp}", file=file or None)
        out[key] = n // tp
    divide("num_attention_heads", "attention heads")
    if kv % tp == 0:
        out["num_key_value_heads"] = kv // tp
    elif tp % kv == 0:
        out["num_key_value_heads"] = 1          # each KV head replicated on tp / kv GPUs
    else:
        raise RooflabError(f"--tp {tp}: {kv} KV heads neither divide by {tp} nor divide it",
                           file=file or None)
    divide("intermediate_size", "MLP columns (intermediate_size)")
    divide("moe_intermediate_size", "expert MLP columns (moe_intermediate_size)")
    divide("vocab_size", "vocabulary entries (vocab_size)")
    for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
        out.pop(key, None)          # ids of the whole vocabulary, outside one GPU's part
    return out
