"""Multi-head latent attention (DeepSeek MLA) over the compressed latent cache, with the key
and value up-projections absorbed into the query and output, as vLLM and SGLang run decode.

Every head scores against the same cache: keys are [latent | rope] rows (L + R wide), values
are the latent rows (L wide). The cache is shared by all heads, so it is read from HBM once.
"""

from __future__ import annotations

import math

from rooflab.ops.attention import attention_pairs
from rooflab.ops.base import (Attr, OpCost, OpKind, Role, ShapeError, TritonHook,
                              read_write_once, register)
from rooflab.ops.gemm import gemm_family

# query rows (heads x queries) one program holds: each such block streams the cache again
# from L2 (FlashMLA keeps 64 query rows per program)
BLOCK_M = 64


def _infer(op, ins):
    ql, qr, lc, rc = ins
    if len(ql.shape) != 4 or len(qr.shape) != 4:
        raise ShapeError(f"mla_attention queries must be [B, H, Sq, L] and [B, H, Sq, R], got "
                         f"{list(ql.shape)} and {list(qr.shape)}")
    if len(lc.shape) != 3 or len(rc.shape) != 3:
        raise ShapeError(f"mla_attention caches must be [B, Sk, L] and [B, Sk, R], got "
                         f"{list(lc.shape)} and {list(rc.shape)}")
    b, h, sq, lat = ql.shape
    if qr.shape[:3] != (b, h, sq):
        raise ShapeError(f"q_latent {list(ql.shape)} and q_rope {list(qr.shape)} must share "
                         "[B, H, Sq]")
    if lc.shape[0] != b or rc.shape[0] != b or lc.shape[1] != rc.shape[1]:
        raise ShapeError(f"latent_cache {list(lc.shape)} and rope_cache {list(rc.shape)} must "
                         f"share [B, Sk] with B = {b}")
    if lc.shape[2] != lat:
        raise ShapeError(f"q_latent width {lat} differs from latent_cache width {lc.shape[2]}")
    if rc.shape[2] != qr.shape[3]:
        raise ShapeError(f"q_rope width {qr.shape[3]} differs from rope_cache width "
                         f"{rc.shape[2]}")
    if op.attrs.get("causal", True) and sq > lc.shape[1]:
        raise ShapeError(f"causal attention with more queries ({sq}) than keys ({lc.shape[1]})")
    gemm_family(ql.dtype, lc.dtype, op)
    return [((b, h, sq, lat), ql.dtype)]


def _cost(op, ins, outs):
    ql, qr, lc, rc = ins
    b, h, sq, lat = ql.shape
    sk, rope = lc.shape[1], rc.shape[2]
    pairs = attention_pairs(sq, sk, op.attrs.get("causal", True))
    fam = gemm_family(ql.dtype, lc.dtype, op)
    flops = 2 * b * h * pairs * (lat + rope) + 2 * b * h * pairs * lat
    reads, writes = read_write_once(ins, outs)
    passes = -(-(h * sq) // BLOCK_M)
    reread = (lc.nbytes + rc.nbytes) * (passes - 1) * pairs // (sq * sk)
    return OpCost(tensor_flops=flops if fam else 0, tensor_dtype=fam,
                  vector_flops=5 * b * h * pairs + (0 if fam else flops),
                  reads=reads, writes=writes, reread_bytes=reread, sfu_ops=b * h * pairs)


def _reference(op, xs, c):
    ql, qr, lc, rc = xs
    scale = op.attrs.get("scale", 1 / math.sqrt(ql.shape[-1] + qr.shape[-1]))
    s = (ql @ lc.unsqueeze(1).transpose(-1, -2) + qr @ rc.unsqueeze(1).transpose(-1, -2)) * scale
    if op.attrs.get("causal", True):
        sq, sk = s.shape[-2], s.shape[-1]
        keep = c.torch.ones(sq, sk, dtype=c.torch.bool, device=s.device).tril(sk - sq)
        s = s.masked_fill(~keep, float("-inf"))
    return c.torch.softmax(s, -1) @ lc.unsqueeze(1)


register(OpKind(
    "mla_attention", Role.ATTENTION, "attention", (4, 4),
    "DeepSeek MLA, weight-absorbed: q_latent [B, H, Sq, L], q_rope [B, H, Sq, R], "
    "latent_cache [B, Sk, L], rope_cache [B, Sk, R] -> [B, H, Sq, L]; scores "
    "q_latent·latentᵀ + q_rope·ropeᵀ, values the latent rows; `causal` default true, `scale` "
    "default 1/sqrt(L+R) (DeepSeek-V3 passes 1/sqrt(192) times its YaRN factor). Tensor FLOPs "
    "2*B*H*pairs*(L+R) + 2*B*H*pairs*L, vector 5 per score. The cache is read from HBM once "
    "for all heads; each block of 64 query rows streams it again through L2 (reread bytes).",
    _infer, _cost,
    {"causal": Attr("bool", "mask keys after each (end-aligned) query; default true"),
     "scale": Attr("float", "score scale (default 1/sqrt(L+R))")},
    _reference, TritonHook(unsupported="no Triton template for mla_attention: its PyTorch "
                                       "reference is checked, the kernel is not timed")))
