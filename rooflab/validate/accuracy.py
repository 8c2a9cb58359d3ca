"""How right the cost model is: re-predict every measured kernel and schedule with the current
model and compare. Plain data, no torch: CI runs it on the committed measurements.

What a measurement corresponds to (rooflab/validate/run.py times it this way):
  kernel         one launch after an L2 flush, timed with CUDA events: busy time + min_kernel_s
                 (the host's launch is hidden behind the flush, so no dispatch stall)
  graph schedule the schedule's kernels replayed as one CUDA graph after an L2 flush:
                 Σ (busy + its replay figure: graph_launch_s, or graph_warm_launch_s reading only
                 what earlier kernels of the case wrote, rooflab/l2_residency.py), the first
                 kernel starting like a lone kernel (min_kernel_s instead of its replay figure);
                 the graph's launch hides in the flush
  eager schedule the kernels launched one by one from Python: the eager launch model with the
                 spec's `triton_launch_us` as the per-kernel dispatch, less the first dispatch
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from rooflab import api, workload
from rooflab.errors import RooflabError
from rooflab.hardware import Hardware
from rooflab.ops import kernel_op_class
from rooflab.validate.records import ValidationFile

# The accuracy the validation issue asks for: per-kernel median and 90th-percentile |error|,
# and the median |error| of predicted fused-vs-unfused speedups.
MEDIAN_BAR, P90_BAR, SPEEDUP_BAR = 0.10, 0.25, 0.10
# ... and that the kernels are good ones: memory-bound kernels moving 256 MB or more reach 80 %
# of the calibrated copy bandwidth
MARK_MIN_BYTES, MARK_COPY_FRACTION = 256e6, 0.80


@dataclass(frozen=True)
class CasePrediction:
    kernels: dict[str, float]        # kernel name -> predicted seconds
    classes: dict[str, str]          # kernel name -> op class
    bounds: dict[str, str]
    graph_s: float
    eager_s: float
    hbm_bytes: dict[str, int]        # kernel name -> HBM bytes moved


def predict_case(workload_dict: dict, params: dict[str, int], hw: Hardware,
                 schedule: str, source: str = "<dict>") -> CasePrediction:
    """Predictions for one case under one schedule, in the form the measurements take;
    `source` names the case in errors."""
    graph = workload.load_dict(workload_dict, params, source)
    pred = api.predict_graph(graph, hw, schedule, "graph", "rooflab", l2_flushed=True)
    kernels, classes, bounds, nbytes = {}, {}, {}, {}
    for k in pred.kernels:
        busy = max(k.compute_s, k.memory_s, k.link_s)
        kernels[k.name] = busy + hw.min_kernel_s
        classes[k.name] = kernel_op_class(k.kinds, k.fusion)
        bounds[k.name] = k.bound
        nbytes[k.name] = k.hbm_bytes
    first = pred.kernels[0]
    graph_s = (pred.totals.time_s - hw.graph_replay_s + hw.min_kernel_s
               - first.launch_s / first.launches)
    dispatch = hw.triton_launch_s or hw.eager_dispatch_s
    eager = api.predict_graph(graph, replace(hw, eager_dispatch_s=dispatch), schedule, "eager",
                              "rooflab")
    return CasePrediction(kernels, classes, bounds, graph_s, eager.totals.time_s - dispatch, nbytes)


@dataclass(frozen=True)
class Row:
    case: str
    schedule: str
    kernel: str
    op_class: str
    predicted_s: float
    measured_s: float
    bound: str = ""
    hbm_bytes: int = 0

    @property
    def error(self) -> float:
        return (self.predicted_s - self.measured_s) / self.measured_s


@dataclass(frozen=True)
class Summary:
    kernels: list[Row]
    speedups: list[tuple[str, float, float]]      # case, predicted, measured (unfused / fused)
    schedules: list[Row]

    @staticmethod
    def _pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")

    @property
    def median_abs_error(self) -> float:
        return statistics.median(abs(r.error) for r in self.kernels) if self.kernels else float("nan")

    @property
    def p90_abs_error(self) -> float:
        return self._pct([abs(r.error) for r in self.kernels], 0.9)

    @property
    def speedup_median_abs_error(self) -> float:
        if not self.speedups:
            return float("nan")
        return statistics.median(abs(p / m - 1) for _, p, m in self.speedups)

    def passes(self, median: float = MEDIAN_BAR, p90: float = P90_BAR,
               speedup: float = SPEEDUP_BAR) -> bool:
        return (self.median_abs_error <= median and self.p90_abs_error <= p90
                and self.speedup_median_abs_error <= speedup)


def _measured_kernels_predicted(vf: ValidationFile, case, hw: Hardware,
                                schedule: str) -> CasePrediction:
    """predict_case of `case`, which must make every kernel the run measured: RooflabError
    naming the first it does not (another GPU's spec fuses differently)."""
    pred = predict_case(case.workload, case.params, hw, schedule, f"case {case.case}")
    missing = [k.kernel for k in case.kernels[schedule] if k.kernel not in pred.kernels]
    if missing:
        raise RooflabError(f"case {case.case} ({schedule}): on {hw.name} the model makes no "
                           f"kernel '{missing[0]}', which the run measured on "
                           f"{vf.provenance.gpu}; re-check a run with its own GPU's spec")
    return pred


def evaluate(vf: ValidationFile, hw: Hardware) -> Summary:
    """Re-predict every case of a validation file with the current model on `hw`."""
    rows, scheds, speedups = [], [], []
    for case in vf.cases:
        graph_pred: dict[str, float] = {}
        graph_meas: dict[str, float] = {}
        for schedule, kernels in case.kernels.items():
            pred = _measured_kernels_predicted(vf, case, hw, schedule)
            for k in kernels:
                rows.append(Row(case.case, schedule, k.kernel, pred.classes[k.kernel],
                                pred.kernels[k.kernel], k.measured_s, pred.bounds[k.kernel],
                                pred.hbm_bytes[k.kernel]))
            for s in case.schedules:
                if s.schedule == schedule:
                    p = pred.graph_s if s.launch == "graph" else pred.eager_s
                    scheds.append(Row(case.case, f"{schedule}/{s.launch}", "", "", p, s.measured_s))
                    if s.launch == "graph":
                        graph_pred[schedule], graph_meas[schedule] = p, s.measured_s
        if {"unfused", "fused"} <= set(graph_pred) and _differ(case):
            speedups.append((case.case, graph_pred["unfused"] / graph_pred["fused"],
                             graph_meas["unfused"] / graph_meas["fused"]))
    # a kernel that both schedules share is one measurement target, counted once
    seen, unique = set(), []
    for r in rows:
        key = (r.case, r.kernel)
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return Summary(unique, speedups, scheds)


def repredicted(vf: ValidationFile, hw: Hardware) -> ValidationFile:
    """The same measurements with every prediction (and op class) from the current model."""
    cases = []
    for case in vf.cases:
        kernels, schedules = {}, []
        for schedule, ks in case.kernels.items():
            pred = _measured_kernels_predicted(vf, case, hw, schedule)
            kernels[schedule] = [k.model_copy(update={"predicted_s": pred.kernels[k.kernel],
                                                      "op_class": pred.classes[k.kernel]})
                                 for k in ks]
            schedules += [s.model_copy(update={
                "predicted_s": pred.graph_s if s.launch == "graph" else pred.eager_s})
                for s in case.schedules if s.schedule == schedule]
        cases.append(case.model_copy(update={"kernels": kernels, "schedules": schedules}))
    return vf.model_copy(update={"cases": cases})


def _differ(case) -> bool:
    names = {s: [k.kernel for k in ks] for s, ks in case.kernels.items()}
    return names.get("unfused") != names.get("fused")


def bandwidth_marks(summary: Summary, hw: Hardware) -> list[tuple[Row, float]]:
    """Each memory-bound kernel moving MARK_MIN_BYTES or more, with the fraction of the spec's
    achievable (for a calibrated spec: the measured copy) HBM bandwidth it reached."""
    return [(r, r.hbm_bytes / r.measured_s / hw.hbm_rate) for r in summary.kernels
            if r.bound == "memory" and r.hbm_bytes >= MARK_MIN_BYTES]


def render_marks(marks: list[tuple[Row, float]], hw: Hardware) -> str:
    """One line on the bandwidth mark, and one per kernel below it."""
    if not marks:
        return f"no memory-bound kernel moves {MARK_MIN_BYTES / 1e6:.0f} MB or more"
    below = sorted((m for m in marks if m[1] < MARK_COPY_FRACTION), key=lambda m: m[1])
    lo, hi = min(f for _, f in marks), max(f for _, f in marks)
    out = [f"memory-bound kernels ≥ {MARK_MIN_BYTES / 1e6:.0f} MB: {len(marks) - len(below)} of "
           f"{len(marks)} at ≥ {MARK_COPY_FRACTION:.0%} of {hw.hbm_rate / 1e12:.2f} TB/s "
           f"(range {lo:.0%}-{hi:.0%})"]
    out += [f"  below: {r.case} {r.kernel} {f:.1%}" for r, f in below]
    return "\n".join(out)


def render(summary: Summary, hw: Hardware | None = None) -> str:
    """The error table: per op class and overall, then the speedups; with `hw`, the bandwidth
    mark too."""
    from rooflab.report.table import grid
    if not summary.kernels:
        return "no measured kernels"
    by: dict[str, list[float]] = {}
    for r in summary.kernels:
        by.setdefault(r.op_class, []).append(abs(r.error))
    rows = [[c, str(len(v)), f"{statistics.median(v):.1%}", f"{Summary._pct(v, 0.9):.1%}",
             f"{max(v):.1%}"] for c, v in sorted(by.items())]
    allv = [abs(r.error) for r in summary.kernels]
    rows.append(["all", str(len(allv)), f"{summary.median_abs_error:.1%}",
                 f"{summary.p90_abs_error:.1%}", f"{max(allv):.1%}"])
    out = [grid(["op class", "kernels", "median |err|", "p90 |err|", "max |err|"], rows)]
    if summary.speedups:
        out.append(f"\nfused-vs-unfused speedup (graph replay), {len(summary.speedups)} cases: "
                   f"median |error| {summary.speedup_median_abs_error:.1%}")
    bars = (f"bars: median ≤ {MEDIAN_BAR:.0%}, p90 ≤ {P90_BAR:.0%}, speedup median ≤ "
            f"{SPEEDUP_BAR:.0%}: {'PASS' if summary.passes() else 'FAIL'}")
    out.append(bars)
    if hw is not None:
        out.append(render_marks(bandwidth_marks(summary, hw), hw))
    return "\n".join(out)
