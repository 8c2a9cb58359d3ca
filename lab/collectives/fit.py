"""Fit the collective paths of a spec to a published nccl-tests table (tests/data/nccl_published.yaml).

For one system and one collective, finds the paths (a low-latency one and a bulk one, as NCCL's
LL and Simple/NVLS protocols are; optionally a third, middle one, as LL128 is) whose
fastest-path time (rooflab/collectives.py) comes closest to the published times from 8 KB to
1 GB, in the worst relative error; prints each path's latency per step (for its scaling at the
table's GPU count) and busbw, and the error by size. The figures go into the spec with the
table as their source.

    python lab/collectives/fit.py h100-sxm-8 all_reduce --scalings ring,switch
    python lab/collectives/fit.py a100-sxm-8 all_reduce --scalings ring,ring,ring

The fit itself is rooflab.validate.collective_fit.fit.
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
from rooflab.validate.collective_fit import fit  # noqa: E402

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
