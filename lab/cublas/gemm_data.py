"""Every cuBLAS GEMM the committed torch-suite runs profiled, with its shape and the model's
price: the data the cuBLAS GEMM model is fitted (calibration cases) and checked (validation
cases) on.

    python lab/cublas/gemm_data.py reports/validation/torch/h200-2026-12-04-r9.json > rows.tsv

A case's measured kernels are paired in order with its predicted ones; a GEMM's Memset and
split-K reduction are part of that GEMM's time (one library call).
"""
from __future__ import annotations

import json
import re
import sys

from rooflab import api
from rooflab.ops.gemm import gemm_tiles, mm_dims
from rooflab.trace import trace_module
from rooflab.validate import torch_suite


def library_kernels(measured: list[dict]) -> list[tuple[str, float]]:
    """(name, µs) per library call: a Memset joins the next kernel, a splitKreduce the one
    before."""
    out: list[list] = []
    pending = 0.0
    for k in measured:
        name, us = k["name"], k["us"]
        if name.startswith("Memset"):
            pending += us
        elif "splitKreduce" in name and out:
            out[-1][1] += us
            out[-1][0] += "+reduce"
        else:
            out.append([name, us + pending])
            pending = 0.0
    return [tuple(x) for x in out]


def rows(doc: dict, hw, run: str):
    cases = {c.id: c for c in torch_suite.select()}
    for rec in doc["cases"]:
        case = cases.get(rec["id"])
        if case is None or not rec.get("kernels"):
            continue
        graph = trace_module(case.build(), case.example_inputs(), name=case.id)
        pred = api.predict_graph(graph, hw, "unfused", "graph")
        meas = library_kernels(rec["kernels"])
        if len(meas) != len(pred.kernels):
            continue
        for k, (name, us) in zip(pred.kernels, meas):
            op = graph.op(k.ops[0]) if hasattr(graph, "op") else None
            op = next(o for o in graph.ops if o.name == k.ops[0])
            if op.kind != "matmul":
                continue
            a, b = (graph.tensors[t] for t in op.inputs[:2])
            batch, m, n, kk = mm_dims(op, a, b)
            gm, gn, gb = gemm_tiles(batch, m, n, b)
            tile = re.search(r"_(\d+)x(\d+)_(\d+)x(\d+)_", name)
            yield dict(run=run, case=case.id, split=case.split, m=gm, n=gn, k=kk, batch=gb,
                       dtype=a.dtype.name, bias=len(op.inputs) > 2 or "bias" in name,
                       us=round(us, 3), pred_us=round(k.time_s * 1e6, 3),
                       kernel=name[:70], tile=f"{tile[1]}x{tile[2]}" if tile else "",
                       splitk="splitK" in name or "+reduce" in name)


if __name__ == "__main__":
    hw = api.load_hardware("hardware_specs/measured/h200.yaml")
    first = True
    for path in sys.argv[1:]:
        for r in rows(json.load(open(path)), hw, path.rsplit("/", 1)[-1]):
            if first:
                print("\t".join(r))
                first = False
            print("\t".join(str(v) for v in r.values()))
