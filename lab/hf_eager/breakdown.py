"""Where a Hugging Face step's device time goes, measured against predicted, by kind of kernel.

    python lab/hf_eager/breakdown.py reports/hf_eager/h200-2026-12-04.json \
        [--spec hardware_specs/measured/h200.yaml] [--models llama3-8b] [--cases decode_b64_ctx4096]

Measured: the profiler's kernel times of one eager step (measure.py --part profile), summed by
the top-level ATen op that launched them. Predicted: the traced step's `unfused` kernels on the
spec, their busy time plus what a CUDA-graph replay adds per kernel, summed by op kind. Both are
grouped into the same few classes (GEMM, attention, the repeat_kv copy, KV-cache write, the
rest), so that a step's error can be read off by class.
"""

from __future__ import annotations

import argparse
import json

from rooflab import api
from rooflab.trace import source

# top-level ATen op (measured) and rooflab op kind (predicted) -> class
_MEASURED = {"aten::linear": "gemm", "aten::matmul": "gemm", "aten::mm": "gemm",
             "aten::bmm": "gemm", "aten::_grouped_mm": "gemm",
             "aten::scaled_dot_product_attention": "attention",
             "aten::reshape": "copy", "aten::index_copy_": "kv_write"}
_PREDICTED = {"matmul": "gemm", "grouped_matmul": "gemm", "attention": "attention",
              "copy": "copy", "index_copy": "kv_write"}
CLASSES = ("gemm", "attention", "copy", "kv_write", "other")


def measured_ms(profile: dict) -> dict[str, float]:
    out = dict.fromkeys(CLASSES, 0.0)
    for op, rec in profile["per_op"].items():
        out[_MEASURED.get(op, "other")] += rec.get("kernel_us", 0.0) / 1e3
    return out


def predicted_ms(pred) -> dict[str, float]:
    out = dict.fromkeys(CLASSES, 0.0)
    for k in pred.kernels:
        out[_PREDICTED.get(k.kinds[0], "other")] += k.time_s * 1e3
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("profile")
    ap.add_argument("--spec", default="hardware_specs/measured/h200.yaml")
    ap.add_argument("--models")
    ap.add_argument("--cases")
    a = ap.parse_args()
    doc = json.load(open(a.profile))
    hw = api.load_hardware(a.spec)
    print(f"{'case':34s} " + " ".join(f"{c:>17s}" for c in CLASSES) + f" {'total':>17s}")
    for name, m in doc["models"].items():
        if a.models and name not in a.models.split(","):
            continue
        for cid, rec in m["cases"].items():
            if a.cases and cid not in a.cases.split(",") or "per_op" not in rec.get("profile", {}):
                continue
            sets = ({"batch": rec["batch"], "context": rec["context"]} if rec["phase"] == "decode"
                    else {"batch": rec["batch"], "seq": rec["seq"], "logit_tokens": 0})
            graph = source.load(f"hf:{name}", sets, rec["phase"])
            pred = predicted_ms(api.predict_graph(graph, hw, "unfused", "graph"))
            meas = measured_ms(rec["profile"])
            cells = [f"{pred[c]:7.2f}/{meas[c]:<7.2f}" + ("  " if not meas[c] else
                     f"{pred[c] / meas[c] - 1:+4.0%}"[-4:]) for c in CLASSES]
            tp, tm = sum(pred.values()), sum(meas.values())
            print(f"{name + ' ' + cid:34s} " + " ".join(f"{x:>17s}" for x in cells)
                  + f" {tp:7.2f}/{tm:<7.2f}{tp / tm - 1:+4.0%}", flush=True)


if __name__ == "__main__":
    main()
