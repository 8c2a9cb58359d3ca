"""Compare the HF decode steps that measure.py timed under torch.compile with rooflab's
predictions, on the host figures of the same lease (no GPU needed):

    python lab/compiled_steps/compare.py RUN_DIR SPEC.yaml

RUN_DIR holds run.sh's files: suite.json (the torch suite's host-bound compiled cases, fitted
by torch_compare.fit_compiled_host as `rooflab validate` does) and one <model>_b<batch>.json per
step. Per step: Inductor's kernels (Triton, extern) measured against the `inductor` schedule's,
and the eager, CUDA-graph, compiled and reduce-overhead times against unfused/eager,
unfused/graph, inductor/compiled and inductor/graph, all on SPEC with the lease's host figures.
"""
import json
import sys
from pathlib import Path

from rooflab import api
from rooflab.kernel_families import EXTERN_ROLES
from rooflab.validate import torch_compare as tc


def step_rows(run_dir: Path, hw) -> list[dict]:
    rows = []
    for path in sorted(run_dir.glob("*_b*.json")):
        m = json.loads(path.read_text())
        graph = api.load_workload(f"hf:{m['model']}", {"batch": m["batch"],
                                                       "context": m["context"]}, "decode")
        p = {(s, l): api.predict_graph(graph, hw, s, l)
             for s, l in (("unfused", "eager"), ("unfused", "graph"),
                          ("inductor", "compiled"), ("inductor", "graph"))}
        ks = p["inductor", "compiled"].schedule.kernels
        row = {"step": f"{m['model']} b{m['batch']} ctx{m['context']}",
               "kernels": tc.inductor_kernel_counts(m.get("default", {}).get("kernels", [])),
               "kernels_predicted": (sum(k.launches for k in ks if k.anchor not in EXTERN_ROLES),
                                     sum(k.anchor in EXTERN_ROLES for k in ks)),
               "graphs": m.get("default", {}).get("graphs")}
        for key, (mode, pred) in {"eager": ("eager", p["unfused", "eager"]),
                                  "graph": ("graph", p["unfused", "graph"]),
                                  "compiled": ("default", p["inductor", "compiled"]),
                                  "reduce-overhead": ("reduce-overhead",
                                                      p["inductor", "graph"])}.items():
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
    hw = tc.calibrated(api.load_hardware(spec), doc["host"], fit)
    for r in step_rows(run, hw):
        print(f"\n{r['step']}: Inductor kernels (triton, extern) measured {r['kernels']}, "
              f"predicted {r['kernels_predicted']}; dynamo graphs {r['graphs']}")
        for key in ("eager", "graph", "compiled", "reduce-overhead"):
            measured, pred, host, gpu = r[key]
            err = f"{(pred - measured) / measured:+.1%}" if measured else "-"
            print(f"  {key:16s} measured {measured or 0:9.1f} µs  predicted {pred:9.1f} "
                  f"(host {host:8.1f}, GPU {gpu:8.1f})  {err}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
