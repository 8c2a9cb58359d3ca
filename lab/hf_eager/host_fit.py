"""Fit the per-module host cost of eager transformers (the spec's launch.module_call_us) and check it.

An eager decode step of a Hugging Face model at batch 1 is host-bound: its time is the Python and
ATen dispatch of the step. rooflab's host model (rooflab.launch.host_times) charges each launching
ATen call, GEMM dispatch and metadata-only call from the run's own calibration; what remains is
transformers' per-module Python (forward hooks, argument handling, mask and cache code), charged
per nn.Module call. This script fits that one constant on the shrunk configs that keep every
layer (hidden 256: the full model's Python on tiny tensors, so host time alone), then predicts
the full-size steps of the same lease with it.

    python lab/hf_eager/host_fit.py reports/hf_eager/h200-2026-12-04-host-keep-timing.json \
        reports/hf_eager/h200-2026-12-04-host-full-timing.json
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from rooflab import api
from rooflab.trace import source

sys.path.insert(0, str(Path(__file__).parent))
import measure  # noqa: E402  (the shrunk configs, exactly as the run built them)


def _calibrated(hw, doc: dict):
    start = doc["calibration"]["start"]
    us = {k: start[k]["eager_wall_us_per_op"]["median"] * 1e-6
          for k in ("add_inplace_1elem", "mm_1x64x64_bf16", "view_no_kernel")}
    return replace(hw.with_eager_dispatch(us["add_inplace_1elem"]),
                   gemm_dispatch_s=us["mm_1x64x64_bf16"], view_dispatch_s=us["view_no_kernel"])


def _cases(doc: dict):
    for model, m in doc["models"].items():
        for cid, rec in m["cases"].items():
            if rec.get("status") == "ok" and rec.get("eager"):
                sets = ({"batch": rec["batch"], "context": rec["context"]} if rec["phase"] == "decode"
                        else {"batch": rec["batch"], "seq": rec["seq"], "logit_tokens": 0})
                yield model, cid, rec["phase"], sets, rec["eager"]["wall_ms"]["median"] * 1e-3


def _source(model: str, shrunk: bool, tmp: Path) -> str:
    if not shrunk:
        return f"hf:{model}"
    measure.KEEP_LAYERS = True
    cfg = measure.load_config(model, tiny=True).to_dict()
    f = tmp / f"{model}-keep.json"
    f.write_text(json.dumps(cfg))
    return f"hf:{f}"


def predictions(path: str, hw, shrunk: bool, module_call_s: float, tmp: Path):
    """Rows (model, case, measured s, predicted s at module_call_s, predicted at 0, modules)."""
    doc = json.loads(Path(path).read_text())
    hw = _calibrated(hw, doc)
    rows = []
    for model, cid, phase, sets, measured_s in _cases(doc):
        graph = source.load(_source(model, shrunk, tmp), sets, phase)
        at0 = api.predict_graph(graph, replace(hw, module_call_s=0.0), "unfused", "eager").totals.time_s
        at1 = api.predict_graph(graph, replace(hw, module_call_s=1e-6), "unfused", "eager").totals.time_s
        fit = api.predict_graph(graph, replace(hw, module_call_s=module_call_s), "unfused",
                                "eager").totals.time_s
        rows.append((model, cid, measured_s, fit, at0, (at1 - at0) / 1e-6))
    return rows


def main(keep_path: str, full_path: str) -> None:
    hw = api.load_hardware("h200")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cal = predictions(keep_path, hw, True, 0.0, tmp)
        # the module cost that closes each shrunk step's gap, per module call
        per_case = [(m_s - at0) / mods for _, _, m_s, _, at0, mods in cal if mods]
        module_call_s = statistics.median(per_case)
        print(f"calibration (shrunk, all layers): {len(cal)} steps")
        for (model, cid, m_s, _, at0, mods), x in zip(cal, per_case):
            print(f"  {model:14s} {cid:18s} measured {m_s * 1e3:7.2f} ms  without modules "
                  f"{at0 * 1e3:7.2f} ms  {mods:6.0f} module calls  -> {x * 1e6:5.1f} us each")
        print(f"module_call_us = {module_call_s * 1e6:.1f} (median)")
        val = predictions(full_path, hw, False, module_call_s, tmp)
        errs = []
        print("validation (full size, same lease):")
        for model, cid, m_s, fit, at0, _ in val:
            errs.append(fit / m_s - 1)
            print(f"  {model:14s} {cid:18s} measured {m_s * 1e3:7.2f} ms  predicted {fit * 1e3:7.2f} ms "
                  f"({errs[-1]:+.1%}; without modules {at0 / m_s - 1:+.1%})")
        print(f"median |error| {statistics.median(abs(e) for e in errs):.1%}, "
              f"worst {max(errs, key=abs):+.1%}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
