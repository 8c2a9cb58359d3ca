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
    compiled_us torch.compile (default mode), calls back to back, vs the `inductor` schedule
                under the `compiled` launch mode, back to back (the slower of its host and GPU
                time); its kernels (Triton and extern) counted against Inductor's

torch.compile's host figures (a call, a Triton launch, an extern call) are fitted from the run's
own calibration cases (`fit_compiled_host`), as the eager figures are taken from its own process.

`fit_family_curves` turns the calibration cases' kernel times into achieved fractions of HBM
peak against MB moved, one curve per family: the spec's `kernel_families`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from math import prod
from pathlib import Path

import numpy as np

from rooflab.errors import RooflabError
from rooflab.hardware import MAX_CURVE_FRACTION, Hardware

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
    try:
        with open(path) as f:
            head = f.read(4096)
    except OSError:
        return False
    return f'"schema": "{SCHEMA}"' in head


def inductor_kernel_counts(names: list[str]) -> tuple[int, int]:
    """(Triton kernels, extern library calls) among the kernel names of one compiled call. A
    cuBLAS GEMM's memset and split-K reduction are parts of its one call, not calls."""
    triton = sum(n.startswith("triton_") for n in names)
    extern = sum(not n.startswith(("triton_", "Memset")) and "splitKreduce" not in n
                 for n in names)
    return triton, extern


def fit_compiled_host(doc: dict) -> dict[str, float]:
    """torch.compile's host figures in µs, fitted from the run's host-bound compiled
    calibration cases (a CUDA-graph replay of the eager call under half the compiled time) by
    least squares, on the kernels Inductor really ran:

        compiled_us = call + (Triton kernels) x launch + (extern calls) x extern

    with call + launch pinned to what a compiled call with one Triton kernel costs: the median
    of such host-bound cases where the run has two (a compiled module's call: its guards
    cover the module), else the run's compiled trivial function; and the call at least a tiny
    eager op's dispatch."""
    rows = [(inductor_kernel_counts(r["compiled_kernels"]), r["compiled_us"])
            for r in doc["cases"] if r.get("split") == "calibration" and r.get("compiled_us")
            and r.get("compiled_kernels") and r.get("graph_us")
            and r["graph_us"] < 0.5 * r["compiled_us"]]
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


def calibrated(hw: Hardware, host: dict, compiled: dict | None = None) -> Hardware:
    """`hw` with the run's own host figures (and torch.compile's, fitted by
    fit_compiled_host; and the replay gap where the run measured it). The suite's modules are
    bare nn.Linear and function wrappers, not transformers' modules: module_call_s is a bare
    module's call where the run measured one (module_call_us), else not charged."""
    if compiled:
        hw = replace(hw, compiled_call_s=compiled["compiled_call_us"] * 1e-6,
                     compiled_launch_s=compiled["compiled_launch_us"] * 1e-6,
                     compiled_extern_s=compiled["compiled_extern_us"] * 1e-6)
    if host.get("graph_gap_us") is not None:
        hw = replace(hw, graph_gap_s=host["graph_gap_us"] * 1e-6)
    if host.get("graph_launch_us") is not None:      # GPU-only figures (None on the CPU)
        hw = replace(hw, graph_launch_s=host["graph_launch_us"] * 1e-6,
                     # a one-kernel graph's replay, less that kernel's per-kernel share
                     graph_replay_call_s=(host["graph_1_kernel_us"]
                                          - host["graph_launch_us"]) * 1e-6)
    return replace(hw, eager_dispatch_s=host["tiny_op_dispatch_us"] * 1e-6,
                   gemm_dispatch_s=host["mm_dispatch_us"] * 1e-6,
                   view_dispatch_s=host["view_dispatch_us"] * 1e-6,
                   module_call_s=(host.get("module_call_us") or 0.0) * 1e-6)


def compare(doc: dict, hw: Hardware, only_split: str | None = None,
            extra_cases=()) -> list[CaseComparison]:
    """Trace and predict every measured case of the run `doc` on `hw` (the suite's cases, and
    `extra_cases`: torch_suite.Case records of a user's modules); needs torch."""
    from rooflab import api
    from rooflab.trace import trace_module
    from rooflab.validate import torch_suite
    from rooflab.ops import Role
    from rooflab.kernel_families import (PER_INDEX_FAMILIES, ROW_FAMILIES, attention_backend,
                                         curve_bytes, gathered_rows)
    cases = {c.id: c for c in [*torch_suite.select(), *extra_cases]}
    compiled_host = compiled_host_of(doc)
    hw = calibrated(hw, doc["host"], compiled_host)
    out = []
    reduce_overhead: dict[str, tuple[float, float]] = {}      # id -> (host s, GPU s) but the call
    for rec in doc["cases"]:
        case = cases.get(rec["id"])
        if case is None or rec.get("skipped") or rec.get("eager_us") is None:
            continue
        if only_split and case.split != only_split:
            continue
        graph = trace_module(case.build(), case.example_inputs(), name=case.id)
        eager = api.predict_graph(graph, hw, "unfused", "eager")
        replay = api.predict_graph(graph, hw, "unfused", "graph")
        kernels = rec.get("kernels") or []
        # the case's own module call (the trace's ops run inside it), where the run measured it
        root_us = doc["host"].get("module_call_us") or 0.0
        extra = {}
        if rec.get("compiled_us"):
            comp = api.predict_graph(graph, hw, "inductor", "compiled")
            library = (Role.GEMM, Role.ATTENTION, Role.OPAQUE, Role.COLLECTIVE)
            extern = sum(k.anchor in library for k in comp.schedule.kernels)
            triton = sum(k.launches for k in comp.schedule.kernels if k.anchor not in library)
            # torch.compile's host cost per call differs between machines (a one-kernel
            # compiled call: 48 us on one H200 lease, 110 on another): compared only with the
            # run's own fit
            extra = dict(compiled_us_predicted=(comp.totals.back_to_back_s * 1e6
                                                if compiled_host else None),
                         eager_b2b_us=rec.get("eager_us"),
                         eager_b2b_us_predicted=eager.totals.back_to_back_s * 1e6 + root_us,
                         inductor_kernels=inductor_kernel_counts(rec.get("compiled_kernels") or []),
                         inductor_kernels_predicted=(triton, extern))
            if rec.get("compiled_graph_us") and compiled_host:
                reduce_overhead[case.id] = _reduce_overhead_s(
                    api.predict_graph(graph, hw, "inductor", "graph").totals, case, hw)
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
            compiled_us=rec.get("compiled_us"), compiled_graph_us=rec.get("compiled_graph_us"),
            **extra))
    call_s = _fit_reduce_overhead_call(out, reduce_overhead)
    if call_s is None:
        return out
    return [replace(r, compiled_graph_us_predicted=1e6 * max(
        reduce_overhead[r.id][0] + call_s, reduce_overhead[r.id][1]))
        if r.id in reduce_overhead else r for r in out]


def _reduce_overhead_s(replay, case, hw: Hardware) -> tuple[float, float]:
    """(host s, GPU s) of one torch.compile(mode="reduce-overhead") call, its cudagraph trees'
    own call aside: the replay of Inductor's kernels (`replay`: the inductor schedule's
    `graph` totals), after each input that is not a parameter or buffer is copied into the
    graph's static buffer (an eager copy_ each: a dispatch on the host, the copy on the GPU,
    priced at the elementwise curve)."""
    copies_s = sum(2 * i.nbytes / hw.hbm_rate_for(2 * i.nbytes, "elementwise")
                   for i in case.inputs)
    return (replay.host_s + len(case.inputs) * hw.eager_dispatch_s,
            replay.gpu_s + copies_s)


def _fit_reduce_overhead_call(rows: list[CaseComparison], parts: dict) -> float | None:
    """Seconds of cudagraph trees' own host time per reduce-overhead call: the median, over the
    run's host-bound calibration cases (GPU time under half the measured call), of the measured
    call less its predicted host time; None for a run without such cases."""
    extra = [r.compiled_graph_us * 1e-6 - parts[r.id][0] for r in rows
             if r.id in parts and r.split == "calibration"
             and parts[r.id][1] < 0.5e-6 * r.compiled_graph_us]
    return max(0.0, statistics.median(extra)) if len(extra) >= 2 else None


def fit_family_curves(rows: list[CaseComparison], hbm_peak_bytes_per_s: float,
                      families, l2_bytes: float | None = None,
                      per_index_s: dict[str, float] | None = None
                      ) -> dict[str, list[tuple[float, float]]]:
    """Per family, [[MB, fraction of HBM peak], ...] with MB increasing, from the single-kernel
    calibration cases' measured kernel times (the median where two cases move the same bytes).

    A kernel's time is about a fixed GPU cost plus its bytes over a bandwidth, so the fraction
    rises steeply with size; the spec's curves are interpolated in log(bytes), which between
    two measurements decades apart would miss that. So the time is interpolated linearly in
    bytes between measurements (constant below the smallest) and written out at four points a
    decade, from 1 kB to the largest measured size: the spec's interpolation then follows it.

    With `l2_bytes` (the L2 capacity): the suite repeats each call, so a kernel whose bytes fit
    in L2 finds them there. Up to the capacity, time follows the slope of the two largest
    measurements that fit (L2's rate), then rises to the first measurement beyond it (HBM's);
    a straight line across the capacity would price sizes just below it at half HBM's rate.

    `per_index_s` (family -> seconds per index, fit_per_index): a row gather's time less that
    cost per index is what its curve holds."""
    curves: dict[str, list[tuple[float, float]]] = {}
    for fam in families:
        by_bytes: dict[int, list[float]] = {}
        for r in rows:
            if r.family == fam and r.split == "calibration" and r.kernel_us and r.moved_bytes:
                by_bytes.setdefault(round(r.curve_bytes or r.moved_bytes), []).append(
                    r.kernel_us * 1e-6 - (per_index_s or {}).get(fam, 0.0) * r.indices)
        # sizes within 1 % of each other are one measurement (they would round to one point)
        groups: list[list[int]] = []
        for b in sorted(by_bytes):
            if groups and b <= groups[-1][0] * 1.01:
                groups[-1].append(b)
            else:
                groups.append([b])
        if len(groups) < 2:
            continue
        nbytes = np.array([statistics.median(g) for g in groups], dtype=float)
        time_s = np.array([statistics.median([t for b in g for t in by_bytes[b]])
                           for g in groups])
        if l2_bytes:
            nbytes, time_s = _with_l2_knot(nbytes, time_s, l2_bytes)
        between = 10 ** np.arange(3, np.log10(nbytes[-1]), 0.25)
        # grid points within 1 % of a measurement would duplicate it once rounded
        apart = np.min(np.abs(between[:, None] / nbytes[None, :] - 1), axis=1) > 0.01
        grid = np.sort(np.concatenate([between[apart], nbytes]))
        frac = np.minimum(grid / np.interp(grid, nbytes, time_s) / hbm_peak_bytes_per_s,
                          MAX_CURVE_FRACTION)
        curves[fam] = [(_sig(b / 1e6), _sig(f)) for b, f in zip(grid, frac)]
    return curves


def fit_per_index(rows: list[CaseComparison], family: str) -> float:
    """Seconds a row gather of `family` pays per index, from its calibration cases that move
    the same bytes (within 1 %) in different rows (narrow rows of a small table, wide rows of a
    large one): the least-squares slope of time against index count within such groups; 0
    without one."""
    cases = sorted((r.moved_bytes, r.indices, r.kernel_us * 1e-6) for r in rows
                   if r.family == family and r.split == "calibration" and r.kernel_us
                   and r.indices)
    groups: list[list[tuple]] = []
    for c in cases:
        if groups and c[0] <= groups[-1][0][0] * 1.01:
            groups[-1].append(c)
        else:
            groups.append([c])
    num = den = 0.0
    for grp in groups:
        n_mean = statistics.fmean(c[1] for c in grp)
        t_mean = statistics.fmean(c[2] for c in grp)
        num += sum((c[1] - n_mean) * (c[2] - t_mean) for c in grp)
        den += sum((c[1] - n_mean) ** 2 for c in grp)
    return max(0.0, num / den) if den else 0.0


def fit_row_floors(rows: list[CaseComparison], sm_count: int
                   ) -> dict[str, list[tuple[float, float]]]:
    """Per row-kernel family, [[row KB, µs], ...]: the shortest measured kernel time of the
    calibration cases with rows that long and at most 8 rows per SM (ATen keeps several row
    blocks on each SM at once, so such a kernel takes about one row's time)."""
    floors: dict[str, dict[float, float]] = {}
    for r in rows:
        if r.row_bytes and r.rows <= 8 * sm_count and r.split == "calibration" and r.kernel_us:
            by_row = floors.setdefault(r.family, {})
            by_row[r.row_bytes] = min(by_row.get(r.row_bytes, r.kernel_us), r.kernel_us)
    return {fam: [(_sig(rb / 1e3), _sig(by_row[rb])) for rb in sorted(by_row)]
            for fam, by_row in floors.items()}


def _with_l2_knot(nbytes: np.ndarray, time_s: np.ndarray, l2_bytes: float):
    """The measurements with a knot at the L2 capacity, its time extrapolated from the two
    largest measurements within it (bounded by their neighbours); unchanged where fewer than
    two fit or none lies beyond."""
    inside = nbytes <= l2_bytes
    if inside.sum() < 2 or inside.all() or np.any(nbytes == l2_bytes):
        return nbytes, time_s
    (b0, b1), (t0, t1) = nbytes[inside][-2:], time_s[inside][-2:]
    t_l2 = t1 + (l2_bytes - b1) * max(t1 - t0, 0.0) / (b1 - b0)
    t_l2 = min(max(t_l2, t1), time_s[~inside][0])
    at = int(inside.sum())
    return np.insert(nbytes, at, l2_bytes), np.insert(time_s, at, t_l2)


def fit_attention_backends(doc: dict, hw: Hardware) -> dict[str, tuple[float, int]]:
    """Per SDPA backend (kernel_families.ATTENTION_BACKENDS), (share of peak, cases) fitted
    from the run's compute-bound calibration cases (measured for at least 20 µs and three times
    their memory time): the share at which the model's compute time equals the measured kernel
    time, the median over cases. Needs torch."""
    from rooflab import api
    from rooflab.kernel_families import ATTENTION_BACKENDS
    from rooflab.trace import trace_module
    from rooflab.validate import torch_suite

    def at(share: float) -> Hardware:
        return replace(hw, attention_backend_efficiency=dict.fromkeys(ATTENTION_BACKENDS, share))
    cases = {c.id: c for c in torch_suite.select(split="calibration")}
    shares: dict[str, list[float]] = {}
    for rec in doc["cases"]:
        case = cases.get(rec["id"])
        if case is None or case.family != "sdpa" or not rec.get("kernels"):
            continue
        graph = trace_module(case.build(), case.example_inputs(), name=case.id)
        full, half = ([k for k in api.predict_graph(graph, at(share), "unfused", "graph").kernels
                       if k.family in ATTENTION_BACKENDS] for share in (1.0, 0.5))
        measured_s = sum(k["us"] for k in rec["kernels"]) * 1e-6
        if len(full) != 1 or measured_s < 20e-6 or measured_s < 3 * full[0].memory_s:
            continue
        # compute time at share e is scaled / e + fixed (the exponentials on the SFUs, which
        # the share does not touch): two predictions give both terms
        scaled = half[0].compute_s - full[0].compute_s
        fixed = full[0].compute_s - scaled
        if scaled > 0 and measured_s > fixed:
            shares.setdefault(full[0].family, []).append(scaled / (measured_s - fixed))
    return {b: (statistics.median(v), len(v)) for b, v in shares.items()}


CURVE_NOTE = ("achieved fraction of HBM peak of eager PyTorch's kernel against MB read + "
              "written; small sizes hold its fixed GPU time")
CURVE_NOTE_ELEMENTS = ("achieved fraction of HBM peak of eager PyTorch's kernel against MB of "
                       "its elements read + written at 4 bytes each (its time follows elements, "
                       "not bytes); small sizes hold its fixed GPU time")


def spec_figures(runs: list[dict], hw: Hardware, source: str) -> dict:
    """What torch-suite runs give a measured spec, as the spec's YAML keys: `kernel_families`
    (fitted from every run's calibration cases) and `launch` figures: torch.compile's host
    figures (fit_compiled_host, from the first run that has compiled cases) and the replay gap
    (graph_gap_us, from the first run that measured it). Each figure cites `source`."""
    from rooflab.kernel_families import CURVE_ELEMENT_BYTES, FAMILIES, PER_INDEX_FAMILIES
    rows = [r for doc in runs for r in compare(doc, hw)]
    per_index = {fam: fit_per_index(rows, fam) for fam in PER_INDEX_FAMILIES}
    curves = fit_family_curves(rows, hw.hbm_bytes_per_s, FAMILIES, hw.l2_bytes, per_index)
    floors = fit_row_floors(rows, hw.sm_count)
    out: dict = {"kernel_families": {
        fam: {"points": [[mb, f] for mb, f in pts],
              **({"row_floor": [[kb, us] for kb, us in floors[fam]]} if fam in floors else {}),
              **({"per_index_ns": _sig(per_index[fam] * 1e9)} if per_index.get(fam) else {}),
              "source": source,
              "note": CURVE_NOTE_ELEMENTS if fam in CURVE_ELEMENT_BYTES else CURVE_NOTE}
        for fam, pts in curves.items()}, "launch": {}, "attention_by_backend": {}}
    for doc in runs:
        for backend, (share, n) in fit_attention_backends(doc, hw).items():
            out["attention_by_backend"].setdefault(backend, {
                "value": _sig(share), "source": source,
                "note": f"eager SDPA's kernel, compute-bound: fitted on {n} calibration cases"})
    launch = out["launch"]
    for doc in runs:
        if "compiled_call_us" not in launch and any(r.get("compiled_us") for r in doc["cases"]):
            try:
                fit = fit_compiled_host(doc)
            except RooflabError:
                continue
            for key, note in (("compiled_call_us", "a torch.compile call beyond its launches"),
                              ("compiled_launch_us", "per Triton kernel its wrapper launches"),
                              ("compiled_extern_us", "per extern (ATen) call from its wrapper")):
                launch[key] = {"value": round(float(fit[key]), 2), "source": source,
                               "note": f"{note}; fitted on {fit['cases']} host-bound cases"}
        gap = doc["host"].get("graph_gap_us")
        if "graph_gap_us" not in launch and gap is not None:
            launch["graph_gap_us"] = {"value": round(float(gap), 3), "source": source,
                                      "note": "per replayed kernel beyond its profiled time "
                                              "(200 adds of 1M bf16 in one graph)"}
    return out


def add_to_spec(spec: dict, run: dict, run_path: str, source: str = "CAL-TORCH",
                host: bool = True) -> dict:
    """The spec document `spec` (a calibrated spec's YAML keys) with what the torch-suite
    `run` (written at `run_path`) measures: spec_figures' kernel-family curves and SDPA
    backend efficiencies, replacing any, and (with `host`) its launch figures, citing
    `source`."""
    from rooflab.hardware import HardwareFile, to_core
    figures = spec_figures([run], to_core(HardwareFile.model_validate(spec)), source)
    prov = run["provenance"]
    out = {**spec, "sources": {**spec["sources"], source: (
        f"the torch suite's {sum(c.get('split', 'calibration') == 'calibration' for c in run['cases'])}"
        f" calibration cases on {prov.get('gpu')}, "
        f"{prov.get('date_utc')}, torch {prov.get('torch')} (rooflab calibrate --gpu): "
        f"{run_path}")}}
    if host:
        out["launch"] = {**spec["launch"], **figures["launch"]}
    out["kernel_families"] = figures["kernel_families"]
    backends = figures["attention_by_backend"]
    out["efficiency"] = {**spec["efficiency"], "attention_by_backend": backends} if backends \
        else {k: v for k, v in spec["efficiency"].items() if k != "attention_by_backend"}
    return out


def _sig(x: float, digits: int = 4) -> float:
    """`x` rounded to `digits` significant figures (a plain float, for YAML)."""
    return float(f"{x:.{digits}g}")


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
    return "\n".join(lines)
