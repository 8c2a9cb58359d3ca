"""Predicted against measured GQA decode attention (measure.py's JSON): `unfused` (repeat_kv's
copies and SDPA, ATen's kernels) against the repeat_kv path, `fused` (one kernel reading the
shared heads) against SDPA with enable_gqa=True. Kernel times, µs.

    python lab/gqa_attention/compare.py MEASURED.json SPEC.yaml
"""
import json
import sys
from pathlib import Path

from rooflab import api

WORKLOAD = Path(__file__).with_name("gqa_decode.yaml")


def main(measured: str, spec: str) -> None:
    doc = json.load(open(measured))
    hw = api.load_hardware(spec)
    print(f"{doc['provenance']['gpu']}, spec {spec}")
    print(f"{'batch':>5} {'context':>7} | {'repeat_kv':>9} {'unfused':>8} {'err':>6} | "
          f"{'gqa':>7} {'fused':>7} {'err':>6} | measured gain  predicted gain")
    for c in doc["cases"]:
        sets = {"B": c["batch"], "S": c["context"]}
        unf = api.predict(WORKLOAD, hw, "unfused", "graph", sets)
        fus = api.predict(WORKLOAD, hw, "fused", "graph", sets)
        p_unf = sum(k.time_s for k in unf.kernels) * 1e6
        p_fus = sum(k.time_s for k in fus.kernels) * 1e6
        m_unf, m_fus = c["repeat_kv"]["kernel_us"], c["gqa"]["kernel_us"]
        print(f"{c['batch']:>5} {c['context']:>7} | {m_unf:>9.1f} {p_unf:>8.1f} "
              f"{p_unf / m_unf - 1:>+6.1%} | {m_fus:>7.1f} {p_fus:>7.1f} {p_fus / m_fus - 1:>+6.1%} |"
              f" {m_unf / m_fus:>12.2f}x {p_unf / p_fus:>13.2f}x")


if __name__ == "__main__":
    main(*sys.argv[1:])
