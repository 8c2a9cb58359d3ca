"""How a CUDA graph replayed back to back (as the torch suite times `graph_us`) compares with the
model's `graph` launch mode, which adds the host's replay call to the GPU's work.

    python lab/graph_replay/overlap.py RUN.json SPEC.yaml

Prints, for single-kernel cases whose profiled kernel outlasts the host's replay of a one-kernel
graph (`graph_1_kernel_us`: device-bound), the median of what a replay adds to its kernel,
measured and predicted; and the validation split's graph median as the model predicts it and
as max(host replay call, GPU start + kernels) would, the GPU start fitted as that median over
the calibration split.
"""

import statistics
import sys

from rooflab import api
from rooflab.validate import torch_compare as tc


def main(run: str, spec: str) -> None:
    doc = tc.load(run)
    rows = tc.compare(doc, api.load_hardware(spec))
    host = doc["host"]
    one_graph_us = host["graph_1_kernel_us"]
    replay_call_us = one_graph_us - host["graph_launch_us"]   # the model's replay call

    def device_bound(r):
        return (r.kernels_measured == 1 and r.kernel_us and r.graph_us
                and r.kernel_us > one_graph_us)

    added = [(r.graph_us - r.kernel_us, r.graph_us_predicted - r.kernel_us_predicted)
             for r in rows if device_bound(r)]
    print(f"{run}: {len(added)} device-bound single-kernel cases; a replay adds "
          f"{statistics.median(m for m, _ in added):.2f} µs measured, "
          f"{statistics.median(p for _, p in added):.2f} predicted (median)")
    start_us = statistics.median(r.graph_us - r.kernel_us for r in rows
                                 if device_bound(r) and r.split == "calibration")
    serial, larger = [], []
    for r in rows:
        if r.split != "validation" or not r.graph_us:
            continue
        gpu_us = r.graph_us_predicted - replay_call_us     # kernels and their gaps
        alt = max(one_graph_us, start_us + gpu_us)
        serial.append(abs(r.graph_us_predicted / r.graph_us - 1))
        larger.append(abs(alt / r.graph_us - 1))
    print(f"  GPU start fitted {start_us:.2f} µs; validation graph median "
          f"{statistics.median(serial):.1%} as predicted, {statistics.median(larger):.1%} "
          f"with max(host, GPU)")


if __name__ == "__main__":
    main(*sys.argv[1:3])
