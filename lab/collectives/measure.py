"""Time the collectives on this machine's GPUs through torch.distributed (one process per GPU)
and compare them with a spec's collective model; writes the run document.

    python lab/collectives/measure.py --world 8 -H h200 -o /tmp/nccl-h200x8.json
    python lab/collectives/measure.py --world 1 --kinds all_reduce -H h200 -o /tmp/one.json

NVLink multicast stays off (rooflab/validate/nccl_bench.py, MULTICAST_OFF).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rooflab import api  # noqa: E402
from rooflab.collectives import KINDS  # noqa: E402
from rooflab.validate import collective_compare, nccl_bench  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--backend", default="nccl")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("-H", "--hardware", default="h200")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    doc = nccl_bench.run(a.world, a.backend, a.kinds.split(","), iters=a.iters,
                         command=" ".join(sys.argv))
    Path(a.output).write_text(json.dumps(doc, indent=1))
    if a.world > 1:
        print(collective_compare.render(collective_compare.compare(
            doc, api.load_hardware(a.hardware))))
    else:
        for kind, rows in doc["rows"].items():
            for size, us, algbw, bus in rows:
                print(f"{kind:<15}{size:>12}{us:>12.1f} us")
    print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
