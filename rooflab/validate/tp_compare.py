"""A measured tensor-parallel step (a rooflab.tp-run/1 document, rooflab.validate.tp_run) against
rooflab's prediction of the same step: the hf: model traced at the same degree (`--set tp`),
priced unfused as a CUDA-graph replay and eagerly.

Three figures per case, for the graph replay (host-independent) and for the eager step:
  total    the step with its collectives;
  compute  the step with every collective skipped, against the prediction less its collectives;
  link     total - compute measured, against the collectives' predicted time.
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


def check(doc: dict, where: str = "run") -> dict:
    """`doc` if it is a tensor-parallel run document; RooflabError naming what is wrong."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise RooflabError(f"{where}: not a tensor-parallel run ({SCHEMA})")
    if doc.get("phase") not in ("decode", "prefill") or not isinstance(doc.get("source"), str):
        raise RooflabError(f"{where}: needs its source (a model) and phase (decode or prefill)")
    for i, r in enumerate(doc.get("runs") or []):
        if not isinstance(r.get("tp"), int) or r["tp"] < 1:
            raise RooflabError(f"{where}: runs[{i}].tp must be a GPU count")
        for j, row in enumerate(r.get("rows") or []):
            if not all(isinstance(row.get(k), (int, float)) and row[k] > 0
                       for k in ("batch", "tokens", "eager_s", "eager_s_compute")):
                raise RooflabError(f"{where}: runs[{i}].rows[{j}]: batch, tokens, eager_s and "
                                   "eager_s_compute must be positive numbers")
    if not doc.get("runs"):
        raise RooflabError(f"{where}: no runs")
    return doc


def _link_s(pred) -> float:
    return sum(k.time_s for k in pred.kernels if set(k.kinds) & set(KINDS))


def compare(doc: dict, hw: Hardware) -> list[TPComparison]:
    """Every measured case of `doc` against the prediction on `hw` (see the module docstring);
    needs torch and transformers (the model is traced)."""
    from rooflab import api
    from rooflab.trace import source
    check(doc)
    if doc["provenance"].get("multicast_off"):
        hw = replace(hw, collective_paths=without_switch(hw.collective_paths))
    size = "context" if doc["phase"] == "decode" else "seq"
    out = []
    for r in doc["runs"]:
        eager_hw = replace(hw, eager_dispatch_s=r["dispatch_s"]) if r.get("dispatch_s") else hw
        for row in r["rows"]:
            sets = {"batch": row["batch"], size: row["tokens"], "tp": r["tp"]}
            graph = source.load(f"hf:{doc['source']}", sets, doc["phase"])
            for mode, spec in (("graph", hw), ("eager", eager_hw)):
                if f"{mode}_s" not in row or f"{mode}_s_compute" not in row:
                    continue            # no graph times: a CPU run, or a capture that failed
                pred = api.predict_graph(graph, spec, "unfused", mode)
                out.append(TPComparison(r["tp"], row["batch"], row["tokens"], mode,
                                        row[f"{mode}_s"], row[f"{mode}_s_compute"],
                                        pred.totals.time_s, _link_s(pred)))
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
    try:
        with open(path) as f:
            head = f.read(4096)
    except OSError:
        return False
    return f'"schema": "{SCHEMA}"' in head


def load(path: str | Path) -> dict:
    """The run document in `path`; RooflabError naming the file when it is not one."""
    try:
        return check(json.loads(Path(path).read_text()), str(path))
    except (OSError, ValueError) as e:
        raise RooflabError(f"cannot read a tensor-parallel run ({type(e).__name__}: {e})",
                           file=str(path)) from None
