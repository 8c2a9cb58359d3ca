"""Fit the collective paths of a spec to a published nccl-tests table (tests/data/nccl_published.yaml).

For one system and one collective, finds the paths (a low-latency one and a bulk one, as NCCL's
LL and Simple/NVLS protocols are; optionally a third, middle one, as LL128 is) whose
fastest-path time (rooflab/collectives.py) comes closest to the published times from 8 KB to
1 GB, in the worst relative error; prints each path's latency per step (for its scaling at the
table's GPU count) and busbw, and the error by size. The figures go into the spec with the
table as their source.

    python lab/collectives/fit.py h100-sxm-8 all_reduce --scalings ring,switch
    python lab/collectives/fit.py a100-sxm-8 all_reduce --scalings ring,ring,ring

The search: each path is (latency of one whole collective, busbw), in log space; a log grid
over two paths, then a pattern search (halving steps) from the best few grid points on the
worst error itself. numpy only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rooflab import collectives as c  # noqa: E402

LO, HI = 8 * 1024, 1024 ** 3


DATA = ROOT / "tests/data/nccl_published.yaml"


def published_times(rows: list, kind: str, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(sizes in bytes, seconds) of a published table's rows [size, time_us, algbw, busbw]
    from 8 KB to 1 GB; a time the source does not print follows from its busbw."""
    sizes, times = [], []
    for size, t_us, _, bus in rows:
        if not LO <= size <= HI:
            continue
        sizes.append(size)
        times.append(t_us * 1e-6 if t_us is not None else
                     c.bus_factor(kind, n) * size / (bus * 1e9))
    return np.array(sizes, dtype=float), np.array(times)


def rows(system: str, kind: str, sweep: int = 0, data_file: Path = DATA, gpus: int | None = None):
    sysd = yaml.safe_load(Path(data_file).read_text())[system]
    n = gpus or int(sysd["gpus"])
    sizes, times = published_times(sysd["sweeps"][sweep][kind], kind, n)
    return sysd, n, sizes, times


def worst(params: np.ndarray, f: float, sizes, times) -> float:
    """Worst |model / published - 1| for params = log([L1, B1, L2, B2, ...]) (L: seconds of
    one whole collective, B: busbw bytes/s)."""
    p = np.exp(params).reshape(-1, 2)
    t = (p[:, :1] + f * sizes[None, :] / p[:, 1:]).min(axis=0)
    return float(np.abs(t / times - 1).max())


def fit(kind: str, n: int, sizes, times, k: int = 2):
    """(worst relative error, [(seconds per collective, busbw bytes/s)] sorted by busbw) of k
    paths."""
    f = c.bus_factor(kind, n)
    lat = np.log(np.geomspace(1e-6, 200e-6, 40))
    bw = np.log(np.geomspace(1e9, 2e12, 60))
    starts = []
    la, ba = np.meshgrid(lat, bw, indexing="ij")
    pairs = np.stack([la.ravel(), ba.ravel()], axis=1)
    ts = np.exp(pairs[:, :1]) + f * sizes[None, :] / np.exp(pairs[:, 1:])       # [pair, size]
    for i in range(len(pairs)):
        t = np.minimum(ts[i][None, :], ts)
        e = np.abs(t / times - 1).max(axis=1)
        j = int(e.argmin())
        starts.append((e[j], i, j))
    starts.sort()
    best = (np.inf, None)
    rng = np.random.default_rng(0)
    for e0, i, j in starts[:8]:
        x = np.concatenate([pairs[i], pairs[j]])
        for _ in range(k - 2):          # a third path starts between the two
            x = np.concatenate([x, (pairs[i] + pairs[j]) / 2 + rng.normal(0, 0.3, 2)])
        e = worst(x, f, sizes, times)
        step = 0.5
        while step > 1e-4:
            improved = False
            for d in range(len(x)):
                for s in (step, -step):
                    y = x.copy()
                    y[d] += s
                    ey = worst(y, f, sizes, times)
                    if ey < e:
                        x, e, improved = y, ey, True
            if not improved:
                step /= 2
        if e < best[0]:
            best = (e, x)
    p = sorted(map(tuple, np.exp(best[1]).reshape(-1, 2)), key=lambda q: q[1])
    return best[0], p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("system")
    ap.add_argument("kind")
    ap.add_argument("--scalings", default="ring,switch",
                    help="scaling of each path, from the lowest busbw to the highest")
    ap.add_argument("--sweep", type=int, default=0, help="which published sweep of the system")
    ap.add_argument("--gpus", type=int, help="GPU count where the data file leaves it null")
    ap.add_argument("--data", default=str(DATA))
    args = ap.parse_args()
    sysd, n, sizes, times = rows(args.system, args.kind, args.sweep, args.data, args.gpus)
    scalings = args.scalings.split(",")
    err, ps = fit(args.kind, n, sizes, times, len(scalings))
    print(f"{args.system} {args.kind} on {n} GPUs (sweep {args.sweep}): worst |error| {err:.1%}")
    paths = []
    for i, ((lat, bw), sc) in enumerate(zip(ps, scalings)):
        st = c.steps(sc, args.kind, n)
        print(f"  path {i}: {lat * 1e6:.2f} us per collective = {st} steps x "
              f"{lat / st * 1e6:.3f} us/step ({sc}), busbw {bw / 1e9:.1f} GB/s")
        paths.append(c.Path(f"p{i}", frozenset(c.KINDS), lat / st, bw, sc))
    for s, t in zip(sizes, times):
        m, name = c.collective_time(tuple(paths), args.kind, n, s)
        print(f"  {int(s):>11d} B  published {t * 1e6:9.1f} us  model {m * 1e6:9.1f} us "
              f"({m / t - 1:+.1%}, path {name})")


if __name__ == "__main__":
    main()
