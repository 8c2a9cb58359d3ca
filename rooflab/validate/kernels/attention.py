"""Attention forward kernels in Triton: FlashAttention-2 prefill and split-K flash decoding.

Layouts (PyTorch's SDPA convention):
    q: [B, Hq, Sq, D]    k, v: [B, Hkv, Sk, D]    o: [B, Hq, Sq, D]
all bf16 (fp16 also works) with a contiguous last dimension; D in {16, 32, 64, 128, 256}.

* Grouped-query attention: Hkv divides Hq and query head h reads K/V head h // (Hq // Hkv).
* Causal masking is aligned to the END of the keys, as in a KV cache: query i (0-based) sees keys
  0 .. (Sk - Sq) + i. With Sq == Sk this is the usual lower-triangular mask. Causal needs Sk >= Sq
  (otherwise the first queries would see no key at all).

`launch_flash` follows FlashAttention-2: one program owns BLOCK_M query rows of one head, streams
K/V in BLOCK_N blocks, keeps the running row maximum `m`, the running denominator `l` and the
output accumulator in fp32 registers (online softmax, with exp2 and the scale folded into log2e),
and writes O once. Under causal masking the key blocks fully visible to every row of the program
run without any mask, the few blocks on the diagonal run with the mask, and the blocks above the
diagonal are skipped altogether (half the work at Sq == Sk).

`launch_decode` is flash decoding for one query token (Sq == 1): the key length is cut into
chunks, one program per (batch, KV head, chunk) loads each K/V block once for all Hq // Hkv query
heads of that KV head (a small [G, D] query tile, padded to 16 rows for the tensor cores), and
writes a partial (max, denominator, unnormalised output) per chunk; a small combine kernel merges
the chunks. The work is then spread over B * Hkv * chunks programs, so a long KV cache streams at
close to HBM bandwidth even at small batch.

Nothing here touches the GPU at import time.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflab.validate.kernels.configs import DECODE_CONFIG, FLASH_CONFIGS

LOG2E = 1.4426950408889634


# The last compiled kernel launched by each launch_* (registers, spills, PTX), for inspection.
LAST_COMPILED: dict = {}


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                        sm_scale: float) -> torch.Tensor:
    """softmax(q k^T * sm_scale [+ end-aligned causal mask]) v, in fp32; returns q's dtype."""
    hq, hkv = q.shape[1], k.shape[1]
    qf, kf, vf = q.float(), k.float(), v.float()
    if hq != hkv:
        kf = kf.repeat_interleave(hq // hkv, dim=1)
        vf = vf.repeat_interleave(hq // hkv, dim=1)
    s = (qf @ kf.transpose(-1, -2)) * sm_scale
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        i = torch.arange(sq, device=s.device)[:, None]
        j = torch.arange(sk, device=s.device)[None, :]
        s = s.masked_fill(j > i + (sk - sq), float("-inf"))
    return (torch.softmax(s, dim=-1) @ vf).to(q.dtype)


# --------------------------------------------------------------------------------------------
# FlashAttention-2 forward
# --------------------------------------------------------------------------------------------

@triton.jit
def _flash_fwd_inner(
    acc, l_i, m_i,           # running output [BLOCK_M, D] fp32, denominator and max [BLOCK_M] fp32
    q,                       # query tile [BLOCK_M, D], already in registers
    k_ptrs, v_ptrs,          # pointers to key/value rows 0..BLOCK_N-1 of this head, [BLOCK_N, D]
    stride_kn, stride_vn,    # row strides of K and V
    offs_m,                  # absolute query rows of this tile [BLOCK_M]
    offs_n,                  # 0..BLOCK_N-1
    lo, hi,                  # key range [lo, hi) to visit, lo a multiple of BLOCK_N
    seq_k,                   # number of keys (bounds mask)
    causal_offset,           # Sk - Sq: query i sees keys <= i + causal_offset
    qk_scale,                # sm_scale * log2(e)
    BLOCK_N: tl.constexpr,   # keys per step
    MASKED: tl.constexpr,    # apply the bounds (and, with CAUSAL, the causal) mask in this range
    CAUSAL: tl.constexpr,    # causal attention
):
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        if MASKED:
            kv_mask = (cols < seq_k)[:, None]
            k = tl.load(k_ptrs + start_n * stride_kn, mask=kv_mask, other=0.0)
        else:
            k = tl.load(k_ptrs + start_n * stride_kn)
        qk = tl.dot(q, tl.trans(k))                       # [BLOCK_M, BLOCK_N] fp32
        if MASKED:
            keep = (cols < seq_k)[None, :]
            if CAUSAL:
                keep = keep & (cols[None, :] <= offs_m[:, None] + causal_offset)
            qk = tl.where(keep, qk * qk_scale, float("-inf"))
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASKED:
            v = tl.load(v_ptrs + start_n * stride_vn, mask=kv_mask, other=0.0)
        else:
            v = tl.load(v_ptrs + start_n * stride_vn)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def _flash_fwd_kernel(
    Q, K, V, O,                              # base pointers of q, k, v, o
    stride_qb, stride_qh, stride_qm,         # q strides (batch, head, row); last dim contiguous
    stride_kb, stride_kh, stride_kn,         # k strides
    stride_vb, stride_vh, stride_vn,         # v strides
    stride_ob, stride_oh, stride_om,         # o strides
    H_Q,                                     # number of query heads
    GROUP,                                   # query heads per KV head (Hq // Hkv)
    SEQ_Q, SEQ_K,                            # query and key lengths
    qk_scale,                                # sm_scale * log2(e)
    HEAD_DIM: tl.constexpr,                  # D
    BLOCK_M: tl.constexpr,                   # query rows per program
    BLOCK_N: tl.constexpr,                   # keys per inner step
    CAUSAL: tl.constexpr,                    # end-aligned causal mask
):
    # Heavier (later) query blocks first under causal masking: better tail balance.
    if CAUSAL:
        start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        start_m = tl.program_id(0)
    off_bh = tl.program_id(1)
    off_b = off_bh // H_Q
    off_h = off_bh % H_Q
    off_hk = off_h // GROUP

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)

    q_ptrs = Q + off_b.to(tl.int64) * stride_qb + off_h.to(tl.int64) * stride_qh \
        + offs_m[:, None] * stride_qm + offs_d[None, :]
    k_ptrs = K + off_b.to(tl.int64) * stride_kb + off_hk.to(tl.int64) * stride_kh \
        + offs_n[:, None] * stride_kn + offs_d[None, :]
    v_ptrs = V + off_b.to(tl.int64) * stride_vb + off_hk.to(tl.int64) * stride_vh \
        + offs_n[:, None] * stride_vn + offs_d[None, :]
    q = tl.load(q_ptrs, mask=(offs_m < SEQ_Q)[:, None], other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)

    causal_offset = SEQ_K - SEQ_Q
    full_k = (SEQ_K // BLOCK_N) * BLOCK_N              # keys in whole, in-bounds blocks
    if CAUSAL:
        # keys < hi_full are visible to every row of this tile; keys >= hi_vis to none.
        hi_full = ((start_m * BLOCK_M + causal_offset + 1) // BLOCK_N) * BLOCK_N
        hi_full = tl.minimum(hi_full, full_k)
        hi_vis = tl.minimum((start_m + 1) * BLOCK_M + causal_offset, SEQ_K)
    else:
        hi_full = full_k
        hi_vis = SEQ_K

    # stage 1: unmasked blocks
    acc, l_i, m_i = _flash_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                     offs_m, offs_n, 0, hi_full, SEQ_K, causal_offset, qk_scale,
                                     BLOCK_N, False, CAUSAL)
    # stage 2: the diagonal (causal) and the ragged last block (bounds)
    acc, l_i, m_i = _flash_fwd_inner(acc, l_i, m_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn,
                                     offs_m, offs_n, hi_full, hi_vis, SEQ_K, causal_offset,
                                     qk_scale, BLOCK_N, True, CAUSAL)

    acc = acc / l_i[:, None]
    o_ptrs = O + off_b.to(tl.int64) * stride_ob + off_h.to(tl.int64) * stride_oh \
        + offs_m[:, None] * stride_om + offs_d[None, :]
    tl.store(o_ptrs, acc.to(O.dtype.element_ty), mask=(offs_m < SEQ_Q)[:, None])


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("q, k, v must be [B, H, S, D]")
    b, hq, sq, d = q.shape
    bk, hkv, sk, dk = k.shape
    if k.shape != v.shape or bk != b or dk != d:
        raise ValueError(f"shape mismatch: q {tuple(q.shape)} k {tuple(k.shape)} v {tuple(v.shape)}")
    if hq % hkv:
        raise ValueError(f"Hkv={hkv} must divide Hq={hq}")
    if d not in (16, 32, 64, 128, 256):
        raise ValueError(f"head dim {d} not supported")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError("q, k, v must all be bf16 or all fp16")
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    return q, k, v


def launch_flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                 sm_scale: float, config: tuple[int, int, int, int] | None = None) -> torch.Tensor:
    """FlashAttention-2 forward. q [B, Hq, Sq, D], k/v [B, Hkv, Sk, D] -> o [B, Hq, Sq, D].

    `config` = (BLOCK_M, BLOCK_N, num_warps, num_stages) overrides FLASH_CONFIGS (for sweeps).
    """
    q, k, v = _check_qkv(q, k, v)
    b, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    if causal and sk < sq:
        raise ValueError(f"causal attention needs Sk >= Sq (got Sq={sq}, Sk={sk})")
    if sm_scale <= 0:
        raise ValueError("sm_scale must be positive")
    block_m, block_n, num_warps, num_stages = config or FLASH_CONFIGS.get(
        (d, bool(causal)), (64, 64, 4, 2))
    o = torch.empty_like(q)
    grid = (triton.cdiv(sq, block_m), b * hq)
    LAST_COMPILED["flash"] = _flash_fwd_kernel[grid](
        q, k, v, o,
        q.stride(0), q.stride(1), q.stride(2),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        o.stride(0), o.stride(1), o.stride(2),
        hq, hq // hkv, sq, sk, sm_scale * LOG2E,
        HEAD_DIM=d, BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=bool(causal),
        num_warps=num_warps, num_stages=num_stages,
    )
    return o


# --------------------------------------------------------------------------------------------
# Flash decoding (Sq == 1), split over the key length, GQA heads sharing K/V loads
# --------------------------------------------------------------------------------------------

@triton.jit
def _decode_split_kernel(
    Q, K, V,                                 # q [B, Hq, 1, D], k/v [B, Hkv, Sk, D]
    O_part, M_part, L_part,                  # partials: o [B, Hq, S, D] fp32, m/l [B, Hq, S] fp32
    stride_qb, stride_qh,                    # q strides (batch, head)
    stride_kb, stride_kh, stride_kn,         # k strides
    stride_vb, stride_vh, stride_vn,         # v strides
    H_KV,                                    # number of KV heads
    GROUP,                                   # query heads per KV head
    SEQ_K,                                   # number of keys
    CHUNK,                                   # keys per split (a multiple of BLOCK_N)
    NUM_SPLITS,                              # number of splits (S)
    qk_scale,                                # sm_scale * log2(e)
    HEAD_DIM: tl.constexpr,                  # D
    BLOCK_G: tl.constexpr,                   # query-head tile rows (>= GROUP, >= 16)
    BLOCK_N: tl.constexpr,                   # keys per inner step
):
    split = tl.program_id(0)
    off_bh = tl.program_id(1)                # b * H_KV + kv head
    off_b = off_bh // H_KV
    off_hk = off_bh % H_KV

    offs_g = tl.arange(0, BLOCK_G)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    g_mask = offs_g < GROUP
    heads = off_hk * GROUP + offs_g          # the query heads served by this KV head

    q = tl.load(Q + off_b.to(tl.int64) * stride_qb + heads[:, None].to(tl.int64) * stride_qh
                + offs_d[None, :], mask=g_mask[:, None], other=0.0)
    k_ptrs = K + off_b.to(tl.int64) * stride_kb + off_hk.to(tl.int64) * stride_kh \
        + offs_n[:, None] * stride_kn + offs_d[None, :]
    v_ptrs = V + off_b.to(tl.int64) * stride_vb + off_hk.to(tl.int64) * stride_vh \
        + offs_n[:, None] * stride_vn + offs_d[None, :]

    m_i = tl.full([BLOCK_G], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_G], tl.float32)
    acc = tl.zeros([BLOCK_G, HEAD_DIM], tl.float32)

    lo = split * CHUNK
    hi = tl.minimum(lo + CHUNK, SEQ_K)
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        cols = start_n + offs_n
        kv_mask = (cols < hi)[:, None]
        k = tl.load(k_ptrs + start_n * stride_kn, mask=kv_mask, other=0.0)
        v = tl.load(v_ptrs + start_n * stride_vn, mask=kv_mask, other=0.0)
        qk = tl.dot(q, tl.trans(k))                       # [BLOCK_G, BLOCK_N]
        qk = tl.where((cols < hi)[None, :], qk * qk_scale, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_ij

    # partials of (b, head, split); row index of [B*Hq, S]
    row = (off_b * H_KV * GROUP + heads).to(tl.int64) * NUM_SPLITS + split
    tl.store(M_part + row, m_i, mask=g_mask)
    tl.store(L_part + row, l_i, mask=g_mask)
    tl.store(O_part + row[:, None] * HEAD_DIM + offs_d[None, :], acc, mask=g_mask[:, None])


@triton.jit
def _decode_combine_kernel(
    O_part, M_part, L_part,                  # partials as written by _decode_split_kernel
    Out,                                     # o [B, Hq, 1, D] (contiguous)
    NUM_SPLITS,                              # number of splits (S)
    HEAD_DIM: tl.constexpr,                  # D
    BLOCK_S: tl.constexpr,                   # next power of two >= S
):
    bh = tl.program_id(0).to(tl.int64)       # b * Hq + head
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, HEAD_DIM)
    s_mask = offs_s < NUM_SPLITS
    m = tl.load(M_part + bh * NUM_SPLITS + offs_s, mask=s_mask, other=float("-inf"))
    l = tl.load(L_part + bh * NUM_SPLITS + offs_s, mask=s_mask, other=0.0)
    o = tl.load(O_part + (bh * NUM_SPLITS + offs_s)[:, None] * HEAD_DIM + offs_d[None, :],
                mask=s_mask[:, None], other=0.0)
    m_max = tl.max(m, 0)
    w = tl.math.exp2(m - m_max)                              # 0 for padded splits
    out = tl.sum(o * w[:, None], 0) / tl.sum(l * w, 0)
    tl.store(Out + bh * HEAD_DIM + offs_d, out.to(Out.dtype.element_ty))


_SM_COUNT: dict = {}


def _sm_count(device: torch.device) -> int:
    idx = device.index if device.index is not None else torch.cuda.current_device()
    if idx not in _SM_COUNT:
        _SM_COUNT[idx] = torch.cuda.get_device_properties(idx).multi_processor_count
    return _SM_COUNT[idx]


def launch_decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sm_scale: float,
                  num_splits: int | None = None,
                  config: tuple[int, int, int] | None = None) -> torch.Tensor:
    """Flash decoding: q [B, Hq, 1, D], k/v [B, Hkv, Sk, D] -> o [B, Hq, 1, D].

    `num_splits` (chunks of the key length) defaults to enough programs to fill the GPU about
    four times over; `config` = (BLOCK_N, num_warps, num_stages) overrides DECODE_CONFIG.
    """
    q, k, v = _check_qkv(q, k, v)
    b, hq, sq, d = q.shape
    hkv, sk = k.shape[1], k.shape[2]
    if sq != 1:
        raise ValueError(f"launch_decode needs Sq == 1 (got {sq}); use launch_flash")
    if sm_scale <= 0:
        raise ValueError("sm_scale must be positive")
    block_n, num_warps, num_stages = config or DECODE_CONFIG
    group = hq // hkv
    block_g = max(16, triton.next_power_of_2(group))
    n_blocks = triton.cdiv(sk, block_n)
    if num_splits is None:
        target = 4 * _sm_count(q.device)
        num_splits = triton.cdiv(target, b * hkv)
    num_splits = max(1, min(num_splits, n_blocks))
    chunk = triton.cdiv(n_blocks, num_splits) * block_n
    num_splits = triton.cdiv(sk, chunk)                 # no empty split
    o_part = torch.empty((b, hq, num_splits, d), device=q.device, dtype=torch.float32)
    m_part = torch.empty((b, hq, num_splits), device=q.device, dtype=torch.float32)
    l_part = torch.empty((b, hq, num_splits), device=q.device, dtype=torch.float32)
    out = torch.empty((b, hq, 1, d), device=q.device, dtype=q.dtype)
    LAST_COMPILED["decode"] = _decode_split_kernel[(num_splits, b * hkv)](
        q, k, v, o_part, m_part, l_part,
        q.stride(0), q.stride(1),
        k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2),
        hkv, group, sk, chunk, num_splits, sm_scale * LOG2E,
        HEAD_DIM=d, BLOCK_G=block_g, BLOCK_N=block_n,
        num_warps=num_warps, num_stages=num_stages,
    )
    _decode_combine_kernel[(b * hq,)](
        o_part, m_part, l_part, out, num_splits,
        HEAD_DIM=d, BLOCK_S=max(2, triton.next_power_of_2(num_splits)), num_warps=4,
    )
    return out


def flash_flops(b: int, hq: int, sq: int, sk: int, d: int, causal: bool) -> float:
    """Matrix FLOPs of attention forward (2 GEMMs), counting only visible (query, key) pairs."""
    if causal:
        off = sk - sq
        pairs = sum(min(sk, off + i + 1) for i in range(sq)) if sq < 65536 else sq * sk / 2
    else:
        pairs = sq * sk
    return 4.0 * b * hq * d * pairs


__all__ = ["reference_attention", "launch_flash", "launch_decode", "flash_flops",
           "FLASH_CONFIGS", "DECODE_CONFIG"]
