"""The fused attention op kind: softmax(q kᵀ * scale [+ causal mask]) v, GQA and decode."""

from __future__ import annotations

import math

from rooflab.ops.base import (Attr, OpCost, OpKind, Role, ShapeError, TritonHook,
                              broadcast, read_write_once, register)
from rooflab.ops.gemm import gemm_family


def attention_pairs(sq: int, sk: int, causal: bool) -> int:
    """Query-key pairs scored. Causal queries are the last `sq` of `sk` positions, so query i
    sees sk - sq + i + 1 keys."""
    if not causal:
        return sq * sk
    return sq * (sk - sq) + sq * (sq + 1) // 2


def _layout_problem(q, k, v, causal: bool) -> str | None:
    """Why q, k, v [B, H, S, D] do not fit together; None when they do."""
    b, hq, sq, d = q.shape
    if k.shape[0] != b or v.shape[0] != b:
        return f"batch differs: q {b}, k {k.shape[0]}, v {v.shape[0]}"
    if k.shape[1] != v.shape[1] or k.shape[2] != v.shape[2]:
        return f"k {list(k.shape)} and v {list(v.shape)} must share heads and length"
    if hq % k.shape[1]:
        return f"query heads {hq} not a multiple of key/value heads {k.shape[1]}"
    if k.shape[3] != d:
        return f"q head dim {d} differs from k head dim {k.shape[3]}"
    if causal and sq > k.shape[2]:
        return f"causal attention with more queries ({sq}) than keys ({k.shape[2]})"
    return None


def attention_family(q, k, v, op) -> str | None:
    """The tensor-core family attention runs at: q's and k's (gemm_family), except that an fp8
    K/V cache under 16-bit queries is dequantized in registers as it is loaded (an fp8 KV cache,
    as serving engines keep it): it runs at q's family and reads K/V at one byte per element."""
    if k.dtype.compute == "fp8" and q.dtype.compute in ("bf16", "fp16"):
        if v.dtype.compute != "fp8":
            raise ShapeError(f"k is {k.dtype.name} but v is {v.dtype.name}: an fp8 KV cache "
                             "keeps both in fp8")
        return q.dtype.compute
    return gemm_family(q.dtype, k.dtype, op)


def boolean_mask(op, tensors) -> bool:
    """Whether attention op `op` (tensors: the graph's, by name) takes a boolean mask. SDPA
    turns one into an additive float mask before its kernel: eagerly two fills and a where;
    under torch.compile, one Triton kernel that Inductor generates for each call."""
    return len(op.inputs) > 3 and tensors[op.inputs[3]].dtype.name == "bool"


def _bhsd(t):
    """A [B, S, H, D] tensor's shape read as [B, H, S, D]."""
    return type(t)(t.name, (t.shape[0], t.shape[2], t.shape[1], t.shape[3]), t.dtype)


def _infer(op, ins):
    q, k, v = ins[:3]
    for t in ins[:3]:
        if len(t.shape) != 4:
            raise ShapeError(f"attention wants 4-D [B, H, S, D] tensors, {t.name} is "
                             f"{list(t.shape)}")
    causal = op.attrs.get("causal", True)
    problem = _layout_problem(q, k, v, causal)
    if problem:
        # the shapes a user wrote [B, S, H, D] (the layout of nn.Linear outputs) fit when
        # their heads and sequence are swapped: say so
        if _layout_problem(*map(_bhsd, ins[:3]), causal) is None:
            problem += ("; attention takes [B, H, S, D]; these look like [B, S, H, D]: "
                        "permute(0, 2, 1, 3) first")
        raise ShapeError(problem)
    attention_family(q, k, v, op)
    if len(ins) == 4:
        scores = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
        if broadcast(ins[3].shape, scores) != scores:
            raise ShapeError(f"mask {list(ins[3].shape)} does not broadcast to the scores "
                             f"{list(scores)} [B, Hq, Sq, Sk]")
    return [((q.shape[0], q.shape[1], q.shape[2], v.shape[3]), q.dtype)]


def _cost(op, ins, outs):
    q, k, v = ins[:3]
    b, hq, sq, d = q.shape
    hkv, sk, dv = k.shape[1], k.shape[2], v.shape[3]
    pairs = attention_pairs(sq, sk, op.attrs.get("causal", True))
    fam = attention_family(q, k, v, op)
    q_blocks = -(-sq // op.attrs.get("block_m", 128))
    passes = (hq // hkv) * q_blocks           # times each K/V byte reaches an SM
    # causal block skipping lets later blocks skip keys: reread traffic is scaled by the
    # fraction of pairs scored
    reread = (k.nbytes + v.nbytes) * (passes - 1) * pairs // (sq * sk)
    reads, writes = read_write_once(ins, outs)
    flops = 2 * b * hq * pairs * (d + dv)
    masked = len(ins) == 4                    # one more op per score: add the mask
    return OpCost(tensor_flops=flops if fam else 0, tensor_dtype=fam,
                  vector_flops=(5 + masked) * b * hq * pairs + (0 if fam else flops),
                  reads=reads, writes=writes, reread_bytes=reread, sfu_ops=b * hq * pairs)


def _reference(op, xs, c):
    q, k, v = xs[:3]
    hq, hkv = q.shape[1], k.shape[1]
    if hq != hkv:
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
    s = (q @ k.transpose(-1, -2)) * op.attrs.get("scale", 1 / math.sqrt(q.shape[-1]))
    if op.attrs.get("causal", True):
        sq, sk = s.shape[-2], s.shape[-1]
        keep = c.torch.ones(sq, sk, dtype=c.torch.bool, device=s.device).tril(sk - sq)
        s = s.masked_fill(~keep, float("-inf"))
    if len(xs) == 4:                          # a boolean mask keeps True; a float one adds
        mask = c.raw[3]
        s = s.masked_fill(~mask.bool(), float("-inf")) if mask.dtype == c.torch.bool else s + xs[3]
    return c.torch.softmax(s, -1) @ v


register(OpKind(
    "attention", Role.ATTENTION, "attention", (3, 4),
    "Fused attention softmax(q kᵀ * scale [+ causal mask] [+ mask]) v with q [B, Hq, Sq, D], "
    "k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv] and an optional fourth input, a mask that "
    "broadcasts to [B, Hq, Sq, Sk] (boolean: keep where true; float: added to the scores, "
    "read once); GQA when Hkv divides Hq; `causal` default true "
    "(block skipping assumed). Tensor FLOPs 2*B*Hq*pairs*(D+Dv); vector 5 per score. "
    "K/V are read from HBM once; each query block of each query head streams them again "
    "through L2 (counted as reread bytes, `block_m` default 128).",
    _infer, _cost,
    {"causal": Attr("bool", "mask keys after each (end-aligned) query; default true"),
     "scale": Attr("float", "score scale (default 1/sqrt(D))"),
     "block_m": Attr("int", "queries per program (default 128)", min=1)},
    _reference, TritonHook(template="attention")))
