"""The torch backend's comparison: a run of the torch suite (lab/torch_kernels/run.py, schema
rooflab.torch-run/1) against rooflab's predictions of the same programs, and the ATen family
curves fitted from its calibration cases.

Each case is traced with `trace_module` (what eager PyTorch dispatches), scheduled `unfused`
and priced with the `aten` kernels on the spec, calibrated with the run's own host figures
(tiny-op, mm and view dispatch, graph launch per kernel: taken in the same process, so that
eager times are never compared with another machine's dispatch). Compared per case:

    kernel_us   the profiler's device time of one call's kernels vs the predicted busy time
                (compute, memory or link; no launch overhead)
    eager_us    an eager call followed by a synchronize, per call (eager_sync_us: the
                prediction's semantics, a call started on an idle GPU and ended when its
                last kernel ends), vs the `eager` prediction plus the run's own cost of a
                synchronize's wake-up (host sync_us, where the run measured it)
    graph_us    a CUDA-graph replay of one call vs the `graph` prediction
    compiled_us torch.compile (default mode), calls back to back (the fastest of the run's
                windows, `compiled_us()`), vs the `inductor` schedule under the `compiled`
                launch mode, back to back (the slower of its host and GPU time); its kernels
                (Triton and extern) counted against Inductor's

torch.compile's host figures (a call, a Triton launch, an extern call) are fitted from the run's
own calibration cases (`fit_compiled_host`), as the eager figures are taken from its own process.

What a run's calibration cases give a measured spec (family curves, row floors, SDPA shares)
is fitted in rooflab.validate.torch_fit.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from math import prod
from pathlib import Path

import numpy as np

from rooflab.errors import RooflabError
from rooflab.hardware import Hardware
from rooflab.validate.common import PAIRS_LEGEND, has_schema

SCHEMA = "rooflab.torch-run/1"


@dataclass(frozen=True)
class CaseComparison:
    """One case measured and predicted; times in microseconds, `moved_bytes` the predicted HBM
    bytes (read + written) of its kernels."""
    id: str
    family: str
    split: str
    kernels_measured: int
    kernels_predicted: int
    moved_bytes: int
    kernel_us: float | None
    kernel_us_predicted: float
    eager_us: float | None
    eager_us_predicted: float
    graph_us: float | None
    graph_us_predicted: float
    compiled_us: float | None = None
    compiled_us_predicted: float | None = None
    eager_b2b_us: float | None = None              # eager calls back to back (no synchronize)
    eager_b2b_us_predicted: float | None = None
    inductor_kernels: tuple[int, int] | None = None            # (Triton, extern) measured
    inductor_kernels_predicted: tuple[int, int] | None = None
    compiled_graph_us: float | None = None     # torch.compile(mode="reduce-overhead")
    compiled_graph_us_predicted: float | None = None
    curve_bytes: float = 0.0      # the bytes its family's curve is read at (0: moved_bytes)
    backend: str = ""             # the SDPA backend of its attention op, if it has one
    row_bytes: float = 0.0        # a row kernel's row, in its storage dtype (0: not one)
    rows: int = 0                 # and its rows
    indices: int = 0              # a row gather's index count (0: not one)
    gemm_flops: float = 0.0       # the tensor FLOPs of its cuBLAS GEMM kernels (GEMM_FAMILY)

    @staticmethod
    def _error(pred: float, meas: float | None) -> float | None:
        return None if not meas else pred / meas - 1

    @property
    def kernel_error(self) -> float | None:
        return self._error(self.kernel_us_predicted, self.kernel_us)

    @property
    def eager_error(self) -> float | None:
        return self._error(self.eager_us_predicted, self.eager_us)

    @property
    def graph_error(self) -> float | None:
        return self._error(self.graph_us_predicted, self.graph_us)

    @property
    def compiled_error(self) -> float | None:
        return self._error(self.compiled_us_predicted or 0.0, self.compiled_us) \
            if self.compiled_us_predicted else None

    @property
    def compiled_graph_error(self) -> float | None:
        return self._error(self.compiled_graph_us_predicted or 0.0, self.compiled_graph_us) \
            if self.compiled_graph_us_predicted else None

    @property
    def compiled_speedup_error(self) -> float | None:
        """Error of the predicted eager→compiled speedup (calls back to back) against the
        measured one."""
        if not (self.compiled_us and self.eager_b2b_us and self.compiled_us_predicted):
            return None
        return (self.eager_b2b_us_predicted / self.compiled_us_predicted) / \
            (self.eager_b2b_us / self.compiled_us) - 1

    @property
    def graph_speedup_error(self) -> float | None:
        """Error of the predicted eager/graph speedup against the measured one."""
        if not (self.eager_us and self.graph_us):
            return None
        return (self.eager_us_predicted / self.graph_us_predicted) / \
            (self.eager_us / self.graph_us) - 1


def load(path: str | Path) -> dict:
    """The run document; RooflabError naming the file when it is not a torch-suite run."""
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise RooflabError(f"{path}: cannot read a torch-suite run ({e})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise RooflabError(f"{path}: not a torch-suite run file (schema is not {SCHEMA})")
    return doc


def is_run_file(path: str | Path) -> bool:
    """Whether `path` is a torch-suite run file (its schema is SCHEMA)."""
    return has_schema(path, SCHEMA)


def inductor_kernel_counts(names: list[str]) -> tuple[int, int]:
    """(Triton kernels, extern library calls) among the kernel names of one compiled call. A
    cuBLAS GEMM's memset and split-K reduction, and the reduction over split KV blocks that
    cuDNN's SDPA runs after its attention kernel at decode sizes, are parts of one call."""
    triton = sum(n.startswith("triton_") for n in names)
    extern = sum(not n.startswith(("triton_", "Memset")) and "splitKreduce" not in n
                 and "lean_reduction_kernel" not in n for n in names)
    return triton, extern


# a calibration case is host-bound when its CUDA-graph replay takes under this share of the
# call it is compared with: its call time is then the host's
HOST_BOUND_SHARE = 0.5


def fit_eager_calls(doc: dict, graphs: dict) -> dict[str, tuple[float, int]]:
    """Per op kind, (host µs of one eager call of it, cases): the median over the run's
    host-bound calibration cases whose calls are all of that kind of

        (eager call back to back - module call - views x view dispatch) / calls

    `graphs`: case id -> its traced Graph. An op's eager call, as a model's forward makes it,
    costs more than the run's tiny-op dispatch (a bare torch.add), by kind: its Python wrapper,
    argument checks and, for SDPA, the backend choice (docs/cost-model.md has measured ones)."""
    from rooflab.ops import KINDS, Role
    host = doc["host"]
    per_call: dict[str, list[float]] = {}
    for r in doc["cases"]:
        graph = graphs.get(r["id"])
        if (graph is None or r.get("split") != "calibration" or not r.get("eager_us")
                or not r.get("graph_us") or r["graph_us"] >= HOST_BOUND_SHARE * r["eager_us"]):
            continue
        calls = [op.kind for op in graph.ops if KINDS[op.kind].role is not Role.VIEW]
        if not calls or len(set(calls)) > 1:
            continue
        views = len(graph.ops) - len(calls)
        us = (r["eager_us"] - (host.get("module_call_us") or 0.0)
              - views * host["view_dispatch_us"]) / len(calls)
        per_call.setdefault(calls[0], []).append(us)
    return {kind: (statistics.median(v), len(v)) for kind, v in per_call.items()}


def compiled_us(rec: dict, key: str = "compiled_us") -> float | None:
    """A case's measured torch.compile'd call (`key`: compiled_us, or compiled_graph_us for
    reduce-overhead) in µs: the fastest of the windows the run kept, else the run's figure. A
    host-bound call's windows move by up to 1.8x as the host slows for stretches of a few
    hundred ms, at the GPU's full clock and on one core (lab/compiled_noise/NOTES.md); the
    fast state is the one that recurs, so the fastest window is the call's cost."""
    windows = rec.get(key.replace("_us", "_windows_us"))
    return min(windows) if windows else rec.get(key)

def fit_compiled_host(doc: dict) -> dict[str, float]:
    """torch.compile's host figures in µs, fitted from the run's host-bound compiled
    calibration cases (a CUDA-graph replay of the eager call under half the compiled time) by
    least squares, on the kernels Inductor really ran:

        compiled_us = call + (Triton kernels) x launch + (extern calls) x extern

    with call + launch pinned to what a compiled call with one Triton kernel costs: the median
    of such host-bound cases where the run has two (a compiled module's call: its guards
    cover the module), else the run's compiled trivial function; and the call at least a tiny
    eager op's dispatch."""
    rows = [(inductor_kernel_counts(r["compiled_kernels"]), compiled_us(r))
            for r in doc["cases"] if r.get("split") == "calibration" and r.get("compiled_us")
            and r.get("compiled_kernels") and r.get("graph_us")
            and r["graph_us"] < HOST_BOUND_SHARE * compiled_us(r)]
    singles = [us for counts, us in rows if counts == (1, 0)]
    one = statistics.median(singles) if len(singles) >= 2 else doc["host"].get("compiled_call_us")
    if not one or len(rows) < 2:
        raise RooflabError("the run has too few host-bound compiled calibration cases to fit "
                           "torch.compile's host figures")
    x = np.array([(t - 1, e) for (t, e), _ in rows], dtype=float)
    y = np.array([us - one for _, us in rows])
    (launch, extern), *_ = np.linalg.lstsq(x, y, rcond=None)
    # a compiled call costs at least what an eager op's dispatch does (a Python call into C++;
    # its guards and wrapper come on top), and a launch is not free: where the fit crosses a
    # bound, the launch takes it and the extern call is fitted alone
    least_call = doc["host"].get("tiny_op_dispatch_us") or 0.0
    if not 0.0 < launch <= one - least_call:
        launch = min(max(launch, 0.0), one - least_call)
        extern = float(np.dot(x[:, 1], y - launch * x[:, 0]) / np.dot(x[:, 1], x[:, 1])) \
            if x[:, 1].any() else 0.0
    return {"compiled_call_us": float(one - launch), "compiled_launch_us": float(launch),
            "compiled_extern_us": max(0.0, float(extern)), "cases": len(rows)}


def compiled_host_of(doc: dict) -> dict | None:
    """fit_compiled_host of the run, or None where it cannot be fitted (no compiled cases, or
    too few host-bound calibration ones: a validation-only run): its compiled calls are then
    not compared, Inductor's kernel counts still are."""
    if not any(r.get("compiled_us") for r in doc["cases"]):
        return None
    try:
        return fit_compiled_host(doc)
    except RooflabError:
        return None


def calibrated(hw: Hardware, host: dict, compiled: dict | None = None,
               eager_calls: dict[str, tuple[float, int]] | None = None) -> Hardware:
    """`hw` with the run's own host figures (and torch.compile's, fitted by
    fit_compiled_host; each op kind's eager call, fitted by fit_eager_calls, replacing the
    spec's, which another lease measured; and the replay gap where the run measured it). The
    suite's modules are bare nn.Linear and function wrappers, not transformers' modules:
    module_call_s is a bare module's call where the run measured one (module_call_us), else
    not charged."""
    if compiled:
        hw = replace(hw, compiled_call_s=compiled["compiled_call_us"] * 1e-6,
                     compiled_launch_s=compiled["compiled_launch_us"] * 1e-6,
                     compiled_extern_s=compiled["compiled_extern_us"] * 1e-6)
    if host.get("graph_gap_us") is not None:
        hw = replace(hw, graph_gap_s=host["graph_gap_us"] * 1e-6)
    if host.get("graph_launch_us") is not None:      # GPU-only figures (None on the CPU)
        # a tiny kernel replayed back to back, as the suite replays its cases (in L2)
        hw = replace(hw, graph_warm_launch_s=host["graph_launch_us"] * 1e-6,
                     # a one-kernel graph's replay, less that kernel's per-kernel share
                     graph_replay_call_s=(host["graph_1_kernel_us"]
                                          - host["graph_launch_us"]) * 1e-6)
    return replace(hw, eager_dispatch_s=host["tiny_op_dispatch_us"] * 1e-6,
                   eager_call_s_by_kind={k: us * 1e-6 for k, (us, _) in
                                         (eager_calls or {}).items()},
                   gemm_dispatch_s=host["mm_dispatch_us"] * 1e-6,
                   view_dispatch_s=host["view_dispatch_us"] * 1e-6,
                   module_call_s=(host.get("module_call_us") or 0.0) * 1e-6)


def traced_cases(doc: dict, extra_cases=()) -> tuple[list, dict]:
    """The run's measured cases as (record, torch_suite.Case) pairs, and case id -> its traced
    Graph (what eager PyTorch dispatches); needs torch."""
    from rooflab.trace import trace_module
    from rooflab.validate import torch_suite
    cases = {c.id: c for c in [*torch_suite.select(), *extra_cases]}
    measured = [(rec, cases[rec["id"]]) for rec in doc["cases"] if rec["id"] in cases
                and not rec.get("skipped") and rec.get("eager_us") is not None]
    return measured, {case.id: trace_module(case.build(), case.example_inputs(), name=case.id)
                      for _, case in measured}


def compare(doc: dict, hw: Hardware, only_split: str | None = None,
            extra_cases=()) -> list[CaseComparison]:
    """Trace and predict every measured case of the run `doc` on `hw` (the suite's cases, and
    `extra_cases`: torch_suite.Case records of a user's modules); needs torch."""
    from rooflab import api
    from rooflab.kernel_families import (GEMM_FAMILY, PER_INDEX_FAMILIES,
                                         ROW_FAMILIES, attention_backend, curve_bytes,
                                         gathered_rows)
    measured, graphs = traced_cases(doc, extra_cases)
    compiled_host = compiled_host_of(doc)
    hw = calibrated(hw, doc["host"], compiled_host, fit_eager_calls(doc, graphs))
    out = []
    reduce_overhead: dict[str, tuple[float, float]] = {}      # id -> (host s, GPU s) but the call
    for rec, case in measured:
        if only_split and case.split != only_split:
            continue
        graph = graphs[case.id]
        eager = api.predict_graph(graph, hw, "unfused", "eager")
        replay = api.predict_graph(graph, hw, "unfused", "graph")
        kernels = rec.get("kernels") or []
        # the case's own module call (the trace's ops run inside it), where the run measured it
        root_us = doc["host"].get("module_call_us") or 0.0
        extra = {}
        if rec.get("compiled_us"):
            comp = api.predict_graph(graph, hw, "inductor", "compiled")
            # torch.compile's host cost per call differs between machines (a one-kernel
            # compiled call: 48 us on one H200 lease, 110 on another): compared only with the
            # run's own fit
            extra = dict(compiled_us_predicted=(comp.totals.back_to_back_s * 1e6
                                                if compiled_host else None),
                         eager_b2b_us=rec.get("eager_us"),
                         eager_b2b_us_predicted=eager.totals.back_to_back_s * 1e6 + root_us,
                         inductor_kernels=inductor_kernel_counts(rec.get("compiled_kernels") or []),
                         inductor_kernels_predicted=comp.schedule.triton_and_extern())
            if rec.get("compiled_graph_us") and compiled_host:
                reduce_overhead[case.id] = None if graph.written_inputs else \
                    reduce_overhead_parts(graph, hw)
        moved = sum(k.hbm_read_bytes + k.hbm_write_bytes for k in eager.kernels)
        backends = [attention_backend(op, [graph.tensors[t] for t in op.inputs])
                    for op in graph.ops if op.kind == "attention"]
        out.append(CaseComparison(
            id=case.id, family=case.family, split=case.split,
            curve_bytes=curve_bytes(case.family, moved, case.inputs[0].nbytes
                                    / prod(case.inputs[0].shape)),
            backend=backends[0] if len(backends) == 1 else "",
            row_bytes=(case.inputs[0].shape[-1] * case.inputs[0].nbytes
                       / prod(case.inputs[0].shape)) if case.family in ROW_FAMILIES else 0.0,
            rows=prod(case.inputs[0].shape[:-1]) if case.family in ROW_FAMILIES else 0,
            indices=sum(gathered_rows(op, [graph.tensors[t] for t in op.inputs])
                        for op in graph.ops) if case.family in PER_INDEX_FAMILIES else 0,
            gemm_flops=sum(k.tensor_flops for k in eager.kernels if k.family == GEMM_FAMILY),
            kernels_measured=len(kernels), kernels_predicted=eager.totals.kernels,
            moved_bytes=moved,
            kernel_us=sum(k["us"] for k in kernels) or None,
            kernel_us_predicted=sum(k.time_s - k.launch_s for k in replay.kernels) * 1e6,
            # the measured eager call is followed by a synchronize: its wake-up, where the run
            # measured it (sync_us), is part of the call's time
            eager_us=rec.get("eager_sync_us"),
            eager_us_predicted=(eager.totals.time_s * 1e6 + (doc["host"].get("sync_us") or 0.0)
                                + root_us),
            graph_us=rec.get("graph_us"), graph_us_predicted=replay.totals.time_s * 1e6,
            compiled_us=compiled_us(rec),
            compiled_graph_us=compiled_us(rec, "compiled_graph_us"),
            **extra))
    call_s = fit_compiled_graph_call(doc, hw, graphs)

    def predicted_us(r):
        parts = reduce_overhead[r.id]
        if parts is None:           # not replayed: a plain compiled call
            return r.compiled_us_predicted
        # calls back to back: the host's work overlaps the previous call's replay
        return None if call_s is None else 1e6 * max(parts[0] + call_s[0], parts[1])
    return [replace(r, compiled_graph_us_predicted=predicted_us(r))
            if r.id in reduce_overhead else r for r in out]


def reduce_overhead_parts(graph, hw: Hardware) -> tuple[float, float]:
    """(host s, GPU s) of one torch.compile(mode="reduce-overhead") call of `graph` on `hw`,
    cudagraph trees' own call aside: the `inductor` schedule's `reduce-overhead` prediction
    (the copy of the call's inputs into static buffers, the replay)."""
    from rooflab import api
    t = api.predict_graph(graph, replace(hw, compiled_graph_call_s=0.0), "inductor",
                          "reduce-overhead").totals
    return t.host_s, t.gpu_s


def fit_compiled_graph_call(doc: dict, hw: Hardware, graphs: dict) -> tuple[float, int] | None:
    """(seconds of cudagraph trees' own host time per reduce-overhead call, cases): the median,
    over the run's host-bound calibration cases (predicted GPU time under half the measured
    call; a graph that writes none of its inputs), of the measured call less its predicted host
    time (reduce_overhead_parts on `hw`, the run's host figures); None for a run with fewer
    than two such cases."""
    extra = []
    for rec in doc["cases"]:
        graph = graphs.get(rec["id"])
        if rec.get("split") != "calibration" or not rec.get("compiled_graph_us") \
                or graph is None or graph.written_inputs:
            continue
        host_s, gpu_s = reduce_overhead_parts(graph, hw)
        measured_s = compiled_us(rec, "compiled_graph_us") * 1e-6
        if gpu_s < HOST_BOUND_SHARE * measured_s:
            extra.append(measured_s - host_s)
    return (max(0.0, statistics.median(extra)), len(extra)) if len(extra) >= 2 else None


def summary(rows: list[CaseComparison]) -> dict[str, float]:
    """Median and p90 |error| of the per-kernel times (single-kernel cases), and medians of
    the whole-call eager and graph times and of the eager/graph speedup (every case)."""
    def stat(errs, q):
        v = [abs(e) for e in errs if e is not None]
        return float(np.percentile(v, q)) if v else float("nan")
    single = [r for r in rows if r.family != "step"]
    n_compiled = sum(bool(r.inductor_kernels) for r in rows)
    return {"cases": len(rows),
            "kernel_median": stat((r.kernel_error for r in single), 50),
            "kernel_p90": stat((r.kernel_error for r in single), 90),
            "eager_median": stat((r.eager_error for r in rows), 50),
            "graph_median": stat((r.graph_error for r in rows), 50),
            "speedup_median": stat((r.graph_speedup_error for r in rows), 50),
            "compiled_median": stat((r.compiled_error for r in rows), 50),
            "compiled_speedup_median": stat((r.compiled_speedup_error for r in rows), 50),
            "compiled_graph_median": stat((r.compiled_graph_error for r in rows), 50),
            "inductor_count_match": (sum(r.inductor_kernels == r.inductor_kernels_predicted
                                         for r in rows if r.inductor_kernels)
                                     / n_compiled if n_compiled else float("nan"))}


def render_summary(rows: list[CaseComparison]) -> str:
    """summary() of each split and, for the validation split, of each family: one line each,
    medians and p90s as percentages."""
    def line(label, s):
        return f"{label:26s} " + "  ".join(
            f"{k} {v:.0f}" if k == "cases" else f"{k} {v:.1%}" for k, v in s.items()
            if k == "cases" or v == v)            # NaN: nothing of that kind in the rows
    lines = [line(split, summary([r for r in rows if r.split == split]))
             for split in ("calibration", "validation") if any(r.split == split for r in rows)]
    lines += [line(f"  {fam}", s) for fam, s in
              by_family([r for r in rows if r.split == "validation"]).items()]
    return "\n".join(lines)


def report(doc: dict, hw: Hardware, split: str | None = None, extra_cases=()) -> str:
    """The run `doc` against the predictions on `hw` (its `split` only, if given): a note where
    torch.compile's host figures are the spec's, the per-case table and the summary lines."""
    rows = compare(doc, hw, extra_cases=extra_cases)
    if split:
        rows = [r for r in rows if r.split == split]
    notes = []
    if not rows and doc["cases"]:
        notes.append("note: no case of this run is a torch-suite case: a run of your own module "
                     "is compared when its py: source and --input are given too")
    if any(r.get("compiled_us") for r in doc["cases"]) and not compiled_host_of(doc):
        notes.append("note: torch.compile's calls are not compared (their kernel counts are): "
                     "the run has too few host-bound compiled calibration cases to fit its own "
                     "host figures, and another machine's differ")
    return "\n".join([*notes, render(rows), render_summary(rows)])


def by_family(rows: list[CaseComparison]) -> dict[str, dict[str, float]]:
    """summary() per family."""
    return {fam: summary([r for r in rows if r.family == fam])
            for fam in sorted({r.family for r in rows})}


def render(rows: list[CaseComparison]) -> str:
    """A table: per case, kernels, kernel time, eager and graph predicted vs measured."""
    def pct(e):
        return "   -  " if e is None else f"{e:+6.1%}"
    head = (f"{'case':44s} {'split':5s} {'kern':>7s} {'kernel us':>17s} {'err':>6s} "
            f"{'eager us':>17s} {'err':>6s} {'graph us':>17s} {'err':>6s}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.id:44s} {r.split[:5]:5s} {r.kernels_predicted:>3d}/{r.kernels_measured:<3d} "
            f"{r.kernel_us_predicted:8.1f}/{(r.kernel_us or 0):<8.1f} {pct(r.kernel_error)} "
            f"{r.eager_us_predicted:8.1f}/{(r.eager_us or 0):<8.1f} {pct(r.eager_error)} "
            f"{r.graph_us_predicted:8.1f}/{(r.graph_us or 0):<8.1f} {pct(r.graph_error)}")
    return "\n".join(lines + [PAIRS_LEGEND])
