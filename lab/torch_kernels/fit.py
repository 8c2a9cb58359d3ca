"""Fit eager PyTorch's kernel-family curves from torch-suite runs and compare each run with the model.

    python lab/torch_kernels/fit.py reports/validation/torch/h200-2026-12-04.json \
        reports/validation/torch/h200-2026-12-04-r3.json \
        --spec hardware_specs/measured/h200.yaml [--write] [--table]

Each run is compared with the model under its own host figures. Prints the per-case table
(--table) and the median/p90 errors of each split and family, with the spec's current curves.
--write replaces the spec's `kernel_families:` block (the file's last block) with the curves
fitted from the calibration cases of all the runs together (source TORCH-RUN, which the spec's
sources must define); the bytes each kernel moves do not depend on the curves, so the fit is the
same whatever curves the spec held before. `rooflab calibrate --gpu` does the same for its own
torch-suite run (source CAL-TORCH); this script is for fitting on other runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rooflab import api
from rooflab.validate import torch_compare as tc
from rooflab.validate import torch_fit as tf

def spec_block(curves: dict) -> str:
    """The YAML `kernel_families:` block of `curves` (spec_figures' kernel_families)."""
    lines = ["kernel_families:"]
    for fam, c in curves.items():
        lines += [f"  {fam}:",
                  "    points: [" + ", ".join(f"[{mb}, {f}]" for mb, f in c["points"]) + "]",
                  f"    source: {c['source']}", f'    note: "{c["note"]}"']
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--spec", default="hardware_specs/measured/h200.yaml")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--table", action="store_true")
    a = ap.parse_args()
    hw = api.load_hardware(a.spec)
    for run in a.runs:
        doc = tc.load(run)
        run_rows = tc.compare(doc, hw)
        print(run)
        if a.table:
            print(tc.render(run_rows))
        if any(r.get("compiled_us") for r in doc["cases"]):
            print("torch.compile host (us):", " ".join(f"{k} {v:.1f}" for k, v in
                                                       tc.fit_compiled_host(doc).items()))
        for split in ("calibration", "validation"):
            s = tc.summary([r for r in run_rows if r.split == split])
            print(split, " ".join(f"{k} {v:.3f}" for k, v in s.items()))
        for fam, s in tc.by_family([r for r in run_rows if r.split == "validation"]).items():
            print(f"  {fam:22s}", " ".join(f"{k} {v:.3f}" for k, v in s.items()))
    if a.write:
        spec = Path(a.spec)
        text = spec.read_text()
        if "kernel_families:" in text:
            text = text[:text.index("kernel_families:")]
        curves = tf.spec_figures([tc.load(run) for run in a.runs], hw,
                                 "TORCH-RUN")["kernel_families"]
        spec.write_text(text.rstrip("\n") + "\n" + spec_block(curves))
        print(f"wrote {len(curves)} family curves into {spec}")


if __name__ == "__main__":
    main()
