"""measure.py's replayed copies against the model: per kernel, the copy's transfer time at the
spec's copy curve (Hardware.hbm_rate_for, L2 not modelled) plus graph_launch_s, the figure
calibration takes from 4 MiB copies.

    python lab/replay_sizes/compare.py RUN.json SPEC
"""
import json
import sys

from rooflab import api


def main(run: str, spec: str) -> None:
    doc = json.load(open(run))
    hw = api.load_hardware(spec)
    print(f"{'KiB/tensor':>10} {'CTAs':>6} {'measured us':>11} {'transfer us':>11} "
          f"{'beyond us':>9} {'model us':>8}")
    for c in doc["copies"]:
        moved = c["bytes_moved"]
        busy_us = moved / hw.hbm_rate_for(moved) * 1e6
        model = busy_us + hw.graph_launch_s * 1e6
        print(f"{c['kib_per_tensor']:>10} {c['ctas']:>6} {c['per_kernel_us']:>11.3f} "
              f"{busy_us:>11.3f} {c['per_kernel_us'] - busy_us:>9.3f} {model:>8.3f}")
    print(f"tiny add_: {doc['tiny_add_per_kernel_us']} us/kernel; 2 KiB torch add: "
          f"{doc['small_add_per_kernel_us']} us/kernel; spec graph_launch "
          f"{hw.graph_launch_s * 1e6:.3f} us")


if __name__ == "__main__":
    main(*sys.argv[1:])
