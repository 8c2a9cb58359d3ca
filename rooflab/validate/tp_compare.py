"""A measured tensor-parallel step (a rooflab.tp-run/1 document, rooflab.validate.tp_run) against
rooflab's prediction of the same step: the hf: model traced at the same degree (`--set tp`),
priced unfused as a CUDA-graph replay and eagerly.

Three figures per case, for the graph replay (host-independent) and for the eager step:
  total    the step with its collectives;
  compute  the step with every collective skipped, against the prediction of the same graph
           without its collective ops;
  link     total - compute, measured against predicted (the eager host model is not additive
           over kernels, so the link is a difference of two predictions, as it is of two
           measurements).
The spec's collective paths lose their switch paths when the run had NVLink multicast off (as
collective_compare does), and eager predictions use the run's own dispatch cost, taken in the
same processes (host-bound eager times move between machines).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from rooflab.collectives import KINDS, without_switch
from rooflab.errors import RooflabError
from rooflab.hardware import Hardware
from rooflab.validate.common import has_schema

SCHEMA = "rooflab.tp-run/1"


@dataclass(frozen=True)
class TPComparison:
    """One case at one degree; times in seconds (None where the run has no graph times)."""
    tp: int
    batch: int
    tokens: int
    mode: str                    # "graph" or "eager"
    measured_s: float
    measured_compute_s: float
    predicted_s: float
    predicted_link_s: float

    @property
    def measured_link_s(self) -> float:
        return self.measured_s - self.measured_compute_s

    @property
    def predicted_compute_s(self) -> float:
        return self.predicted_s - self.predicted_link_s

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1

    @property
    def compute_error(self) -> float:
        return self.predicted_compute_s / self.measured_compute_s - 1

    @property
    def link_error(self) -> float | None:
        """None where the measured link time is not positive (lost in the step's noise)."""
        return (self.predicted_link_s / self.measured_link_s - 1
                if self.measured_link_s > 0 else None)


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0


def check(doc: dict, where: str = "run") -> dict:
    """`doc` if it is a tensor-parallel run document; RooflabError naming what is wrong."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise RooflabError(f"{where}: not a tensor-parallel run ({SCHEMA})")
    if doc.get("phase") not in ("decode", "prefill") or not isinstance(doc.get("source"), str):
        raise RooflabError(f"{where}: needs its source (a model) and phase (decode or prefill)")
    layers = doc.get("layers", 0)
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 0:
        raise RooflabError(f"{where}: layers must be a number of decoder layers (0: all)")
    if not isinstance(doc.get("provenance"), dict):
        raise RooflabError(f"{where}: provenance must be a mapping")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise RooflabError(f"{where}: no runs")
    for i, r in enumerate(runs):
        if not isinstance(r, dict) or not isinstance(r.get("tp"), int) or r["tp"] < 1:
            raise RooflabError(f"{where}: runs[{i}].tp must be a GPU count")
        if "dispatch_s" in r and not _positive(r["dispatch_s"]):
            raise RooflabError(f"{where}: runs[{i}].dispatch_s must be a positive number")
        if not isinstance(r.get("rows"), list):
            raise RooflabError(f"{where}: runs[{i}].rows must be a list")
        for j, row in enumerate(r["rows"]):
            if not isinstance(row, dict) or not all(
                    _positive(row.get(k)) for k in ("batch", "tokens", "eager_s", "eager_s_compute")):
                raise RooflabError(f"{where}: runs[{i}].rows[{j}]: batch, tokens, eager_s and "
                                   "eager_s_compute must be positive numbers")
            bad = [k for k in ("graph_s", "graph_s_compute") if k in row and not _positive(row[k])]
            if bad:
                raise RooflabError(f"{where}: runs[{i}].rows[{j}].{bad[0]} must be a positive number")
    return doc


def _without_collectives(graph):
    """`graph` with its collective ops taken out, their readers reading the collective's
    input again: the step a run times with every collective skipped."""
    back = {op.outputs[0]: op.inputs[0] for op in graph.ops if op.kind in KINDS}
    ops = tuple(replace(op, inputs=tuple(back.get(t, t) for t in op.inputs))
                for op in graph.ops if op.kind not in KINDS)
    return replace(graph, ops=ops, outputs=frozenset(back.get(t, t) for t in graph.outputs),
                    tensors={n: t for n, t in graph.tensors.items() if n not in back})


def compare(doc: dict, hw: Hardware) -> list[TPComparison]:
    """Every measured case of `doc` against the prediction on `hw` (see the module docstring);
    needs torch and transformers (the model is traced)."""
    from rooflab import api
    from rooflab.trace import source
    check(doc)
    if doc["provenance"].get("multicast_off"):
        hw = replace(hw, collective_paths=without_switch(hw.collective_paths))
    decode = doc["phase"] == "decode"
    out = []
    for r in doc["runs"]:
        eager_hw = hw.with_eager_dispatch(r["dispatch_s"]) if r.get("dispatch_s") else hw
        for row in r["rows"]:
            # a prefill is timed without logits_to_keep: it computes every position's logits
            sets = ({"batch": row["batch"], "context": row["tokens"]} if decode else
                    {"batch": row["batch"], "seq": row["tokens"], "logit_tokens": 0})
            if doc.get("layers"):
                sets["layers"] = doc["layers"]
            graph = source.load(f"hf:{doc['source']}", {**sets, "tp": r["tp"]}, doc["phase"])
            alone = _without_collectives(graph)
            for mode, spec in (("graph", hw), ("eager", eager_hw)):
                if f"{mode}_s" not in row or f"{mode}_s_compute" not in row:
                    continue            # no graph times: a CPU run, or a capture that failed
                total = api.predict_graph(graph, spec, "unfused", mode).totals.time_s
                compute = api.predict_graph(alone, spec, "unfused", mode).totals.time_s
                out.append(TPComparison(r["tp"], row["batch"], row["tokens"], mode,
                                        row[f"{mode}_s"], row[f"{mode}_s_compute"],
                                        total, total - compute))
    return out


def summary(rows: list[TPComparison]) -> dict[str, float]:
    """Median |error| by mode and figure: {"graph total": ..., "graph link": ..., ...}."""
    out = {}
    for mode in ("graph", "eager"):
        mine = [r for r in rows if r.mode == mode]
        if not mine:
            continue
        out[f"{mode} total"] = statistics.median(abs(r.error) for r in mine)
        out[f"{mode} compute"] = statistics.median(abs(r.compute_error) for r in mine)
        links = [abs(r.link_error) for r in mine if r.link_error is not None]
        if links:
            out[f"{mode} link"] = statistics.median(links)
    return out


def render(rows: list[TPComparison]) -> str:
    """A table of measured against predicted per case and mode, then the medians."""
    lines = [f"{'TP':>3}{'batch':>6}{'tokens':>7}  {'mode':<6}{'measured ms':>12}{'model ms':>10}"
             f"{'error':>8}{'link ms':>9}{'model':>8}{'error':>8}"]
    for r in rows:
        link_err = f"{r.link_error:+.1%}" if r.link_error is not None else "n/a"
        lines.append(f"{r.tp:>3}{r.batch:>6}{r.tokens:>7}  {r.mode:<6}{r.measured_s * 1e3:>12.3f}"
                     f"{r.predicted_s * 1e3:>10.3f}{r.error:>+8.1%}{r.measured_link_s * 1e3:>9.3f}"
                     f"{r.predicted_link_s * 1e3:>8.3f}{link_err:>8}")
    lines.append("median |error|: " + ", ".join(f"{k} {v:.1%}" for k, v in summary(rows).items()))
    return "\n".join(lines)


def is_run_file(path: str | Path) -> bool:
    """Whether `path` is a tensor-parallel run file (its schema is SCHEMA)."""
    return has_schema(path, SCHEMA)


def load(path: str | Path) -> dict:
    """The run document in `path`; RooflabError naming the file when it is not one."""
    try:
        return check(json.loads(Path(path).read_text()), str(path))
    except (OSError, ValueError) as e:
        raise RooflabError(f"cannot read a tensor-parallel run ({type(e).__name__}: {e})",
                           file=str(path)) from None
