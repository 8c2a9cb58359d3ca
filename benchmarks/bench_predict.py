"""Time `rooflab predict` on a Llama-3-70B decode step (80 layers), YAML parsing included.

    python benchmarks/bench_predict.py            # prints the median of 20 runs
Target (issue #2): under 100 ms on a 2-core machine. Results are appended to
benchmarks/results.jsonl with the machine and date.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rooflab import api  # noqa: E402

WORKLOAD = ROOT / "workloads" / "llama3_70b_decode.yaml"


def run_once(schedule: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    pred = api.predict(WORKLOAD, "h200", schedule, "eager", {"layers": 80})
    return time.perf_counter() - t0, len(pred.schedule.graph.ops)


def main(repeats: int = 20) -> None:
    run_once("unfused")                       # warm imports and caches
    results = {}
    for schedule in ("unfused", "fused"):
        times, n_ops = zip(*(run_once(schedule) for _ in range(repeats)))
        results[schedule] = statistics.median(times)
        print(f"llama3_70b_decode (80 layers, {n_ops[0]} ops), schedule {schedule}: "
              f"median {results[schedule] * 1e3:.1f} ms over {repeats} runs "
              f"(min {min(times) * 1e3:.1f}, max {max(times) * 1e3:.1f})")
    record = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "machine": platform.machine(), "cpus": os.cpu_count(),
              "python": platform.python_version(), "ops": n_ops[0],
              "median_ms": {k: round(v * 1e3, 2) for k, v in results.items()}}
    with open(ROOT / "benchmarks" / "results.jsonl", "a") as f:
        f.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
