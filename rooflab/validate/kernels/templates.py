"""Build rooflab kernels on the hand-written Triton templates: FlashAttention (prefill and
decode, causal, GQA), W4A16 dequant-in-GEMM, the standalone int4 dequantize, the FP8 GEMM, and
two batched GEMMs (bmm_pingpong.py for a 128-wide reduction against a transposed operand, such as
attention's QKᵀ; bmm.py for other batched matmuls it tiles).

Each builder takes a kernel that `route.family` sent to it and returns a `Built` whose `run`
launches the template; a layout the template cannot take raises `Unsupported` with the reason.
The Triton modules are imported only when a kernel runs, so building needs no GPU.
"""

from __future__ import annotations

import math

from rooflab.graph import Graph
from rooflab.schedule import Kernel
from rooflab.validate.common import Unsupported, scales_name
from rooflab.validate.kernels.built import Built, Views, escaping
from rooflab.validate.kernels.configs import bmm_nt_supports, bmm_supports


def _packed(cache: dict, env: dict, name: str):
    """int4 weights packed two per byte, made once per tensor (outside any timing)."""
    from rooflab.validate.kernels import qgemm
    key = (name, env[name].data_ptr())
    if key not in cache:
        cache[key] = qgemm.pack_int4(env[name])
    return cache[key]


def batched_gemm(g: Graph, kernel: Kernel, views: Views) -> Built | None:
    """A batched-GEMM template for a kernel that is one batched matmul whose shapes it tiles:
    bmm_pingpong.py where the reduction is 128 wide and b is transposed, else bmm.py; None
    otherwise (the generated GEMM then runs it)."""
    if len(kernel.ops) != 1:
        return None
    mm = g.ops[kernel.ops[0]]
    if mm.kind != "matmul" or mm.attrs.get("transpose_a") or any(t in views.permuted for t in mm.inputs):
        return None
    a_n, b_n = (views(t) for t in mm.inputs)
    a, b = g.tensors[a_n], g.tensors[b_n]
    if (a.shape, b.shape) != tuple(g.tensors[t].shape for t in mm.inputs):
        return None     # a view that reshapes (rotary's inv_freq [64] as [1, 64, 1]): generated
    trans_b = bool(mm.attrs.get("transpose_b"))
    m, k = a.shape[-2:]
    n = b.shape[-2] if trans_b else b.shape[-1]
    batch = math.prod(a.shape[:-2])
    if len(a.shape) != len(b.shape) or a.shape[:-2] != b.shape[:-2] or a.dtype.name != b.dtype.name:
        return None
    (out,) = escaping(g, kernel, views)
    if trans_b and bmm_nt_supports(batch, m, n, k, a.dtype.name):
        def run_nt(env):
            from rooflab.validate.kernels import bmm_pingpong
            x, w = env[a_n], env[b_n]
            c = bmm_pingpong.launch_bmm_nt(x.reshape(batch, m, k), w.reshape(batch, n, k))
            return {out: c.view(g.tensors[out].shape)}
        return Built(kernel.name, "template", [a_n, b_n], [out], run_nt, "bmm_pingpong.py",
                     {"template": "bmm_pingpong"})
    if not bmm_supports(batch, m, n, k, a.dtype.name):
        return None

    def run(env):
        from rooflab.validate.kernels import bmm
        x, w = env[a_n], env[b_n]
        c = bmm.launch_bmm(x.reshape(batch, m, k), w.reshape(batch, *w.shape[-2:]), trans_b)
        return {out: c.view(g.tensors[out].shape)}
    return Built(kernel.name, "template", [a_n, b_n], [out], run, "bmm.py", {"template": "bmm"})


def attention(g: Graph, kernel: Kernel, views: Views) -> Built:
    """A lone attention op, or a fused QKᵀ → scale/mask → softmax → ·V chain, on attention.py:
    flash decoding for one query token, else FlashAttention-2."""
    ops = [g.ops[i] for i in kernel.ops]
    kinds = [op.kind for op in ops]
    outs = escaping(g, kernel, views)
    if kinds == ["attention"]:
        if len(ops[0].inputs) > 3:
            raise Unsupported("attention with an explicit mask (attention.py takes causal or none)")
        q, k, v = ops[0].inputs
        causal = ops[0].attrs.get("causal", True)
        d = g.tensors[q].shape[-1]
        sm_scale = ops[0].attrs.get("scale", 1 / math.sqrt(d))
    else:
        qk, pv = ops[0], ops[-1]
        if not qk.attrs.get("transpose_b") or set(kinds[1:-1]) - {"scale", "causal_mask", "softmax"}:
            raise Unsupported(f"attention pattern {'→'.join(kinds)}")
        q, k = qk.inputs
        v = pv.inputs[1]
        causal = "causal_mask" in kinds
        sm_scale = math.prod(op.attrs.get("factor", 1.0) for op in ops if op.kind == "scale")
    if any(t in views.permuted for t in (q, k, v)):
        raise Unsupported("attention on permuted views")
    q, k, v = views(q), views(k), views(v)
    sq = g.tensors[q].shape[2]
    (out,) = outs

    def run(env):
        from rooflab.validate.kernels import attention as attention_kernels
        if sq == 1:
            o = attention_kernels.launch_decode(env[q], env[k], env[v], sm_scale)
        else:
            o = attention_kernels.launch_flash(env[q], env[k], env[v], causal, sm_scale)
        return {out: o}
    return Built(kernel.name, "template", [q, k, v], outs, run, "attention.py",
                 {"template": "decode" if sq == 1 else "flash"})


def qmatmul(g: Graph, kernel: Kernel, views: Views) -> Built:
    """A lone quantized matmul on qgemm.py: W4A16 for int4 weights, the FP8 GEMM for e4m3 x e4m3."""
    op = g.ops[kernel.ops[0]]
    outs = escaping(g, kernel, views)
    cache: dict = {}
    x, w = (views(t) for t in op.inputs)
    wt = g.tensors[w].dtype
    (out,) = outs
    if wt.name == "int4":
        group = op.attrs.get("group_size", 128)

        def run(env):
            from rooflab.validate.kernels import qgemm
            y = qgemm.launch_w4a16(env[x], _packed(cache, env, w), env[scales_name(w)], group)
            return {out: y}
        return Built(kernel.name, "template", [x, w, scales_name(w)], outs, run, "qgemm.py",
                     {"template": "w4a16"})
    if wt.name == "fp8_e4m3" and g.tensors[x].dtype.name == "fp8_e4m3":
        def run(env):
            from rooflab.validate.kernels import qgemm
            key = ("bt", env[w].data_ptr())
            if key not in cache:      # the template takes B as [N, K] (K-major)
                cache[key] = env[w].t().contiguous()
            return {out: qgemm.launch_fp8(env[x], cache[key], 1.0, 1.0)}
        return Built(kernel.name, "template", [x, w], outs, run, "qgemm.py",
                     {"template": "fp8"})
    raise Unsupported(f"qmatmul of {g.tensors[x].dtype.name} x {wt.name}")


def dequant_int4(g: Graph, kernel: Kernel, views: Views) -> Built:
    """A lone group-wise int4 dequantize on qgemm.py."""
    op = g.ops[kernel.ops[0]]
    outs = escaping(g, kernel, views)
    cache: dict = {}
    w = views(op.inputs[0])
    group = op.attrs["group_size"]
    (out,) = outs

    def run(env):
        from rooflab.validate.kernels import qgemm
        return {out: qgemm.launch_dequant_int4(_packed(cache, env, w),
                                               env[scales_name(w)], group)}
    return Built(kernel.name, "template", [w, scales_name(w)], outs, run, "qgemm.py",
                 {"template": "dequant_int4"})


def dequant_gemm(g: Graph, kernel: Kernel, views: Views) -> Built:
    """A group-wise int4 dequantize fused into the matmul that reads it, on qgemm.py's W4A16."""
    deq, mm = (g.ops[i] for i in kernel.ops)
    outs = escaping(g, kernel, views)
    cache: dict = {}
    w = views(deq.inputs[0])
    group = deq.attrs["group_size"]
    if mm.inputs[1] != deq.outputs[0] or mm.attrs.get("transpose_a") or mm.attrs.get("transpose_b"):
        raise Unsupported("dequant-in-GEMM with this operand layout")
    x = views(mm.inputs[0])
    if outs != [mm.outputs[0]]:
        raise Unsupported("dequant-in-GEMM whose dequantized weights escape")
    (out,) = outs

    def run(env):
        from rooflab.validate.kernels import qgemm
        return {out: qgemm.launch_w4a16(env[x], _packed(cache, env, w), env[scales_name(w)], group)}
    return Built(kernel.name, "template", [x, w, scales_name(w)], outs, run, "qgemm.py",
                 {"template": "w4a16"})
