"""Trace a Hugging Face causal LM from its config: one prefill or one decode step, as eager
transformers runs it with a static KV cache.

The model is built by transformers on the meta device (no weights, no download) with SDPA
attention, and called exactly as a serving loop calls it:
  decode:  input_ids [batch, 1] at cache position context-1, against a StaticCache of
           `context` tokens (attention spans the whole cache, as with a static cache on GPU)
  prefill: input_ids [batch, seq] at positions 0..seq-1, into a StaticCache of `seq` tokens,
           with logits for the last `logit_tokens` positions only (transformers'
           `logits_to_keep`, as a serving engine asks; 0 or seq and more keep all)
One untraced call first lets the cache allocate its tensors (it does so lazily), so the traced
call is a warm step, the one a timing loop measures.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import replace

from rooflab.errors import RooflabError
from rooflab.graph import Graph
from rooflab.trace import zoo
from rooflab.trace.module import graph_of, tensor_names
from rooflab.trace.record import TraceError, record

PHASES = ("decode", "prefill", "extend")
DEFAULTS = {"batch": 1, "seq": 512, "context": 1024, "logit_tokens": 1, "tp": 1}


def step_inputs(config, phase: str, batch: int, seq: int, context: int, device: str):
    """(kwargs of the forward call, names of its input tensors) for one step. Shared with the
    GPU measurement, so both run the same call."""
    import torch
    from transformers import StaticCache
    if phase not in PHASES:
        raise RooflabError(f"--phase must be one of {', '.join(PHASES)}, got '{phase}'")
    with torch.device(device):
        if phase == "decode":
            cache = StaticCache(config=config, max_cache_len=context)
            ids = torch.zeros(batch, 1, dtype=torch.long)
            pos = torch.tensor([context - 1])
        elif phase == "prefill":
            cache = StaticCache(config=config, max_cache_len=seq)
            ids = torch.zeros(batch, seq, dtype=torch.long)
            pos = torch.arange(seq)
        else:               # extend: seq new tokens after context - seq cached (a prefill chunk)
            if seq > context:
                raise RooflabError(f"--phase extend: seq {seq} new tokens do not fit in a "
                                   f"cache of context {context}")
            cache = StaticCache(config=config, max_cache_len=context)
            ids = torch.zeros(batch, seq, dtype=torch.long)
            pos = torch.arange(context - seq, context)
    kwargs = dict(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True)
    return kwargs, {id(ids): "input_ids", id(pos): "cache_position"}


@contextlib.contextmanager
def _extend_mask(phase: str):
    """Within an extend step, transformers' test "can SDPA's is_causal replace the mask?" asks
    whether the first cache position is 0, which a meta tensor cannot answer. On a GPU the
    answer for an extend step (several new tokens after a non-empty cache, so the queries do not
    start at key 0) is always no: the mask is built. Give that answer while tracing."""
    if phase != "extend":
        yield
        return
    from transformers import masking_utils
    saved = masking_utils._ignore_causal_mask_sdpa
    masking_utils._ignore_causal_mask_sdpa = lambda *args, **kwargs: False
    try:
        yield
    finally:
        masking_utils._ignore_causal_mask_sdpa = saved


def _cache_names(cache) -> dict[int, str]:
    names = {}
    for i, layer in enumerate(getattr(cache, "layers", ())):
        for attr in ("keys", "values"):
            t = getattr(layer, attr, None)
            if t is not None and hasattr(t, "shape"):
                names[id(t)] = f"kv_cache.{i}.{attr}"
    return names


def trace_hf(source: str, phase: str = "decode", batch: int = 1, seq: int = 512,
             context: int = 1024, dtype: str = "bf16", logit_tokens: int = 1,
             tp: int = 1, layers: int = 0) -> Graph:
    """The rooflab Graph of one step of a Hugging Face model. `source`: a bundled model name
    (`rooflab models`) or a path to a config.json; with `tp` > 1, what one of `tp`
    tensor-parallel GPUs runs (zoo.shard_config; rooflab.shard adds the collectives); with
    `layers` > 0, the model cut to its first `layers` decoder layers (zoo.first_layers). `batch`
    sequences; decode: one token against
    `context` cached tokens; prefill: `seq` tokens, the lm_head computing logits for the last
    `logit_tokens` of them (0, or seq and more: all); extend: `seq` new tokens whose cache
    then holds `context` (a chunk of a chunked prefill; logits as prefill's). No GPU, weights
    or network needed."""
    import torch
    for key, v in (("batch", batch), ("seq", seq), ("context", context)):
        if not isinstance(v, int) or v < 1:
            raise RooflabError(f"--set {key}: must be a positive integer, got {v}")
    if not isinstance(logit_tokens, int) or isinstance(logit_tokens, bool) or logit_tokens < 0:
        raise RooflabError(f"--set logit_tokens: must be a whole number of positions (0: all), "
                           f"got {logit_tokens}")
    name, config, path = zoo.resolve_config(source)
    config = zoo.shard_config(zoo.first_layers(config, layers, str(path)), tp, str(path))
    model = zoo.meta_model(config, dtype, source=path)
    kwargs, names = step_inputs(model.config, phase, batch, seq, context, "meta")
    # a decode step is one token: its logits are all there is to keep
    keep = phase != "decode" and 0 < logit_tokens < seq
    if keep:
        if "logits_to_keep" not in inspect.signature(model.forward).parameters:
            raise RooflabError(f"{path}: {type(model).__name__}.forward takes no logits_to_keep, "
                               "so its prefill computes every position's logits: "
                               f"--set logit_tokens={seq} (the prompt length) traces that")
        kwargs["logits_to_keep"] = logit_tokens
    with torch.no_grad():
        try:
            model(**kwargs)
        except Exception as e:  # noqa: BLE001 - transformers raising on this config
            raise RooflabError(f"{path}: transformers cannot run this model on meta tensors: "
                               f"{type(e).__name__}: {str(e).splitlines()[0][:200]}") from None
    arguments = set(names.values())     # input_ids, cache_position: not the static cache
    names.update(tensor_names(model))
    names.update(_cache_names(kwargs["past_key_values"]))
    try:
        with _extend_mask(phase):
            trace = record(lambda: model(**kwargs), names,
                           {id(m): n for n, m in model.named_modules()})
    except TraceError as e:
        raise RooflabError(f"{path}: {e}") from None
    import transformers
    params = {"batch": batch, **({"context": context} if phase == "decode" else
                                 {"seq": seq, "logit_tokens": logit_tokens if keep else seq}),
              **({"context": context} if phase == "extend" else {}),
              **({"tp": tp} if tp > 1 else {}), **({"layers": layers} if layers else {})}
    shown = ", ".join(f"{k} {v}" for k, v in params.items() if k != "logit_tokens")
    if phase != "decode":
        shown += (f", logits of the last {logit_tokens} position{'s' * (logit_tokens > 1)}"
                  if keep else ", logits of every position")
    description = (f"traced from hf:{source} ({phase}: {shown}) with torch {torch.__version__}, "
                   f"transformers {transformers.__version__}")
    graph = graph_of(trace, f"{name}_{phase}", description, params)
    return replace(graph, call_inputs=frozenset(arguments & graph.tensors.keys()))
