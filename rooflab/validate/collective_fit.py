"""The collective paths a sweep of one collective fits: a low-latency path and a bulk one (NCCL's
LL and Simple protocols), optionally a middle one (LL128), whose fastest-path time
(rooflab.collectives) comes closest to the sweep in the worst relative error.

Used twice: on published nccl-tests tables (lab/collectives/fit.py, whose figures the bundled
specs cite) and on a measured run (`measured_paths`, what `rooflab calibrate --collectives`
writes into a spec, each path pinned to its kind and GPU count with `measured_gpus`).

The search: each path is (latency of one whole collective, busbw), in log space; a log grid
over two paths, then a pattern search (halving steps) from the best few grid points on the
worst error itself. numpy only, deterministic.
"""

from __future__ import annotations

import numpy as np

from rooflab import collectives as c

# a third path is kept only where it lowers the worst error by this much (it must earn its place)
THIRD_PATH_GAIN = 0.02


def worst_error(params: np.ndarray, factor: float, sizes: np.ndarray, times_s: np.ndarray) -> float:
    """Worst |model / measured - 1| for params = log([L1, B1, L2, B2, ...]) (L: seconds of
    one whole collective, B: busbw bytes/s) and bus factor `factor`."""
    p = np.exp(params).reshape(-1, 2)
    t = (p[:, :1] + factor * sizes[None, :] / p[:, 1:]).min(axis=0)
    return float(np.abs(t / times_s - 1).max())


def fit(kind: str, n: int, sizes, times_s, k: int = 2) -> tuple[float, list[tuple[float, float]]]:
    """(worst relative error, [(seconds per collective, busbw bytes/s), ...] sorted by busbw) of
    the `k` paths closest to `times_s` at `sizes` for one `kind` on `n` GPUs."""
    sizes, times_s = np.asarray(sizes, dtype=float), np.asarray(times_s, dtype=float)
    f = c.bus_factor(kind, n)
    lat = np.log(np.geomspace(1e-6, 200e-6, 40))
    bw = np.log(np.geomspace(1e9, 2e12, 60))
    la, ba = np.meshgrid(lat, bw, indexing="ij")
    pairs = np.stack([la.ravel(), ba.ravel()], axis=1)
    ts = np.exp(pairs[:, :1]) + f * sizes[None, :] / np.exp(pairs[:, 1:])       # [pair, size]
    starts = []
    for i in range(len(pairs)):
        e = np.abs(np.minimum(ts[i][None, :], ts) / times_s - 1).max(axis=1)
        j = int(e.argmin())
        starts.append((e[j], i, j))
    starts.sort()
    best = (np.inf, None)
    rng = np.random.default_rng(0)
    for _, i, j in starts[:8]:
        x = np.concatenate([pairs[i], pairs[j]])
        for _ in range(k - 2):          # a third path starts between the two
            x = np.concatenate([x, (pairs[i] + pairs[j]) / 2 + rng.normal(0, 0.3, 2)])
        e = worst_error(x, f, sizes, times_s)
        step = 0.5
        while step > 1e-4:
            improved = False
            for d in range(len(x)):
                for s in (step, -step):
                    y = x.copy()
                    y[d] += s
                    ey = worst_error(y, f, sizes, times_s)
                    if ey < e:
                        x, e, improved = y, ey, True
            if not improved:
                step /= 2
        if e < best[0]:
            best = (e, x)
    paths = sorted(map(tuple, np.exp(best[1]).reshape(-1, 2)), key=lambda q: q[1])
    return best[0], [(float(a), float(b)) for a, b in paths]


def measured_paths(doc: dict, source: str) -> dict[str, dict]:
    """The spec paths (interconnect.collectives entries, as dicts) a collective run document
    (rooflab.validate.nccl_bench) fits: per measured kind, two paths (three where a third
    lowers the worst error by THIRD_PATH_GAIN), ring-scaled, pinned to the run's GPU count,
    each citing `source` and saying its fit's worst error over the sweep."""
    world = doc["provenance"]["world"]
    out = {}
    for kind, rows in doc["rows"].items():
        sizes = np.array([r[0] for r in rows], dtype=float)
        times = np.array([r[1] for r in rows]) * 1e-6
        err, paths = fit(kind, world, sizes, times, 2)
        err3, paths3 = fit(kind, world, sizes, times, 3)
        if err3 < err - THIRD_PATH_GAIN:
            err, paths = err3, paths3
        steps = c.steps("ring", kind, world)
        for i, (lat_s, bw) in enumerate(paths):
            note = (f"fitted to the measured {kind} sweep on {world} GPUs "
                    f"({int(sizes[0])} B..{int(sizes[-1])} B, worst |error| {err:.1%}); "
                    f"path {i + 1} of {len(paths)} by bandwidth")
            out[f"measured-{kind}-{world}gpu-{i + 1}"] = {
                "kinds": [kind], "scaling": "ring", "measured_gpus": world,
                # a bandwidth line fits a latency near 0; a spec's figure must be positive
                "step_latency_us": {"value": max(round(lat_s / steps * 1e6, 4), 1e-4),
                                    "source": source,
                                    "note": f"{lat_s * 1e6:.2f} us per collective / {steps} ring steps"},
                "busbw_gb_per_s": {"value": round(bw / 1e9, 2), "source": source},
                "source": source, "note": note}
    return out
