"""The answer of `rooflab serve` and `rooflab sweep`: one row per serving configuration.

A `ServeTable` holds columns (numpy arrays of equal length, one element per configuration)
plus what was asked. Times are seconds, memory bytes, rates tokens per second. A configuration
that does not fit in HBM keeps its memory columns, has `fits` False, a `why` line ("needs
154 GB of 80 GB: KV cache 137 GB"), and NaN in every time and rate column: it is not priced as
if it did fit.

Columns (COLUMNS lists them in order, with units; docs/serving.md documents the JSON form):
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field

import numpy as np

# name -> (unit, meaning). The order is the CSV's and the JSON's.
COLUMNS: dict[str, tuple[str, str]] = {
    "gpu": ("", "hardware spec name"),
    "schedule": ("", "fusion schedule of both phases (unfused, fused, ...)"),
    "launch": ("", "launch mode of both phases (eager, graph)"),
    "variant": ("", "the --set values of this configuration beyond sizes (e.g. dtype=fp8)"),
    "gpus": ("GPUs", "GPUs of the deployment: tensor x expert x data-parallel degrees"),
    "batch": ("sequences", "requests served together"),
    "input_tokens": ("tokens", "prompt length of every request"),
    "output_tokens": ("tokens", "tokens generated per request (the first by the prefill)"),
    "fits": ("", "weights, KV cache, activations and workspace fit in each GPU's HBM"),
    "weights_bytes": ("B", "model weights held on each GPU"),
    "kv_cache_bytes": ("B", "each GPU's KV cache at input + output tokens for the whole batch"),
    "activation_bytes": ("B", "largest live activations of a prefill or decode step"),
    "workspace_bytes": ("B", "CUDA context, library workspaces and allocator reserve"),
    "memory_bytes": ("B", "sum of the four above"),
    "hbm_bytes": ("B", "the memory one process can allocate on the GPU"),
    "ttft_s": ("s", "time to first token: the prefill of the batch's prompts"),
    "tpot_s": ("s", "time per output token: mean decode step over the output"),
    "latency_s": ("s", "request latency: ttft + (output - 1) * tpot"),
    "tokens_per_s": ("tokens/s", "output tokens per second per GPU (batch * output / latency / gpus)"),
    "tokens_per_s_per_request": ("tokens/s", "output tokens per second one request sees"),
    "total_tokens_per_s": ("tokens/s", "output tokens per second of the whole deployment "
                           "(tokens_per_s * gpus: every expert-parallel group and data-parallel "
                           "replica serving its own batch)"),
    "why": ("", "why a configuration does not fit (empty when it does)"),
}
_TEXT = ("gpu", "schedule", "launch", "variant", "why")
_BOOL = ("fits",)


@dataclass(frozen=True)
class ServeTable:
    """Columns over configurations, and what produced them (`meta`: model, phases, method)."""
    columns: dict[str, np.ndarray]
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        missing = [c for c in COLUMNS if c not in self.columns]
        if missing:
            raise ValueError(f"ServeTable lacks columns {missing}")
        lengths = {len(v) for v in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"ServeTable columns differ in length: {sorted(lengths)}")

    def __len__(self) -> int:
        return len(self.columns["batch"])

    def rows(self) -> list[dict]:
        """One dict per configuration, plain Python values (NaN where not priced)."""
        out = []
        for i in range(len(self)):
            row = {}
            for c in COLUMNS:
                v = self.columns[c][i]
                row[c] = (str(v) if c in _TEXT else bool(v) if c in _BOOL
                          else int(v) if c.endswith("_bytes") or c in ("gpus", "batch",
                                                                       "input_tokens",
                                                                       "output_tokens")
                          else float(v))
            out.append(row)
        return out

    def select(self, keep: np.ndarray) -> "ServeTable":
        """The rows where `keep` (a boolean array, or indices) holds."""
        return ServeTable({k: v[keep] for k, v in self.columns.items()}, self.meta)

    def to_csv(self) -> str:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(COLUMNS)
        for row in self.rows():
            w.writerow(["" if isinstance(v, float) and math.isnan(v) else v
                        for v in row.values()])
        return buf.getvalue()

    def to_json(self) -> str:
        """{"schema": "rooflab.serve/1", "meta": ..., "units": ..., "rows": [...]}; NaN
        becomes null."""
        rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in r.items()} for r in self.rows()]
        return json.dumps({"schema": "rooflab.serve/1", "meta": self.meta,
                           "units": {k: u for k, (u, _) in COLUMNS.items()}, "rows": rows},
                          indent=1)


def concat(tables: list[ServeTable]) -> ServeTable:
    """The rows of every table, in order (meta of the first)."""
    return ServeTable({c: np.concatenate([t.columns[c] for t in tables]) for c in COLUMNS},
                      tables[0].meta if tables else {})


def pareto(latency_s: np.ndarray, tokens_per_s: np.ndarray) -> np.ndarray:
    """Boolean mask of the configurations no other beats on both: lower latency and higher
    throughput (NaN rows are never on the front)."""
    ok = ~(np.isnan(latency_s) | np.isnan(tokens_per_s))
    front = np.zeros(len(latency_s), dtype=bool)
    best = -np.inf
    for i in sorted(np.flatnonzero(ok), key=lambda i: (latency_s[i], -tokens_per_s[i])):
        if tokens_per_s[i] > best:
            front[i], best = True, tokens_per_s[i]
    return front
