"""The output tile a tuned GEMM library picks for a shape, and the share of the SMs its tiles
keep busy: what the cost model (rooflab.cost) divides a GEMM's time by, and the tile the Triton
validation GEMMs are launched on (rooflab/validate/kernels/configs.py).

Written as selections rather than branches, so that a sweep's grid of sizes (rooflab.grid)
prices every point's own tile: `vwhere(c, a, b)` is `a if c else b`, per point.
"""

from __future__ import annotations

from rooflab.grid import vmax, vwhere

# the most rows a GEMM may have and still be tiled as a skinny (weight-streaming) one
SKINNY_M_MAX = 256


def gemm_tile(m: int, n: int, batch: int, sm_count: int) -> tuple[int, int]:
    """The output tile (BM, BN) a tuned Hopper-class GEMM picks for this shape. Skinny
    (decode-sized) GEMMs narrow BN until the tiles fill the SMs, as GEMV kernels do; large ones
    take 128x256 when N is wider than 128 and that still fills every SM, else 128x128.
    A skinny-N GEMM (N <= 64 < M: a MoE router, a LoRA down-projection) is tiled as its
    transpose, Cᵀ = Bᵀ·Aᵀ, as a column-major library runs it: narrow in M instead.
    NB: libraries choose among more shapes (and split-K); this is the common case."""
    # Written as selections rather than branches, so that a sweep prices every point's own tile
    # (rooflab.grid): `vwhere(c, a, b)` is `a if c else b`, per point.
    transposed = (n <= 64) & (m > n)
    bm, bn = _tile(vwhere(transposed, n, m), vwhere(transposed, m, n), batch, sm_count)
    return vwhere(transposed, bn, bm), vwhere(transposed, bm, bn)


def _tile(m: int, n: int, batch: int, sm_count: int) -> tuple[int, int]:
    """gemm_tile's (BM, BN) for a GEMM that is not skinny in N."""
    bm_one = _skinny_rows(m)
    # two row tiles of half the rows, where they fill the SMs better (M=64, N=1024: 32 tiles
    # of 64x32, 64 of 32x32), so that a GEMM of a few rows more never fills them better
    bm_two = vwhere(m <= 32, 16, vwhere(m <= 64, 32, vwhere(m <= 128, 64, 128)))
    bn_one, fill_one, best_one = _narrowed(m, n, batch, bm_one, sm_count)
    bn_two, fill_two, best_two = _narrowed(m, n, batch, bm_two, sm_count)
    two = 0.85 * best_two > best_one
    bm_small = vwhere(two, bm_two, bm_one)
    bn_small = vwhere(two, bn_two, bn_one)
    fill_small = vwhere(two, fill_two, fill_one)
    # 128x256 only where N fills it: a 256-wide tile over N <= 128 would compute masked columns
    wide = (n > 128) & (-(-m // 128) * -(-n // 256) * batch >= sm_count)
    bn_large = vwhere(wide, 256, 128)
    # up to 256 rows (a decode batch) the GEMM streams its weights: narrow tiles are taken
    # where 128x128 ones leave SMs idle (M=128, N=4096: 32 tiles of 128x128 on 132 SMs, 128
    # of 64x64)
    fill_large = _waves_filled(m, n, batch, 128, bn_large, sm_count)
    small = (m <= 64) | ((m <= SKINNY_M_MAX) & (fill_large < 0.85 * fill_small))
    return vwhere(small, bm_small, 128), vwhere(small, bn_small, bn_large)


def _narrowed(m: int, n: int, batch: int, bm: int, sm_count: int):
    """(BN, its fill, the best fill) of a skinny tile BM rows high: the widest of three widths
    within 15% of the best fill. Every narrower tile re-reads the whole activation panel once
    more, which costs more than a partly filled last wave; the 15% is relative, so a grid that
    fills 3% of the SMs is not "within 15%" of one that fills 12%."""
    widths = [vwhere(bm <= 16, w16, w64) for w16, w64 in ((64, 128), (32, 64), (16, 32))]
    fills = [_waves_filled(m, n, batch, bm, bn, sm_count) for bn in widths]
    best = vmax(vmax(fills[0], fills[1]), fills[2])
    take_first = fills[0] >= 0.85 * best
    take_second = fills[1] >= 0.85 * best
    bn = vwhere(take_first, widths[0], vwhere(take_second, widths[1], widths[2]))
    return bn, vwhere(take_first, fills[0], vwhere(take_second, fills[1], fills[2])), best


def _skinny_rows(m: int) -> int:
    """BM of a skinny GEMM's tile: 16 rows up to M=16, 64 up to 128, else 128, so that at most
    two row tiles share a weight strip: side by side, the second reads it from L2, where more
    row tiles read it again from HBM (lab/skinny_gemm/NOTES.md)."""
    return vwhere(m <= 16, 16, vwhere(m <= 128, 64, 128))


def _waves_filled(m: int, n: int, batch: int, bm: int, bn: int, sm_count: int) -> float:
    tiles = -(-m // bm) * -(-n // bn) * batch
    return tiles / (-(-tiles // sm_count) * sm_count)


def wave_efficiency(m: int, n: int, batch: int, sm_count: int) -> float:
    """Fraction of the SMs' time a GEMM's tiles keep busy: tiles / (waves x SMs). A grid of 64
    tiles on 132 SMs leaves half of them idle for its one wave (wave quantization)."""
    bm, bn = gemm_tile(m, n, batch, sm_count)
    return _waves_filled(m, n, batch, bm, bn, sm_count)
