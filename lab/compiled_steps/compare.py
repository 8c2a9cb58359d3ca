"""Compare the HF decode steps that measure.py timed under torch.compile with rooflab's
predictions, on the host figures of the same lease (no GPU needed):

    python lab/compiled_steps/compare.py RUN_DIR SPEC.yaml

RUN_DIR holds run.sh's files: suite.json (the torch suite's host-bound compiled cases, fitted
by torch_compare.fit_compiled_host as `rooflab validate` does) and one <model>_b<batch>.json per
step. Per step: Inductor's kernels (Triton, extern) measured against the `inductor` schedule's,
and the eager, CUDA-graph, compiled and reduce-overhead times against unfused/eager,
unfused/graph, inductor/compiled and inductor/reduce-overhead, on SPEC with the lease's host figures
(torch.compile's and cudagraph trees' fitted on the suite's cases; for the eager step the
spec's transformers host figures with the lease's dispatch costs).
"""
import json
import sys
from dataclasses import replace
from pathlib import Path

from rooflab import api
from rooflab.validate import torch_compare as tc


def step_rows(run_dir: Path, hw, spec_hw) -> list[dict]:
    """Per measured step: Inductor's kernel counts and the four times against their
    predictions on `hw`; the eager step on `spec_hw` (its transformers host figures) with the
    dispatch costs the step's process measured, as rooflab.validate.steps compares Hugging
    Face steps."""
    rows = []
    for path in sorted(run_dir.glob("*_b*.json")):
        m = json.loads(path.read_text())
        graph = api.load_workload(f"hf:{m['model']}", {"batch": m["batch"],
                                                       "context": m["context"]}, "decode")
        host = m["host"]            # measured in the step's own process
        eager_hw = replace(spec_hw.with_eager_dispatch(host["tiny_op_dispatch_us"] * 1e-6),
                           gemm_dispatch_s=host["mm_dispatch_us"] * 1e-6,
                           view_dispatch_s=host["view_dispatch_us"] * 1e-6)
        p = {(s, l): api.predict_graph(graph, eager_hw if l == "eager" else hw, s, l)
             for s, l in (("unfused", "eager"), ("unfused", "graph"),
                          ("inductor", "compiled"), ("inductor", "reduce-overhead"))}
        row = {"step": f"{m['model']} b{m['batch']} ctx{m['context']}",
               "kernels": tc.inductor_kernel_counts(m.get("default", {}).get("kernels", [])),
               "kernels_predicted": p["inductor", "compiled"].schedule.triton_and_extern(),
               "graphs": m.get("default", {}).get("graphs")}
        for key, (mode, pred) in {"eager": ("eager", p["unfused", "eager"]),
                                  "graph": ("graph", p["unfused", "graph"]),
                                  "compiled": ("default", p["inductor", "compiled"]),
                                  "reduce-overhead": ("reduce-overhead",
                                                      p["inductor", "reduce-overhead"])}.items():
            measured = (m.get(mode) or {}).get("min_us")
            row[key] = (measured, pred.totals.time_s * 1e6,
                        pred.totals.host_s * 1e6, pred.totals.gpu_s * 1e6)
        rows.append(row)
    return rows


def main(run_dir: str, spec: str) -> None:
    run = Path(run_dir)
    doc = json.loads((run / "suite.json").read_text())
    fit = tc.fit_compiled_host(doc)
    print("lease host:", {k: doc["host"][k] for k in ("tiny_op_dispatch_us", "sync_us",
                                                       "compiled_call_us")})
    print("compiled fit (µs):", {k: round(v, 2) for k, v in fit.items()})
    spec_hw = api.load_hardware(spec)
    hw = tc.calibrated(spec_hw, doc["host"], fit)
    trees = tc.fit_compiled_graph_call(doc, hw, tc.traced_cases(doc)[1])
    print("cudagraph trees' call (µs):", trees and round(trees[0] * 1e6, 2), "on",
          trees and trees[1], "cases")
    hw = replace(hw, compiled_graph_call_s=trees[0] if trees else None)
    for r in step_rows(run, hw, spec_hw):
        print(f"\n{r['step']}: Inductor kernels (triton, extern) measured {r['kernels']}, "
              f"predicted {r['kernels_predicted']}; dynamo graphs {r['graphs']}")
        for key in ("eager", "graph", "compiled", "reduce-overhead"):
            measured, pred, host, gpu = r[key]
            err = f"{(pred - measured) / measured:+.1%}" if measured else "-"
            print(f"  {key:16s} measured {measured or 0:9.1f} µs  predicted {pred:9.1f} "
                  f"(host {host:8.1f}, GPU {gpu:8.1f})  {err}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
