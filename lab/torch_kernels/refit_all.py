"""Rebuild each committed lease's spec with the current fit and re-predict that lease's torch run.

    python lab/torch_kernels/refit_all.py [--table] [--cases softmax_]

A change to how curves are fitted (rooflab/validate/torch_fit.py) or how kernels are priced is
judged on every lease at once: per lease, `rooflab calibrate --from <raw> [--torch-run <run>]`
as the shipped spec or the lease's own spec was built, then the run's validation split
compared with it. Prints each lease's summary and, with --table, the cases whose kernel error
is beyond 12 %.
"""

from __future__ import annotations

import argparse
import yaml

from rooflab.hardware import spec_paths, to_core
from rooflab.hardware_spec import HardwareFile
from rooflab.validate import calspec
from rooflab.validate import torch_compare as tc

CAL = "reports/calibration/"
RUNS = "reports/validation/torch/"
# (name, raw calibration, torch run whose GPU-side figures the spec takes or None, run compared)
LEASES = [
    ("h200 r9 (shipped)", CAL + "h200-2026-12-04.json", RUNS + "h200-2026-12-04-r9.json",
     RUNS + "h200-2026-12-04-r9.json"),
    ("h100 r2", CAL + "h100-80gb-hbm3-2026-12-06.json", None,
     RUNS + "h100-80gb-hbm3-2026-12-06-r2.json"),
    ("h100 r3", CAL + "h100-80gb-hbm3-2026-12-06-2.json", None,
     RUNS + "h100-80gb-hbm3-2026-12-06-r3.json"),
    ("h100 r4", CAL + "h100-80gb-hbm3-2026-12-06-3.json", None,
     RUNS + "h100-80gb-hbm3-2026-12-06-r4.json"),
]


def rebuilt(raw: str, torch_run: str | None):
    """The Hardware `rooflab calibrate --from raw [--torch-run]` writes."""
    import json
    gpu = json.loads(open(raw).read())["provenance"]["gpu"]
    base_name = "h100-sxm" if "H100" in gpu else "h200"
    base = HardwareFile.model_validate(yaml.safe_load(spec_paths()[base_name].read_text()))
    spec = calspec.spec_from_raw(base, raw, torch_run)
    return to_core(HardwareFile.model_validate(spec))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--cases", default="")
    a = ap.parse_args()
    for name, raw, torch_run, run in LEASES:
        hw = rebuilt(raw, torch_run)
        rows = tc.compare(tc.load(run), hw, "validation")
        s = tc.summary(rows)
        print(f"{name:18s}", " ".join(f"{k} {v * 100:.1f}" if k != "cases" else f"cases {v}"
                                       for k, v in s.items()))
        if a.table:
            for r in rows:
                e = r.kernel_error
                if e is not None and (abs(e) > 0.12 or (a.cases and a.cases in r.id)):
                    print(f"    {r.id:45s} {r.kernel_us:9.1f} {r.kernel_us_predicted:9.1f} "
                          f"{e * 100:+6.1f}%")


if __name__ == "__main__":
    main()
