"""Measured generation (lab/serve_h200/measure.py) against `rooflab serve`'s predictions.

A run file holds, per Hugging Face model, batch and prompt length, the TTFT and TPOT of greedy
generation with transformers' StaticCache of input + output tokens, eager and as CUDA-graph
replays, plus the run's own eager dispatch cost (an in-place add on one element, the same
process). Each case is predicted as it ran: the traced steps under the `unfused` schedule (what
eager PyTorch launches), the eager or graph launch mode, `kv="static"` (every decode step
attends over the whole input + output cache), on the spec given, with the run's dispatch cost.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from rooflab.errors import RooflabError
from rooflab.hardware import Hardware
from rooflab.validate.common import PAIRS_LEGEND

MODES = ("eager", "graph")


@dataclass(frozen=True, slots=True)
class MeasuredCase:
    model: str
    batch: int
    input_tokens: int
    output_tokens: int
    ttft_s: dict[str, float]          # launch mode -> median TTFT
    tpot_s: dict[str, float]          # launch mode -> mean decode step

    @property
    def label(self) -> str:
        return f"{self.model} b{self.batch} in{self.input_tokens} out{self.output_tokens}"


@dataclass(frozen=True, slots=True)
class ServeRun:
    path: Path
    eager_dispatch_s: float
    cases: tuple[MeasuredCase, ...]


@dataclass(frozen=True, slots=True)
class CaseComparison:
    case: MeasuredCase
    mode: str
    ttft_s: float                     # predicted
    tpot_s: float

    @property
    def ttft_error(self) -> float:
        """(predicted - measured) / measured."""
        return self.ttft_s / self.case.ttft_s[self.mode] - 1

    @property
    def tpot_error(self) -> float:
        return self.tpot_s / self.case.tpot_s[self.mode] - 1


def is_serve_file(path: str | Path) -> bool:
    """Whether `path` is a measured-generation run file (lab/serve_h200/measure.py's)."""
    from rooflab.validate.steps import is_run_of
    return is_run_of(path, "lab/serve_h200/measure.py")


def load(path: str | Path) -> ServeRun:
    """The measured cases of a run file; RooflabError when it is not one."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
        cal = doc["calibration"]["start"]["add_inplace_1elem"]
        dispatch = cal["eager_wall_us_per_op"]["median"] * 1e-6
        cases = []
        for name, m in doc["models"].items():
            for rec in m["cases"].values():
                if rec.get("status") != "ok":
                    continue
                ttft = {mode: rec[f"prefill_{mode}"]["wall_ms"]["median"] / 1e3 for mode in MODES
                        if f"prefill_{mode}" in rec}
                tpot = {"eager": rec["decode_eager"]["wall_ms"]["mean"] / 1e3}
                if "decode_graph" in rec:
                    tpot["graph"] = rec["decode_graph"]["synced"]["wall_ms"]["mean"] / 1e3
                cases.append(MeasuredCase(name, rec["batch"], rec["input"], rec["output"],
                                          ttft, tpot))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise RooflabError(f"{path}: not a measured-generation run file "
                           f"({type(e).__name__}: {e})") from None
    return ServeRun(path, dispatch, tuple(cases))


def compare(run: ServeRun, hw: Hardware) -> list[CaseComparison]:
    """`rooflab serve` of every case and launch mode of `run` on `hw` (with the run's dispatch
    cost); needs torch and transformers to trace the models."""
    from rooflab import serve
    hw = hw.with_eager_dispatch(run.eager_dispatch_s)
    out = []
    for mode in MODES:
        groups: dict[tuple, list[MeasuredCase]] = {}
        for c in run.cases:
            if mode in c.ttft_s:
                groups.setdefault((c.model, c.input_tokens, c.output_tokens), []).append(c)
        for (model, n_in, n_out), cases in groups.items():
            table = serve.serve(f"hf:{model}", [hw], [c.batch for c in cases], [n_in], [n_out],
                                "unfused", mode, kv="static")
            for c, row in zip(cases, table.rows()):
                out.append(CaseComparison(c, mode, row["ttft_s"], row["tpot_s"]))
    return out


def median_abs(errors) -> float:
    vals = [abs(e) for e in errors]
    return statistics.median(vals) if vals else float("nan")


def render(rows: list[CaseComparison]) -> str:
    """A table per case and mode: TTFT and TPOT predicted / measured and their errors; then the
    median |error| per mode and quantity."""
    head = f"{'case':34s} {'mode':5s} {'TTFT ms':>21s} {'err':>6s} {'TPOT ms':>19s} {'err':>6s}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.case.label:34s} {r.mode:5s} "
                     f"{r.ttft_s * 1e3:9.2f} / {r.case.ttft_s[r.mode] * 1e3:9.2f} "
                     f"{r.ttft_error * 100:+5.0f}% "
                     f"{r.tpot_s * 1e3:8.2f} / {r.case.tpot_s[r.mode] * 1e3:8.2f} "
                     f"{r.tpot_error * 100:+5.0f}%")
    for mode in MODES:
        sub = [r for r in rows if r.mode == mode]
        if sub:
            lines.append(f"median |error| {mode}: TTFT {median_abs(r.ttft_error for r in sub):.1%}"
                         f", TPOT {median_abs(r.tpot_error for r in sub):.1%} ({len(sub)} cases)")
    return "\n".join(lines + [PAIRS_LEGEND])
