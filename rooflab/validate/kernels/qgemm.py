"""Quantized GEMMs in Triton: W4A16 (int4 weights dequantized inside the GEMM), the standalone
int4 dequantize, and an FP8 (e4m3) GEMM with a scaled epilogue.

Int4 storage (`pack_int4`): weights w [K, N] with integer values in [-8, 7] are stored offset by
+8 as unsigned nibbles, two per byte ALONG K:
    packed[i, n] = (w[2i, n] + 8) | ((w[2i + 1, n] + 8) << 4)        uint8 [ceil(K / 2), N]
(low nibble = even row, high nibble = odd row; an odd K is padded with a zero weight). Group-wise
scales are bf16 [ceil(K / group), N]; the real weight is (nibble - 8) * scales[k // group, n].
`group` must be a power of two >= 16 (32, 64, 128, ... are the usual ones).

W4A16 (`launch_w4a16`): y [M, N] = x [M, K] (bf16) @ dequant(w) in one kernel. Each K step
loads the packed bytes, unpacks the low and high nibbles, turns them into floats with the
exponent trick (bits 0x4B000000 | q are the fp32 number 2^23 + q, so subtracting 2^23 + 8 gives
q - 8 exactly, with no int-to-float conversion), multiplies by the group scale, rounds to bf16 and
feeds tl.dot (fp32 accumulation). The low nibbles multiply the even columns of x and the high
nibbles the odd ones (two dots of depth BLOCK_K / 2), so nothing is interleaved in registers. For
small M (decode) the kernel is bound by the int4 weight bytes: it splits K over SPLIT_K programs
(fp32 partials, reduced by a small second kernel) so that enough programs stream the weights.
Two other dequantization schemes are kept as options (DEQ_MODE 1 and 2: integer-valued weights
2^E + q straight into the dot, the offset and the group scale applied once per tile; mode 2 unpacks
eight nibbles per int32 word). They are more accurate but 2-4x slower on the H200, so the
default is mode 0 (lab/gpu_kernels.md).

FP8 (`launch_fp8`): c [M, N] = (a @ b^T) * scale_a * scale_b in bf16, with a [M, K] and b given
as [N, K] (both row-major, i.e. K-major, the layout Hopper's fp8 tensor-core instructions need;
pass `w.t().contiguous()` for a weight held as [K, N]; torch._scaled_mm takes the same data as
`b.t()`). The dot runs on fp8 operands with fp32 accumulation (Triton's default on Hopper is
the fast, unpromoted accumulation, like _scaled_mm's use_fast_accum=True). By default the tiles
are loaded through TMA tensor descriptors (host-side triton TensorDescriptor, out-of-bounds parts
read as zeros); where a base or row stride is not 16-byte aligned (K % 16 != 0) a plain-pointer
kernel with wrapped rows and masked K runs instead.

Nothing here touches the GPU at import time.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from rooflab.validate.kernels.configs import (DEQUANT_CONFIG, FP8_CONFIG, W4A16_CONFIG_LARGE_M,
                                              W4A16_CONFIG_SMALL_M, W4A16_DEQ_MODE)

# The last compiled kernel launched by each launch_* (registers, spills, PTX), for inspection.
LAST_COMPILED: dict = {}


# --------------------------------------------------------------------------------------------
# Packing and torch references
# --------------------------------------------------------------------------------------------

def pack_int4(w_int: torch.Tensor) -> torch.Tensor:
    """int8 [K, N] with values in [-8, 7] -> uint8 [ceil(K/2), N], two nibbles per byte along K."""
    if w_int.dim() != 2:
        raise ValueError("pack_int4 expects a 2-D [K, N] tensor")
    k, n = w_int.shape
    u = (w_int.to(torch.int16) + 8)
    if int(u.min()) < 0 or int(u.max()) > 15:
        raise ValueError("int4 weights must lie in [-8, 7]")
    if k % 2:
        u = torch.cat([u, torch.full((1, n), 8, dtype=u.dtype, device=u.device)], 0)
    u = u.to(torch.uint8)
    return (u[0::2] | (u[1::2] << 4)).contiguous()


def unpack_int4(packed: torch.Tensor, k: int | None = None) -> torch.Tensor:
    """Inverse of pack_int4: uint8 [K2, N] -> int8 [k or 2*K2, N] with values in [-8, 7]."""
    p = packed.to(torch.int16)
    lo, hi = (p & 0xF) - 8, (p >> 4) - 8
    w = torch.stack([lo, hi], dim=1).reshape(2 * p.shape[0], p.shape[1])
    return w[: (k if k is not None else w.shape[0])].to(torch.int8)


def reference_dequant_int4(w_packed: torch.Tensor, scales: torch.Tensor, group: int,
                           k: int | None = None) -> torch.Tensor:
    """bf16 [K, N] = (nibble - 8) * scale, computed in fp32 and rounded once (as the kernels do)."""
    w = unpack_int4(w_packed, k).float()
    s = scales.float().repeat_interleave(group, dim=0)[: w.shape[0]]
    return (w * s).to(torch.bfloat16)


def reference_w4a16(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor,
                    group: int) -> torch.Tensor:
    """x @ dequant(w) in fp32 (weights NOT rounded to bf16 first), returned as bf16."""
    w = unpack_int4(w_packed, x.shape[1]).float()
    s = scales.float().repeat_interleave(group, dim=0)[: w.shape[0]]
    return (x.float() @ (w * s)).to(torch.bfloat16)


def reference_fp8(a: torch.Tensor, b: torch.Tensor, scale_a, scale_b) -> torch.Tensor:
    """(a @ b^T) * scale_a * scale_b in fp32, returned as bf16. b is [N, K]."""
    sa = float(scale_a) if not torch.is_tensor(scale_a) else float(scale_a.item())
    sb = float(scale_b) if not torch.is_tensor(scale_b) else float(scale_b.item())
    return ((a.float() @ b.float().t()) * (sa * sb)).to(torch.bfloat16)


# --------------------------------------------------------------------------------------------
# W4A16 GEMM
# --------------------------------------------------------------------------------------------

@triton.jit
def _cols_from_halves(a, b, ROWS: tl.constexpr, COLS: tl.constexpr, DT: tl.constexpr):
    """Two int32 tiles [ROWS, COLS // 4] of 16-bit float bit patterns -> one [ROWS, COLS] tile.

    a holds the values of columns 4c (low half) and 4c + 2 (high half), b those of 4c + 1 and
    4c + 3; joining them and merging the new dimensions restores the column order."""
    c0 = (a & 0xFFFF).to(tl.int16).to(DT, bitcast=True)
    c2 = (a >> 16).to(tl.int16).to(DT, bitcast=True)
    c1 = (b & 0xFFFF).to(tl.int16).to(DT, bitcast=True)
    c3 = (b >> 16).to(tl.int16).to(DT, bitcast=True)
    return tl.reshape(tl.join(tl.join(c0, c2), tl.join(c1, c3)), (ROWS, COLS))


@triton.jit
def _w4a16_kernel(
    X,                           # x [M, K] bf16 (or fp16), row-major
    WP,                          # packed int4 weights [ceil(K/2), N] uint8 (DEQ_MODE 2: the
                                 #   same bytes viewed as int32 [ceil(K/2), N/4])
    S,                           # group scales [ceil(K/GROUP_SIZE), N] bf16
    Y,                           # y [M, N] bf16, or fp32 partials [SPLIT_K, M, N] if SPLIT_K > 1
    M, N, K,                     # problem sizes
    stride_xm,                   # row stride of x
    stride_wk,                   # row stride of WP, in WP's elements
    stride_sg,                   # row stride of the scales
    stride_ym,                   # row stride of y / of one partial
    stride_ys,                   # stride between partials (SPLIT_K > 1)
    GROUP_SIZE: tl.constexpr,    # int4 group size along K (power of two, >= BLOCK_K)
    BLOCK_M: tl.constexpr,       # rows of x per program
    BLOCK_N: tl.constexpr,       # columns of y per program
    BLOCK_K: tl.constexpr,       # K per step (two dots of depth BLOCK_K // 2)
    GROUP_M: tl.constexpr,       # L2 swizzle: programs of GROUP_M row blocks walk N together
    SPLIT_K: tl.constexpr,       # programs sharing one output tile along K
    EVEN_K: tl.constexpr,        # K % BLOCK_K == 0: no K masks
    DEQ_MODE: tl.constexpr,      # 0: fp32 dequant per weight; 1: integer weights in the dot,
                                 #   scale and offset per tile; 2: like 1, unpacked 8 at a time
    MAGIC16: tl.constexpr,       # 16-bit pattern of the float 2^E (0x4300 = 128.0 in bf16,
                                 #   0x6400 = 1024.0 in fp16); MAGIC16 | q is the float 2^E + q
    OFFSET: tl.constexpr,        # 2^E + 8: dot(x, 2^E + q) - OFFSET * sum(x) = dot(x, q - 8)
):
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    HALF_K: tl.constexpr = BLOCK_K // 2
    DT = X.dtype.element_ty
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # wrap out-of-range rows/columns onto valid ones: loads need no mask, stores are masked
    rm = offs_m % M
    rn = offs_n % N
    offs_j = tl.arange(0, HALF_K)            # packed rows in one K step

    n_tiles = tl.cdiv(K, BLOCK_K)
    tiles_per_split = tl.cdiv(n_tiles, SPLIT_K)
    t_lo = pid_k * tiles_per_split
    t_hi = tl.minimum(t_lo + tiles_per_split, n_tiles)

    x_ptrs = X + rm[:, None].to(tl.int64) * stride_xm + tl.arange(0, BLOCK_K)[None, :]
    if DEQ_MODE == 2:
        QUARTER_N: tl.constexpr = BLOCK_N // 4
        rw = (pid_n * QUARTER_N + tl.arange(0, QUARTER_N)) % (N // 4)
        w_ptrs = WP + offs_j[:, None] * stride_wk + rw[None, :]
    else:
        w_ptrs = WP + offs_j[:, None] * stride_wk + rn[None, :]
    MAGIC32: tl.constexpr = MAGIC16 * 65536 + MAGIC16
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for t in range(t_lo, t_hi):
        k0 = t * BLOCK_K
        if EVEN_K:
            x = tl.load(x_ptrs + k0)
            p = tl.load(w_ptrs + (k0 // 2) * stride_wk)
        else:
            x = tl.load(x_ptrs + k0, mask=(k0 + tl.arange(0, BLOCK_K) < K)[None, :], other=0.0)
            p = tl.load(w_ptrs + (k0 // 2) * stride_wk, mask=(k0 + 2 * offs_j < K)[:, None],
                        other=0)
        # even / odd columns of x meet the low / high nibbles
        xe, xo = tl.split(tl.reshape(x, (BLOCK_M, HALF_K, 2)))
        s = tl.load(S + (k0 // GROUP_SIZE) * stride_sg + rn).to(tl.float32)[None, :]
        if DEQ_MODE == 0:
            p = p.to(tl.int32)
            # 0x4B000000 | q is the float 2^23 + q; minus (2^23 + 8) leaves q - 8 exactly
            w_lo = (((p & 0xF) | 0x4B000000).to(tl.float32, bitcast=True) - 8388616.0) * s
            w_hi = ((((p >> 4) & 0xF) | 0x4B000000).to(tl.float32, bitcast=True) - 8388616.0) * s
            acc = tl.dot(xe, w_lo.to(DT), acc)
            acc = tl.dot(xo, w_hi.to(DT), acc)
        else:
            if DEQ_MODE == 1:
                p16 = p.to(tl.int16)
                w_lo = ((p16 & 0xF) | MAGIC16).to(tl.int16).to(DT, bitcast=True)
                w_hi = (((p16 >> 4) & 0xF) | MAGIC16).to(tl.int16).to(DT, bitcast=True)
            else:
                # one int32 = 4 columns x (even row, odd row); nibble pairs land in 16-bit halves
                e0 = (p & 0x000F000F) | MAGIC32
                e1 = ((p >> 8) & 0x000F000F) | MAGIC32
                o0 = ((p >> 4) & 0x000F000F) | MAGIC32
                o1 = ((p >> 12) & 0x000F000F) | MAGIC32
                w_lo = _cols_from_halves(e0, e1, HALF_K, BLOCK_N, DT)
                w_hi = _cols_from_halves(o0, o1, HALF_K, BLOCK_N, DT)
            part = tl.dot(xe, w_lo)                    # sum_k x * (2^E + q), exact products
            part = tl.dot(xo, w_hi, part)
            xsum = tl.sum(x.to(tl.float32), 1)
            acc += (part - OFFSET * xsum[:, None]) * s

    y_mask = (offs_m < M)[:, None] & (offs_n < N)[None, :]
    if SPLIT_K == 1:
        y_ptrs = Y + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]
        tl.store(y_ptrs, acc.to(Y.dtype.element_ty), mask=y_mask)
    else:
        y_ptrs = Y + pid_k.to(tl.int64) * stride_ys + offs_m[:, None].to(tl.int64) * stride_ym \
            + offs_n[None, :]
        tl.store(y_ptrs, acc, mask=y_mask)


@triton.jit
def _splitk_reduce_kernel(
    P,                           # fp32 partials [SPLIT_K, M*N] (contiguous)
    Y,                           # output [M*N] (contiguous), bf16
    NUMEL,                       # M * N
    SPLIT_K: tl.constexpr,       # number of partials
    BLOCK: tl.constexpr,         # elements per program
):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < NUMEL
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(P + s * NUMEL + offs, mask=mask, other=0.0)
    tl.store(Y + offs, acc.to(Y.dtype.element_ty), mask=mask)


def _check_int4(w_packed: torch.Tensor, scales: torch.Tensor, group: int, k: int):
    if w_packed.dtype not in (torch.uint8, torch.int8) or w_packed.dim() != 2:
        raise ValueError("w_packed must be a 2-D uint8 tensor from pack_int4")
    if group < 16 or group & (group - 1):
        raise ValueError(f"group must be a power of two >= 16 (got {group})")
    k2, n = w_packed.shape
    if k2 != (k + 1) // 2:
        raise ValueError(f"packed weights have {k2} rows, K={k} needs {(k + 1) // 2}")
    if scales.shape != ((k + group - 1) // group, n):
        raise ValueError(f"scales must be [{(k + group - 1) // group}, {n}], got {tuple(scales.shape)}")
    if w_packed.dtype == torch.int8:
        w_packed = w_packed.view(torch.uint8)
    if w_packed.stride(1) != 1:
        w_packed = w_packed.contiguous()
    if scales.stride(1) != 1:
        scales = scales.contiguous()
    return w_packed, scales


def launch_w4a16(x: torch.Tensor, w_packed: torch.Tensor, scales: torch.Tensor, group: int,
                 config: tuple | None = None) -> torch.Tensor:
    """y [M, N] bf16 = x [M, K] bf16 @ dequant(w_packed [ceil(K/2), N], scales [ceil(K/g), N]).

    `config` = (BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_warps, num_stages[, DEQ_MODE]) overrides
    the default (DEQ_MODE 2 needs N % 4 == 0 and falls back to 1 otherwise).
    """
    if x.dim() != 2 or x.dtype not in (torch.bfloat16, torch.float16):
        raise ValueError("x must be a 2-D bf16/fp16 tensor")
    m, k = x.shape
    w_packed, scales = _check_int4(w_packed, scales, group, k)
    n = w_packed.shape[1]
    if x.stride(1) != 1:
        x = x.contiguous()
    cfg = tuple(config or (W4A16_CONFIG_SMALL_M if m <= 64 else W4A16_CONFIG_LARGE_M))
    bm, bn, bk, split_k, num_warps, num_stages = cfg[:6]
    mode = cfg[6] if len(cfg) > 6 else W4A16_DEQ_MODE
    bk = min(bk, group)                               # a K step never straddles two groups
    w_arg, stride_w = w_packed, w_packed.stride(0)
    if mode == 2:
        if n % 4 or bn % 4 or stride_w % 4 or w_packed.storage_offset() % 4:
            mode = 1
        else:
            w_arg, stride_w = w_packed.view(torch.int32), stride_w // 4
    n_tiles = triton.cdiv(k, bk)
    split_k = max(1, min(split_k, n_tiles))
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn), split_k)
    y = torch.empty((m, n), device=x.device, dtype=x.dtype)
    target = y if split_k == 1 else torch.empty((split_k, m, n), device=x.device,
                                                dtype=torch.float32)
    magic = 0x4300 if x.dtype == torch.bfloat16 else 0x6400   # 128.0 / 1024.0
    LAST_COMPILED["w4a16"] = _w4a16_kernel[grid](
        x, w_arg, scales, target, m, n, k,
        x.stride(0), stride_w, scales.stride(0), n,
        m * n,
        GROUP_SIZE=group, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, SPLIT_K=split_k,
        EVEN_K=(k % bk == 0), DEQ_MODE=mode, MAGIC16=magic,
        OFFSET=(128.0 if magic == 0x4300 else 1024.0) + 8.0,
        num_warps=num_warps, num_stages=num_stages,
    )
    if split_k > 1:
        block = 1024
        _splitk_reduce_kernel[(triton.cdiv(m * n, block),)](
            target, y, m * n, SPLIT_K=split_k, BLOCK=block, num_warps=4)
    return y


# --------------------------------------------------------------------------------------------
# Standalone int4 dequantize
# --------------------------------------------------------------------------------------------

@triton.jit
def _dequant_int4_kernel(
    WP,                          # packed int4 weights [K2, N] uint8
    S,                           # scales [ceil(K/GROUP_SIZE), N] bf16
    W,                           # output [K, N] bf16
    K, N, K2,                    # sizes (K2 = ceil(K/2) packed rows)
    stride_wk,                   # row stride of the packed weights
    stride_sg,                   # row stride of the scales
    stride_ok,                   # row stride of the output
    GROUP_SIZE: tl.constexpr,    # int4 group size (even)
    BLOCK_R: tl.constexpr,       # packed rows per program (2 * BLOCK_R output rows)
    BLOCK_N: tl.constexpr,       # columns per program
):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    r_mask = rows < K2
    c_mask = cols < N
    mask = r_mask[:, None] & c_mask[None, :]
    p = tl.load(WP + rows[:, None].to(tl.int64) * stride_wk + cols[None, :], mask=mask, other=0)
    s = tl.load(S + ((2 * rows) // GROUP_SIZE)[:, None] * stride_sg + cols[None, :], mask=mask,
                other=0.0).to(tl.float32)
    p = p.to(tl.int32)
    w_lo = ((p & 0xF) | 0x4B000000).to(tl.float32, bitcast=True) - 8388616.0
    w_hi = (((p >> 4) & 0xF) | 0x4B000000).to(tl.float32, bitcast=True) - 8388616.0
    out = W + (2 * rows)[:, None].to(tl.int64) * stride_ok + cols[None, :]
    tl.store(out, (w_lo * s).to(W.dtype.element_ty), mask=mask)
    tl.store(out + stride_ok, (w_hi * s).to(W.dtype.element_ty),
             mask=mask & (2 * rows + 1 < K)[:, None])


def launch_dequant_int4(w_packed: torch.Tensor, scales: torch.Tensor, group: int,
                        k: int | None = None, config: tuple | None = None) -> torch.Tensor:
    """bf16 [K, N] from packed int4 [ceil(K/2), N] and scales; K defaults to 2 * packed rows.

    `config` = (packed rows, columns, num_warps) per program overrides DEQUANT_CONFIG.
    """
    k2, n = w_packed.shape
    k = 2 * k2 if k is None else k
    w_packed, scales = _check_int4(w_packed, scales, group, k)
    block_r, block_n, num_warps = config or DEQUANT_CONFIG
    w = torch.empty((k, n), device=w_packed.device, dtype=torch.bfloat16)
    grid = (triton.cdiv(k2, block_r), triton.cdiv(n, block_n))
    LAST_COMPILED["dequant_int4"] = _dequant_int4_kernel[grid](
        w_packed, scales, w, k, n, k2,
        w_packed.stride(0), scales.stride(0), w.stride(0),
        GROUP_SIZE=group, BLOCK_R=block_r, BLOCK_N=block_n, num_warps=num_warps,
    )
    return w


# --------------------------------------------------------------------------------------------
# FP8 GEMM
# --------------------------------------------------------------------------------------------

@triton.jit
def _fp8_gemm_kernel(
    A,                           # a [M, K] float8_e4m3fn, row-major
    B,                           # b [N, K] float8_e4m3fn, row-major (K-major)
    C,                           # c [M, N] bf16
    SA, SB,                      # pointers to the fp32 scalar scales of a and b
    M, N, K,                     # problem sizes
    stride_am,                   # row stride of a
    stride_bn,                   # row stride of b
    stride_cm,                   # row stride of c
    BLOCK_M: tl.constexpr,       # tile rows
    BLOCK_N: tl.constexpr,       # tile columns
    BLOCK_K: tl.constexpr,       # K per step
    GROUP_M: tl.constexpr,       # L2 swizzle group
    EVEN_K: tl.constexpr,        # K % BLOCK_K == 0
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    rm = offs_m % M
    rn = offs_n % N
    a_ptrs = A + rm[:, None].to(tl.int64) * stride_am + offs_k[None, :]
    b_ptrs = B + rn[:, None].to(tl.int64) * stride_bn + offs_k[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for t in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_mask = offs_k < K - t * BLOCK_K
            a = tl.load(a_ptrs, mask=k_mask[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_mask[None, :], other=0.0)
        acc = tl.dot(a, tl.trans(b), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    acc = acc * (tl.load(SA) * tl.load(SB))
    c_ptrs = C + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(C.dtype.element_ty),
             mask=(offs_m < M)[:, None] & (offs_n < N)[None, :])


@triton.jit
def _fp8_gemm_tma_kernel(
    a_desc,                      # TMA descriptor of a [M, K], block [BLOCK_M, BLOCK_K]
    b_desc,                      # TMA descriptor of b [N, K], block [BLOCK_N, BLOCK_K]
    C,                           # c [M, N] bf16
    SA, SB,                      # pointers to the fp32 scalar scales
    M, N, K,                     # problem sizes
    stride_cm,                   # row stride of c
    BLOCK_M: tl.constexpr,       # tile rows
    BLOCK_N: tl.constexpr,       # tile columns
    BLOCK_K: tl.constexpr,       # K per step
    GROUP_M: tl.constexpr,       # L2 swizzle group
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    off_m = pid_m * BLOCK_M
    off_n = pid_n * BLOCK_N
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k in range(0, K, BLOCK_K):             # out-of-bounds parts of a tile read as zeros
        a = a_desc.load([off_m, k])
        b = b_desc.load([off_n, k])
        acc = tl.dot(a, b.T, acc)
    acc = acc * (tl.load(SA) * tl.load(SB))
    offs_m = off_m + tl.arange(0, BLOCK_M)
    offs_n = off_n + tl.arange(0, BLOCK_N)
    c_ptrs = C + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, acc.to(C.dtype.element_ty),
             mask=(offs_m < M)[:, None] & (offs_n < N)[None, :])


def _scale_tensor(s, device) -> torch.Tensor:
    if torch.is_tensor(s):
        if s.numel() != 1:
            raise ValueError("launch_fp8 takes per-tensor (scalar) scales")
        return s.reshape(1).to(device=device, dtype=torch.float32)
    return torch.full((1,), float(s), device=device, dtype=torch.float32)


def launch_fp8(a: torch.Tensor, b: torch.Tensor, scale_a, scale_b,
               config: tuple | None = None) -> torch.Tensor:
    """c [M, N] bf16 = (a [M, K] @ b[N, K]^T) * scale_a * scale_b, a and b float8_e4m3fn.

    b is [N, K] row-major (K-major). Scales: Python floats or one-element fp32 tensors.
    `config` = (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, use_tma); the TMA
    (tensor-descriptor) kernel is used only where K is a multiple of 16 (16-byte rows).
    """
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise ValueError(f"a [M, K] and b [N, K] expected, got {tuple(a.shape)}, {tuple(b.shape)}")
    if a.dtype != torch.float8_e4m3fn or b.dtype != torch.float8_e4m3fn:
        raise ValueError("a and b must be float8_e4m3fn")
    m, k = a.shape
    n = b.shape[0]
    a = a if a.stride(1) == 1 else a.contiguous()
    b = b if b.stride(1) == 1 else b.contiguous()
    sa, sb = _scale_tensor(scale_a, a.device), _scale_tensor(scale_b, a.device)
    bm, bn, bk, group_m, num_warps, num_stages, use_tma = config or FP8_CONFIG
    c = torch.empty((m, n), device=a.device, dtype=torch.bfloat16)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    # TMA needs 16-byte aligned bases and row strides; otherwise use the pointer kernel
    use_tma = use_tma and all(t.stride(0) % 16 == 0 and t.data_ptr() % 16 == 0 for t in (a, b))
    if use_tma:
        from triton.tools.tensor_descriptor import TensorDescriptor
        a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
        b_desc = TensorDescriptor.from_tensor(b, [bn, bk])
        LAST_COMPILED["fp8"] = _fp8_gemm_tma_kernel[grid](
            a_desc, b_desc, c, sa, sb, m, n, k, c.stride(0),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group_m,
            num_warps=num_warps, num_stages=num_stages,
        )
    else:
        LAST_COMPILED["fp8"] = _fp8_gemm_kernel[grid](
            a, b, c, sa, sb, m, n, k, a.stride(0), b.stride(0), c.stride(0),
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group_m, EVEN_K=(k % bk == 0),
            num_warps=num_warps, num_stages=num_stages,
        )
    return c


__all__ = ["pack_int4", "unpack_int4", "reference_dequant_int4", "reference_w4a16",
           "reference_fp8", "launch_w4a16", "launch_dequant_int4", "launch_fp8"]
