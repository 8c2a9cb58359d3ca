"""The serving memory model (rooflab/memory.py): which tensors are weights, cache, inputs and
activations, and the bytes of each, against figures worked out by hand from the workloads and
from the bundled models' config.json."""

import pytest

from rooflab import api, grid
from rooflab.memory import (WORKSPACE_BYTES, StepMemory, TensorRole, activation_peak_bytes,
                            activation_timeline,
                            kv_bytes_per_token, probe_graphs, step_memory, storage_roots,
                            tensor_roles)

W, KV, IN, ACT = (TensorRole.WEIGHT, TensorRole.KV_CACHE, TensorRole.INPUT,
                  TensorRole.ACTIVATION)

# batch rows of D = 8 fp32 values: every [batch, 8] tensor below is 2 * 8 * 4 = 64 bytes
TINY = """
    name: tiny
    params: {batch: 2, D: 8, F: 32}
    tensors:
      x: {shape: [batch, D], dtype: fp32}
      w: {shape: [D, D], dtype: fp32}
      w_up: {shape: [D, F], dtype: fp32}
      w_down: {shape: [F, D], dtype: fp32}
    ops:
      - {name: mm, kind: matmul, inputs: [x, w], outputs: [h]}
      - {name: flat, kind: reshape, shape: [batch * D], inputs: [h], outputs: [hf]}
      - {name: up, kind: matmul, inputs: [x, w_up], outputs: [g]}
      - {name: act, kind: silu, inputs: [g], outputs: [a]}
      - {name: down, kind: matmul, inputs: [a, w_down], outputs: [d]}
      - {name: back, kind: reshape, shape: [batch, D], inputs: [hf], outputs: [hb]}
      - {name: out, kind: add, inputs: [d, hb], outputs: [y]}
    outputs: [y]
"""


def _load(path, sets=None):
    g = api.load_workload(path, sets)
    return g, tensor_roles(g, probe_graphs(g, lambda s: api.load_workload(path, s), sets))


def test_tiny_graph_activation_peak_by_hand(write_yaml):
    g, roles = _load(write_yaml(TINY))
    # x [2,8] changes with batch: input. The weights do not: w 8*8*4 = 256, w_up and w_down
    # 8*32*4 = 1,024 each. Op outputs are activations; the views hf, hb name h's bytes.
    assert {t: roles[t] for t in ("x", "w", "w_up", "w_down", "h", "hf", "hb", "g", "y")} == \
        {"x": IN, "w": W, "w_up": W, "w_down": W, "h": ACT, "hf": ACT, "hb": ACT, "g": ACT,
         "y": ACT}
    assert storage_roots(g) == {"hf": "h", "hb": "h"}
    # Live ranges (op index made .. last read): h [2,8] 64 B 0..6 (its view hf is read by op 5,
    # hf's view hb by op 6: the late read); g [2,32] 2*32*4 = 256 B 2..3; a 256 B 3..4;
    # d 64 B 4..6; y 64 B 6..6 (a graph output: to the last op).
    #   op0 h = 64; op1 64; op2 h+g = 320; op3 h+g+a = 576; op4 h+a+d = 384; op5 h+d = 128;
    #   op6 h+d+y = 192
    assert activation_timeline(g) == [64, 64, 320, 576, 384, 128, 192]
    m = step_memory(g, roles)
    assert m == StepMemory(weights_bytes=256 + 1024 + 1024, kv_cache_bytes=0, input_bytes=64,
                           activation_peak_bytes=576, workspace_bytes=WORKSPACE_BYTES)
    # 2,304 + 64 + 576 + 512 MiB
    assert m.total_bytes == 2944 + 536_870_912
    assert step_memory(g, roles, workspace_bytes=0).total_bytes == 2944



def test_the_activation_peak_over_a_sweeps_grid_is_each_points_own(write_yaml):
    # TINY at batch 1, 2, 7 x F 1, 32 at once. Per batch row, h, d, y 32 B and g, a 4F B:
    # F = 1: op3 h+g+a = 40, op6 h+d+y = 96 -> 96 b at op6; F = 32: op3 32+128+128 = 288 b
    part = grid.grid({"batch": [1, 2, 7], "F": [1, 32]})
    g = api.load_workload(str(write_yaml(TINY)), part.params)
    assert activation_peak_bytes(g).tolist() == [[96, 288], [192, 576], [672, 2016]]
    assert activation_peak_bytes(api.load_workload(str(write_yaml(TINY)))) == 576

SCATTER = """
    name: scatters
    params: {batch: 2, context: 4}
    tensors:
      cache: {shape: [batch, context, 8], dtype: fp32}
      pos: {shape: [1], dtype: int64}
      x: {shape: [batch, 1, 8], dtype: fp32}
    ops:
      - {name: k, kind: silu, inputs: [x], outputs: [k]}
      - {name: write, kind: index_copy, axis: 1, inputs: [cache, pos, k], outputs: [cache2]}
      - {name: zeros, kind: fill, shape: [batch, 1, 8], dtype: fp32, inputs: [], outputs: [z]}
      - {name: put, kind: index_copy, axis: 1, inputs: [z, pos, k], outputs: [z2]}
      - {name: out, kind: add, inputs: [z2, k], outputs: [o]}
    outputs: [o, cache2]
"""


def test_scatter_output_is_its_targets_storage(write_yaml):
    g, roles = _load(write_yaml(SCATTER))
    # cache [2,4,8] changes with context: KV cache; pos is int64: input; cache2, the cache
    # index_copy updates in place, is the cache; z2 is z's storage (an activation)
    assert (roles["cache"], roles["pos"], roles["x"], roles["cache2"], roles["z2"]) == \
        (KV, IN, IN, KV, ACT)
    # k [2,1,8] fp32 = 64 B, 0..4; z 64 B, 2..4 (z2 read by op 4); o 64 B at 4; cache2 is
    # an output but names the cache's bytes, so it adds nothing
    assert activation_timeline(g) == [64, 64, 128, 128, 192]
    m = step_memory(g, roles, workspace_bytes=0)
    # cache 2*4*8*4 = 256; inputs pos 8 + x 2*8*4 = 64
    assert (m.weights_bytes, m.kv_cache_bytes, m.input_bytes, m.activation_peak_bytes) == \
        (0, 256, 72, 192)
    assert kv_bytes_per_token(g, roles, batch=2, context=4) == 32      # 256 / (2*4): 8 fp32
    with pytest.raises(ValueError, match="not a whole number of bytes per token"):
        kv_bytes_per_token(g, roles, batch=3, context=4)              # 256 / 12
    with pytest.raises(ValueError, match="graph input 'pos' needs a role"):
        step_memory(g, {t: r for t, r in roles.items() if t != "pos"})


def test_without_probes_every_float_input_is_a_weight(write_yaml):
    g = api.load_workload(write_yaml(SCATTER))
    roles = tensor_roles(g, {})
    assert (roles["cache"], roles["pos"], roles["x"]) == (W, IN, W)


def test_llama3_8b_decode_yaml_by_hand():
    path = "workloads/llama3_8b_decode.yaml"
    sets = {"batch": 2, "context": 64}
    g, roles = _load(path, sets)
    # the decode step takes `seq` new tokens (1 by default), so seq is probed too
    assert sorted(probe_graphs(g, lambda s: g, sets)) == ["batch", "context", "seq"]
    m = step_memory(g, roles)
    # per layer: wq, wo 4096*4096 = 16,777,216 each; wk, wv 4096*1024 = 4,194,304 each;
    # w_gate, w_up, w_down 4096*14336 = 58,720,256 each; two norms 4096:
    #   33,554,432 + 8,388,608 + 176,160,768 + 8,192 = 218,112,000 elements; x 32 layers
    #   = 6,979,584,000; embed and lm_head 128256*4096 = 525,336,576 each; final norm 4096
    #   -> 8,030,261,248 elements x 2 B = 16,060,522,496
    assert m.weights_bytes == 16_060_522_496
    # k_cache, v_cache [2, 8, 64, 128] bf16 = 262,144 B each, x 2 x 32 layers
    assert m.kv_cache_bytes == 16_777_216
    assert kv_bytes_per_token(g, roles, 2, 64) == 131_072      # 32 * 2 * 8 * 128 * 2
    # ids [2, 1] int64 = 16, and cos, sin [seq = 1, 128] bf16 = 256 each (the rotary rows of
    # the new tokens' positions: they change with seq)
    assert m.input_bytes == 16 + 512
    made = {t for op in g.ops for t in op.outputs}
    assert sorted(t for t in g.tensors if t not in made and roles[t] is IN) == ["cos", "ids",
                                                                                 "sin"]


# bundled models at batch 2, context 64. Counted from each config.json (elements):
#  llama3-8b: as the YAML above, 8,030,261,248; kv 32 layers * 2 * 8 heads * 128 * 2 B
#  gemma3-1b (tied): embed 262144*1152 = 301,989,888 once; per layer q 1024*1152 and o
#    1152*1024 = 1,179,648 each, k and v 256*1152 = 294,912 each, q_norm, k_norm 256 each,
#    four norms 4*1152, gate/up/down 3*6912*1152 = 23,887,872 -> 26,842,112; x 26 layers =
#    697,894,912; final norm 1152 -> 999,885,952; kv 26 * 2 * 1 head * 256 * 2 B (context 64
#    is inside the 512-token sliding window, so every layer caches all of it)
#  mixtral-8x7b: per layer attention 41,943,040 (as llama), router 8*4096 = 32,768, experts
#    gate_up 8*28672*4096 = 939,524,096 and down 8*4096*14336 = 469,762,048, norms 8,192
#    -> 1,451,270,144; x 32 = 46,440,644,608; embed, lm_head 32000*4096 = 131,072,000 each;
#    final norm 4096 -> 46,702,792,704; kv as llama
#  qwen2.5-7b: per layer q, o 3584*3584 = 12,845,056 each, k, v 512*3584 = 1,835,008 each,
#    q/k/v biases 3584 + 512 + 512, mlp 3*18944*3584 = 203,685,888, norms 7,168
#    -> 233,057,792; x 28 = 6,525,618,176; embed, lm_head 152064*3584 = 544,997,376 each;
#    final norm 3584 -> 7,615,616,512; kv 28 * 2 * 4 * 128 * 2 B
# The traced graph also holds the model's buffers, which live on the GPU as the weights do:
# rotary inv_freq (head_dim / 2 fp32: 64 * 4 = 256 B; Gemma-3 has a local and a global one,
# 2 * 128 * 4 = 1,024 B) and Gemma's embed_scale (a bf16 scalar, 2 B). model_info counts
# parameters only. Inputs: input_ids [2, 1] int64 = 16 B and one int64 scalar per layer (the
# cache's position counter, 8 B). Mixtral's expert routing allocates a [4] int64 per layer
# (torch.empty): a buffer of the step, an activation, not an input.
ZOO = {
    # name: (parameters, buffer bytes, kv bytes per token, input bytes)
    "llama3-8b": (8_030_261_248, 256, 32 * 2 * 8 * 128 * 2, 16 + 32 * 8),
    "gemma3-1b": (999_885_952, 1024 + 2, 26 * 2 * 1 * 256 * 2, 16 + 26 * 8),
    "mixtral-8x7b": (46_702_792_704, 256, 32 * 2 * 8 * 128 * 2, 16 + 32 * 8),
    "qwen2.5-7b": (7_615_616_512, 256, 28 * 2 * 4 * 128 * 2, 16 + 28 * 8),
}


@pytest.mark.parametrize("model", sorted(ZOO))
def test_zoo_decode_memory_by_hand(model):
    pytest.importorskip("transformers")
    from rooflab.trace import zoo
    params, buffers, kv_token, inputs = ZOO[model]
    source, sets = f"hf:{model}", {"batch": 2, "context": 64}
    g = api.load_workload(source, sets, "decode")
    probes = probe_graphs(g, lambda s: api.load_workload(source, s, "decode"), sets)
    assert sorted(probes) == ["batch", "context"]
    roles = tensor_roles(g, probes)
    m = step_memory(g, roles)
    assert m.weights_bytes == params * 2 + buffers                  # bf16
    assert m.kv_cache_bytes == kv_token * 2 * 64
    assert kv_bytes_per_token(g, roles, 2, 64) == kv_token
    assert m.input_bytes == inputs
    info = zoo.model_info(model)
    assert info.weight_bytes == params * 2                         # parameters, no buffers
    assert info.kv_bytes_per_token == kv_token
    made = {t for op in g.ops for t in op.outputs}
    cache = [t for t in g.tensors if t not in made and roles[t] is KV]
    assert cache and all(t.startswith("kv_cache.") for t in cache)
    # the index_copy that writes the new token updates the cache in place
    writes = [op for op in g.ops if op.kind == "index_copy"]
    assert writes and all(roles[op.outputs[0]] is KV for op in writes)


def test_llama3_8b_traced_activation_peak_by_hand():
    pytest.importorskip("transformers")
    g = api.load_workload("hf:llama3-8b", {"batch": 2, "context": 64}, "decode")
    probes = probe_graphs(g, lambda s: api.load_workload("hf:llama3-8b", s, "decode"))
    m = step_memory(g, tensor_roles(g, probes))
    # The peak is layer 30's SDPA call. transformers' repeat_kv copies K and V to all 32
    # query heads: [2, 8, 4, 64, 128] bf16 = 1,048,576 B each; the residual stream, the
    # rotated query and SDPA's output [2, 32, 1, 128] (or [2, 1, 4096]) bf16 = 16,384 B
    # each; cos, sin [1, 1, 128] bf16 = 256 B each; the mask [1, 1, 1, 64] bool = 64; the
    # position counters layers 0-30 wrote (graph outputs, live to the end) 31 * 8 = 248. (The
    # mask builder's two aranges, int64 [2] and [1], are read by nothing but views nothing
    # reads: live during their own op only.)
    #   2,097,152 + 49,152 + 512 + 64 + 248 = 2,147,128
    assert m.activation_peak_bytes == 2_147_128


def test_deepseek_keys_built_in_a_buffer_are_an_activation_not_a_cache():
    pytest.importorskip("transformers")
    # transformers' DeepSeek-V3 attention allocates each layer's keys (new_empty [2, 128, 64,
    # 192] bf16 = 6,291,456 B) and copies the un-rotated and rotated parts into slices of
    # them. That buffer lives from its layer's allocation to its SDPA: the cache is the latent
    # alone, (512 + 64) * 2 B per token and layer, and the peak does not grow with the layers
    # (2 more layers add their two 8 B position counters, graph outputs live to the end).
    memories = {}
    for layers in (2, 4):
        src, sets = "hf:deepseek-v3", {"batch": 2, "context": 64, "layers": layers}
        g = api.load_workload(src, sets, "decode")
        probes = probe_graphs(g, lambda s: api.load_workload(src, s, "decode"), sets)
        memories[layers] = step_memory(g, tensor_roles(g, probes))
        assert memories[layers].kv_cache_bytes == layers * 2 * 64 * (512 + 64) * 2
        buffers = [op for op in g.ops if op.kind == "fill" and op.attrs.get("fn") == "empty"
                   and g.tensors[op.outputs[0]].shape == (2, 128, 64, 192)]
        assert len(buffers) == layers and all(op.launches == 0 for op in buffers)
        assert sum(op.kind == "copy_into" for op in g.ops) == 2 * layers
    assert memories[4].activation_peak_bytes - memories[2].activation_peak_bytes == 16
    assert memories[2].activation_peak_bytes > 6_291_456
