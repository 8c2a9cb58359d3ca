"""Shape study: how ATen's row, column and softmax kernels' times move with shape at fixed bytes.

    python lab/torch_kernels/shape_study.py --out $OUT/shape-study.json
    python lab/torch_kernels/shape_study.py --report lab/leases/<lease>/shape-study.json
    python lab/torch_kernels/shape_study.py --report <that json> --predict <measured spec>

Questions (each a systematic error of the torch suite on every lease, see NOTES.md here):
  wide_row   softmax rows of 4097..9216 (cunn_SoftMaxForwardReg, 5..9 values a thread): is
             the time per element a function of the row length, and which?
  long_row   softmax rows of 128256 (cunn_SoftMaxForward, a block a row): how does the time
             grow with rows from one to four waves of 132 SMs?
  near_l2    norms, row sums and adds of (rows, 4096) bf16 around the L2 capacity: where does
             the L2's help to a repeated call stop?
  column     sums over dim 0: the time against rows and columns.
Each kernel time is the profiler's, averaged over 10 profiled calls, after
warm-up; L2 is not flushed (as in the suite). Writes one JSON with provenance.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
import torch.nn.functional as F

from rooflab.validate import torch_run

CALLS = 10      # profiled calls per case, after 3 warm-up calls


def cases():
    bf = torch.bfloat16
    for row in (3072, 4096, 4608, 5120, 6144, 7168, 8192, 9216):
        for rows in (2048, 8192):
            yield "wide_row", f"softmax_{rows}x{row}", (rows, row), lambda x: x.softmax(-1)
    for rows in (16, 32, 64, 96, 128, 160, 192, 256, 320, 384, 512):
        yield "long_row", f"softmax_{rows}x128256", (rows, 128256), lambda x: x.softmax(-1)
    w = {}
    for rows in (512, 1024, 1536, 2048, 2560, 3072, 4096, 6144, 8192, 16384):
        shape = (rows, 4096)
        yield "near_l2", f"rms_norm_{rows}x4096", shape, \
            lambda x: F.rms_norm(x, (4096,), w.setdefault(x.device.type, torch.ones(
                4096, dtype=bf, device=x.device)))
        yield "near_l2", f"layer_norm_{rows}x4096", shape, lambda x: F.layer_norm(x, (4096,))
        yield "near_l2", f"sum_row_{rows}x4096", shape, lambda x: x.sum(-1)
        yield "near_l2", f"add_{rows}x4096", shape, lambda x: x + x
    for cols in (1024, 4096, 16384):
        for elems in (2**22, 2**23, 2**24, 2**25, 2**26, 2**27):
            rows = elems // cols
            yield "column", f"sum_col_{rows}x{cols}", (rows, cols), lambda x: x.sum(0)


def report(path: str) -> None:
    """Each case's time and its achieved rate: bytes read and written (in the storage dtype)
    per second, and for softmax the µs per million elements."""
    doc = json.load(open(path))
    print(doc["provenance"]["gpu"], doc["provenance"]["date_utc"])
    for c in doc["cases"]:
        rows, cols = c["shape"]
        elems = rows * cols
        out = {"sum_col": cols, "sum_row": rows}.get(c["id"].split("_")[0] + "_"
                                                     + c["id"].split("_")[1], elems)
        moved = 2 * (elems + out)
        print(f"{c['group']:9s} {c['id']:26s} {c['kernel_us']:9.2f} us {moved / 1e6:9.2f} MB "
              f"{moved / c['kernel_us'] / 1e6:6.2f} TB/s {c['kernel_us'] / elems * 1e6:7.2f} "
              f"us/M elts  {len(c['kernels'])} kernels {c['kernels'][-1]['name'][:50]}")


def predicted(path: str, spec: str) -> None:
    """Each case's kernel time against the model's on `spec` (a measured spec of that GPU):
    the study's calls traced on meta tensors and predicted `unfused`, per group the median
    |error|."""
    import statistics

    from rooflab import api
    from rooflab.trace import trace_module
    hw = api.load_hardware(spec)
    doc = json.load(open(path))
    calls = {name: fn for _, name, _, fn in cases()}
    errors: dict[str, list[float]] = {}
    for c in doc["cases"]:
        fn = calls[c["id"]]
        module = type("Call", (torch.nn.Module,), {"forward": lambda self, x, fn=fn: fn(x)})()
        x = torch.empty(c["shape"], dtype=torch.bfloat16, device="meta")
        graph = trace_module(module, (x,), name=c["id"])
        p = api.predict_graph(graph, hw, "unfused", "graph")
        us = sum(k.time_s - k.launch_s for k in p.kernels) * 1e6
        err = us / c["kernel_us"] - 1
        errors.setdefault(c["group"], []).append(abs(err))
        print(f"{c['group']:9s} {c['id']:26s} {c['kernel_us']:9.2f} {us:9.2f} {err * 100:+7.1f}%"
              f"  {p.kernels[-1].family}")
    for group, errs in errors.items():
        print(f"{group}: median |error| {statistics.median(errs) * 100:.1f} % over {len(errs)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--report")
    ap.add_argument("--predict", metavar="SPEC", help="with --report: compare with the model")
    a = ap.parse_args()
    if a.report and a.predict:
        return predicted(a.report, a.predict)
    if a.report:
        return report(a.report)
    out = {"schema": "rooflab.shape-study/1",
           "provenance": torch_run.provenance(torch, "cuda", " ".join(sys.argv)), "cases": []}
    for group, name, shape, fn in cases():
        x = torch.randn(shape, dtype=torch.bfloat16, device="cuda")
        call = lambda: fn(x)       # noqa: E731
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        events = torch_run._profile(torch, call, CALLS)
        kernels = torch_run.per_call_kernels(events, CALLS) or [
            {"name": n, "us": round(d / CALLS, 3)} for n, _, d in events]
        us = sum(k["us"] for k in kernels)
        out["cases"].append({"group": group, "id": name, "shape": list(shape),
                             "kernel_us": round(us, 3), "kernels": kernels})
        print(f"{group:9s} {name:28s} {us:9.2f} us  {len(kernels)} kernels", flush=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
