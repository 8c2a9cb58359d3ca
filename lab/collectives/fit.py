"""Fit the collective paths of a spec to a published nccl-tests table (tests/data/nccl_published.yaml).

For one system and one collective, finds the two paths (a low-latency one and a bulk one, as NCCL's
LL and Simple protocols are) whose fastest-path time (rooflab/collectives.py) comes closest to the
published times from 8 KB to 1 GB, in the worst relative error; prints the paths and the error by
size. The figures go into the spec with the table as their source.

    python lab/collectives/fit.py h100-sxm-8 all_reduce [--scaling ring|switch]
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


def rows(system: str, kind: str, sweep: int = 0, data_file: Path = DATA):
    sysd = yaml.safe_load(Path(data_file).read_text())[system]
    sizes, times = published_times(sysd["sweeps"][sweep][kind], kind, int(sysd["gpus"]))
    return sysd, sizes, times


def fit(kind: str, n: int, sizes, times, scaling_a: str, scaling_b: str):
    """(worst relative error, path a, path b) of the best grid point."""
    best = (np.inf, None, None)
    f = c.bus_factor(kind, n)
    sa, sb = c.steps(scaling_a, kind, n), c.steps(scaling_b, kind, n)
    lat = np.geomspace(0.2e-6, 40e-6, 60)
    bw = np.geomspace(5e9, 2e12, 80)
    # t[path a params, path b params, size]
    la, ba = np.meshgrid(lat, bw, indexing="ij")
    ta = sa * la[..., None] + f * sizes / ba[..., None]             # [lat, bw, size]
    ta = ta.reshape(-1, len(sizes))
    for i_b, lb in enumerate(lat):
        tb = sb * lb + f * sizes[None, :] / bw[:, None]             # [bw, size]
        t = np.minimum(ta[:, None, :], tb[None, :, :])              # [a, b, size]
        err = np.abs(t / times - 1).max(axis=2)
        j = np.unravel_index(err.argmin(), err.shape)
        if err[j] < best[0]:
            a = np.unravel_index(j[0], la.shape)
            best = (err[j], (la[a], ba[a]), (lb, bw[j[1]]))
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("system")
    ap.add_argument("kind")
    ap.add_argument("--scaling", default="ring", help="scaling of the bulk path")
    ap.add_argument("--sweep", type=int, default=0, help="which published sweep of the system")
    ap.add_argument("--data", default=str(DATA))
    args = ap.parse_args()
    sysd, sizes, times = rows(args.system, args.kind, args.sweep, args.data)
    n = int(sysd["gpus"])
    err, (la, ba), (lb, bb) = fit(args.kind, n, sizes, times, "ring", args.scaling)
    print(f"{args.system} {args.kind} on {n} GPUs: worst |error| {err:.1%}")
    print(f"  low-latency path: {la * 1e6:.3f} us/step, busbw {ba / 1e9:.1f} GB/s (ring)")
    print(f"  bulk path:        {lb * 1e6:.3f} us/step, busbw {bb / 1e9:.1f} GB/s ({args.scaling})")
    paths = (c.Path("a", frozenset(c.KINDS), la, ba, "ring"),
             c.Path("b", frozenset(c.KINDS), lb, bb, args.scaling))
    for s, t in zip(sizes, times):
        m, name = c.collective_time(paths, args.kind, n, s)
        print(f"  {int(s):>11d} B  published {t * 1e6:9.1f} us  model {m * 1e6:9.1f} us "
              f"({m / t - 1:+.1%}, path {name})")


if __name__ == "__main__":
    main()
