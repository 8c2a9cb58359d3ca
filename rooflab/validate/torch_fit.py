"""The figures a torch-suite run's calibration cases give a measured spec, and the spec with them.

    fit_family_curves   each ATen family's achieved fraction of HBM peak against MB moved (the
                        spec's `kernel_families`), the L2 slope kept up to its capacity
    fit_gemm_curves     the cuBLAS GEMM family's FLOP and byte curves and their overlap
    fit_row_floors      a row kernel's least time against its row's bytes (`row_floor`)
    fit_per_index       a row gather's cost per index (`per_index_ns`)
    fit_attention_backends  each SDPA backend's share of peak (`efficiency.attention_by_backend`)
    fit_attention_fixed     each SDPA backend's GPU time per call beyond its work (`launch.sdpa_fixed_us`)
    spec_figures, add_to_spec  all of them (and torch.compile's host figures, the replay gap)
                        as a spec's YAML keys, citing the run

The runs are compared with the model first (rooflab.validate.torch_compare), so every fit works
on the same traced cases the comparison prices. Needs torch where it traces.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import numpy as np

from rooflab.errors import RooflabError
from rooflab.hardware import Hardware, log_interp
from rooflab.hardware_spec import MAX_CURVE_FRACTION
from rooflab.kernel_families import floor_at
from rooflab.validate.torch_compare import (CaseComparison, calibrated, compare,
                                            fit_compiled_graph_call, fit_compiled_host,
                                            fit_eager_calls, traced_cases)


# A calibration case taking at most this ratio of its row kernel's floor is on the floor: its
# rows have not yet filled the GPU
FLOOR_RATIO = 1.1


def fit_family_curves(rows: list[CaseComparison], hbm_peak_bytes_per_s: float,
                      families, l2_bytes: float | None = None,
                      per_index_s: dict[str, float] | None = None,
                      row_floors: dict[str, list[tuple[float, float]]] | None = None
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
    Past the capacity nothing stays in L2, so no size there runs faster than the first
    measurement beyond it did: a line from the L2 knot would price sizes just past it at
    nearly L2's rate.

    `per_index_s` (family -> seconds per index, fit_per_index): a row gather's time less that
    cost per index is what its curve holds.

    `row_floors` (fit_row_floors): a row kernel takes its floor (one row's serial time) until
    its rows fill the GPU, then its time grows with its bytes. Above a measurement the floor
    explains (within FLOOR_RATIO), time is interpolated as that measurement's time or the next
    measurement's rate, whichever is slower, where that is below the line: a line from the
    floor would price 128 rows of a vocabulary softmax, still on the floor's wave, at a third
    of the way to 512 rows' time."""
    curves: dict[str, list[tuple[float, float]]] = {}
    for fam in families:
        floor = (row_floors or {}).get(fam)
        cases = [(r.curve_bytes or r.moved_bytes,
                  r.kernel_us * 1e-6 - (per_index_s or {}).get(fam, 0.0) * r.indices,
                  bool(floor) and r.kernel_us <= FLOOR_RATIO * floor_at(floor, r.row_bytes / 1e3))
                 for r in rows if r.family == fam and r.split == "calibration" and r.kernel_us
                 and r.moved_bytes]
        if not cases:
            continue
        nbytes, time_s, on_floor = _medians_by_size(*map(list, zip(*cases)))
        if len(nbytes) < 2:
            continue
        beyond_l2 = None
        if l2_bytes:
            nbytes, time_s, on_floor = _with_l2_knot(nbytes, time_s, on_floor, l2_bytes)
            past = nbytes > l2_bytes
            if past.any() and (~past).any():
                beyond_l2 = (l2_bytes, nbytes[past][0], time_s[past][0])
        curves[fam] = [(_sig(b / 1e6), _sig(f)) for b, f in
                       _fraction_grid(nbytes, time_s, hbm_peak_bytes_per_s, 1e3,
                                      MAX_CURVE_FRACTION, beyond_l2, on_floor)]
    return curves


def _fraction_grid(size: np.ndarray, time_s: np.ndarray, peak_per_s: float, start: float,
                   cap: float, slowest_past: tuple[float, float, float] | None = None,
                   on_floor: np.ndarray | None = None) -> list[tuple[float, float]]:
    """Measured times against sizes (FLOPs or bytes, increasing) as a curve of achieved
    fractions of `peak_per_s`, [(size, fraction), ...]: the time interpolated linearly in size
    between measurements (constant below the smallest), at four points a decade from `start`
    to the largest size and at each measurement, the fraction at most `cap`. A spec's curve
    is read in log(size), which between two measurements decades apart would miss a time
    that is a fixed cost plus a rate. `slowest_past` (edge, size, time_s): sizes between the edge
    and the measurement (size, time_s) beyond it run no faster than that measurement did, and
    a point just past the edge marks where that starts. `on_floor` (per measurement): above a
    measurement on its kernel's floor, the time is the larger of that measurement's time and
    the size at the next measurement's rate, where that is below the line (a faster next
    measurement, of another row length, keeps the line)."""
    between = 10 ** np.arange(np.log10(start), np.log10(size[-1]), 0.25)
    # grid points within 1 % of a measurement would duplicate it once rounded
    apart = np.min(np.abs(between[:, None] / size[None, :] - 1), axis=1) > 0.01
    between = between[apart]
    if slowest_past:
        edge, b_past, t_past = slowest_past
        # the cliff: the knot at the edge, then just past it the rate beyond it
        just_past = edge * 1.001
        if np.all(np.abs(just_past / size[size > edge] - 1) > 0.01):
            between = np.append(between, just_past)
    grid = np.sort(np.concatenate([between, size]))
    t = np.interp(grid, size, time_s)
    if on_floor is not None and on_floor[:-1].any():
        # each grid point's measurement below it (the last one at or below)
        below = np.clip(np.searchsorted(size, grid, side="right") - 1, 0, len(size) - 2)
        hockey = np.maximum(time_s[below], grid * time_s[below + 1] / size[below + 1])
        t = np.where(on_floor[below] & (grid > size[below]), np.minimum(t, hockey), t)
    if slowest_past:
        t = np.where((grid > edge) & (grid < b_past), np.maximum(t, grid * t_past / b_past), t)
    frac = np.minimum(grid / t / peak_per_s, cap)
    return list(zip(grid.tolist(), frac.tolist()))


def _medians_by_size(size, time_s, on_floor=None):
    """Measurements (size, seconds) with sizes within 1 % of each other as one (they would
    round to one point): the median size and time of each group, sizes increasing; with
    `on_floor` (a flag per measurement), also whether every one of the group's was set."""
    order = np.argsort(size, kind="stable")
    size, time_s = np.asarray(size, dtype=float)[order], np.asarray(time_s, dtype=float)[order]
    groups: list[list[int]] = []
    for i, b in enumerate(size):
        if groups and b <= size[groups[-1][0]] * 1.01:
            groups[-1].append(i)
        else:
            groups.append([i])
    medians = (np.array([np.median(size[g]) for g in groups]),
               np.array([np.median(time_s[g]) for g in groups]))
    if on_floor is None:
        return medians
    flags = np.asarray(on_floor, dtype=bool)[order]
    return (*medians, np.array([flags[g].all() for g in groups]))


def _rising(size: np.ndarray, time_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The measurements (_medians_by_size) that no larger one undercuts: a kernel that does more
    work is not faster, so a measurement slower than a larger one (cuBLAS picking a poor
    kernel for that shape) is left out of the curve."""
    size, time_s = _medians_by_size(size, time_s)
    keep = time_s <= np.minimum.accumulate(time_s[::-1])[::-1]
    return size[keep], time_s[keep]


# The suite's families of single cuBLAS GEMM calls (mm, linear, addmm, bmm)
_GEMM_CASE_FAMILIES = ("gemm", "bmm")


def fit_gemm_curves(rows: list[CaseComparison], tensor_peak_flops_per_s: float,
                    hbm_peak_bytes_per_s: float) -> dict | None:
    """The cuBLAS GEMM family's spec figures from the single-GEMM calibration cases (16-bit):
    {"gflop_points": [(GFLOP, fraction of tensor peak), ...], "points": [(MB, fraction of
    HBM peak), ...], "overlap": share, "cases": n}; None with fewer than two cases of either
    kind.

    A case whose FLOPs at the tensor peak take at least twice as long as its bytes at the HBM
    peak is a FLOP point, the reverse a byte point; the smallest GEMM is a point of both
    curves (its time is the family's floor). Each curve follows its points' times (_fraction_grid; a point
    slower than a larger one is left out). The model prices a GEMM at max + overlap x min of
    its two curve times; `overlap` is the least-squares share over the cases whose two times
    lie within 4x of each other, clipped to [0, 1]. A point's time holds its share of the
    other term, so each point's time less that share is fitted again, three rounds in all."""
    cases = [(r.gemm_flops, r.moved_bytes, r.kernel_us * 1e-6) for r in rows
             if r.split == "calibration" and r.family in _GEMM_CASE_FAMILIES
             and r.gemm_flops and r.kernel_us and r.moved_bytes]
    if not cases:
        return None
    flops, nbytes, time_s = (np.array(v, dtype=float) for v in zip(*cases))
    ideal_c, ideal_m = flops / tensor_peak_flops_per_s, nbytes / hbm_peak_bytes_per_s
    smallest = np.arange(len(cases)) == np.argmin(ideal_c + ideal_m)
    on_flops = (ideal_c >= 2 * ideal_m) | smallest
    on_bytes = (ideal_m >= 2 * ideal_c) | smallest
    if on_flops.sum() < 2 or on_bytes.sum() < 2:
        return None
    overlap = 0.0
    t_c = t_m = np.zeros_like(time_s)
    for _ in range(3):
        c_pts = _fraction_grid(*_rising(flops[on_flops], time_s[on_flops]
                                        - overlap * t_m[on_flops]),
                               tensor_peak_flops_per_s, 1e5, 1.0)
        m_pts = _fraction_grid(*_rising(nbytes[on_bytes], time_s[on_bytes]
                                        - overlap * t_c[on_bytes]),
                               hbm_peak_bytes_per_s, 1e3, MAX_CURVE_FRACTION)
        t_c = flops / (tensor_peak_flops_per_s * log_interp(c_pts, flops))
        t_m = nbytes / (hbm_peak_bytes_per_s * log_interp(m_pts, nbytes))
        hi, lo = np.maximum(t_c, t_m), np.minimum(t_c, t_m)
        mixed = hi <= 4 * lo
        overlap = float(np.clip(np.dot(lo[mixed], time_s[mixed] - hi[mixed])
                                / np.dot(lo[mixed], lo[mixed]), 0.0, 1.0)) if mixed.any() \
            else 0.0
    return {"gflop_points": [(_sig(f / 1e9), _sig(x)) for f, x in c_pts],
            "points": [(_sig(b / 1e6), _sig(x)) for b, x in m_pts],
            "overlap": _sig(overlap, 3), "cases": len(cases)}


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


def _with_l2_knot(nbytes: np.ndarray, time_s: np.ndarray, on_floor: np.ndarray,
                  l2_bytes: float):
    """The measurements (and their on-floor flags) with a knot at the L2 capacity, its time
    extrapolated from the two largest measurements within it (bounded by their neighbours),
    on a floor where the largest of them is; unchanged where fewer than two fit or none lies
    beyond."""
    inside = nbytes <= l2_bytes
    if inside.sum() < 2 or inside.all() or np.any(nbytes == l2_bytes):
        return nbytes, time_s, on_floor
    (b0, b1), (t0, t1) = nbytes[inside][-2:], time_s[inside][-2:]
    t_l2 = t1 + (l2_bytes - b1) * max(t1 - t0, 0.0) / (b1 - b0)
    t_l2 = min(max(t_l2, t1), time_s[~inside][0])
    at = int(inside.sum())
    return (np.insert(nbytes, at, l2_bytes), np.insert(time_s, at, t_l2),
            np.insert(on_floor, at, on_floor[at - 1]))


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


# SDPA calls measured under this long show their fixed time more than their work
SDPA_FIXED_MAX_S = 50e-6


def fit_attention_fixed(doc: dict, hw: Hardware) -> dict[str, tuple[float, int]]:
    """Per SDPA backend, (GPU seconds per call beyond its work, cases): the median over the
    run's short calibration cases (measured under SDPA_FIXED_MAX_S) of measured minus
    predicted kernel time on `hw` (which carries the fitted backend shares). Needs torch."""
    from rooflab import api
    from rooflab.kernel_families import ATTENTION_BACKENDS
    from rooflab.trace import trace_module
    from rooflab.validate import torch_suite
    hw = replace(hw, attention_backend_fixed_s={})
    cases = {c.id: c for c in torch_suite.select(split="calibration")}
    excess: dict[str, list[float]] = {}
    for rec in doc["cases"]:
        case = cases.get(rec["id"])
        if case is None or case.family != "sdpa" or not rec.get("kernels"):
            continue
        measured_s = sum(k["us"] for k in rec["kernels"]) * 1e-6
        if measured_s >= SDPA_FIXED_MAX_S:
            continue
        graph = trace_module(case.build(), case.example_inputs(), name=case.id)
        kernels = api.predict_graph(graph, hw, "unfused", "graph").kernels
        backends = [k.family for k in kernels if k.family in ATTENTION_BACKENDS]
        if len(backends) == 1:
            predicted_s = sum(k.time_s - k.launch_s for k in kernels)
            excess.setdefault(backends[0], []).append(max(measured_s - predicted_s, 0.0))
    return {b: (statistics.median(v), len(v)) for b, v in excess.items()}


CURVE_NOTE = ("achieved fraction of HBM peak of eager PyTorch's kernel against MB read + "
              "written; small sizes hold its fixed GPU time")
CURVE_NOTE_ELEMENTS = ("achieved fraction of HBM peak of eager PyTorch's kernel against MB of "
                       "its elements read + written at 4 bytes each (its time follows elements, "
                       "not bytes); small sizes hold its fixed GPU time")

GEMM_NOTE = ("eager PyTorch's cuBLAS GEMMs (16-bit): achieved fraction of the tensor peak "
             "against GFLOP (gflop_points) and of HBM peak against MB read + written (points), "
             "each priced time adding `overlap` of the other; fitted on {n} calibration cases")


def spec_figures(runs: list[dict], hw: Hardware, source: str) -> dict:
    """What torch-suite runs give a measured spec, as the spec's YAML keys: `kernel_families`
    (fitted from every run's calibration cases) and `launch` figures: torch.compile's host
    figures (fit_compiled_host, from the first run that has compiled cases, and cudagraph trees'
    call under reduce-overhead: fit_compiled_graph_call, from that run), each op kind's
    eager call (fit_eager_calls, from the first run that has host-bound ones) and the replay gap
    (graph_gap_us, from the first run that measured it); the cuBLAS GEMM family's curves
    (fit_gemm_curves). Each figure cites `source`."""
    from rooflab.kernel_families import (CURVE_ELEMENT_BYTES, FAMILIES, GEMM_FAMILY,
                                         PER_INDEX_FAMILIES)
    rows = [r for doc in runs for r in compare(doc, hw)]
    per_index = {fam: fit_per_index(rows, fam) for fam in PER_INDEX_FAMILIES}
    floors = fit_row_floors(rows, hw.sm_count)
    curves = fit_family_curves(rows, hw.hbm_bytes_per_s, FAMILIES, hw.l2_bytes, per_index,
                               floors)
    out: dict = {"kernel_families": {
        fam: {"points": [[mb, f] for mb, f in pts],
              **({"row_floor": [[kb, us] for kb, us in floors[fam]]} if fam in floors else {}),
              **({"per_index_ns": _sig(per_index[fam] * 1e9)} if per_index.get(fam) else {}),
              "source": source,
              "note": CURVE_NOTE_ELEMENTS if fam in CURVE_ELEMENT_BYTES else CURVE_NOTE}
        for fam, pts in curves.items()}, "launch": {}, "attention_by_backend": {}}
    gemm = fit_gemm_curves(rows, hw.tensor_flops_per_s["bf16"], hw.hbm_bytes_per_s)
    if gemm:
        out["kernel_families"][GEMM_FAMILY] = {
            "points": [[mb, f] for mb, f in gemm["points"]],
            "gflop_points": [[gf, f] for gf, f in gemm["gflop_points"]],
            "overlap": gemm["overlap"], "source": source,
            "note": GEMM_NOTE.format(n=gemm["cases"])}
    for doc in runs:
        for backend, (share, n) in fit_attention_backends(doc, hw).items():
            out["attention_by_backend"].setdefault(backend, {
                "value": _sig(share), "source": source,
                "note": f"eager SDPA's kernel, compute-bound: fitted on {n} calibration cases"})
    shared = replace(hw, attention_backend_efficiency={
        b: f["value"] for b, f in out["attention_by_backend"].items()})
    out["sdpa_fixed_us"] = {}
    for doc in runs:
        for backend, (fixed_s, n) in fit_attention_fixed(doc, shared).items():
            if fixed_s > 0:
                out["sdpa_fixed_us"].setdefault(backend, {
                    "value": _sig(fixed_s * 1e6), "source": source,
                    "note": f"eager SDPA's GPU time beyond its work: the median over {n} "
                            f"calibration cases under {SDPA_FIXED_MAX_S * 1e6:.0f} µs"})
    launch = out["launch"]
    for doc in runs:
        compiled = None         # the run that gives torch.compile's figures gives trees' too
        if "compiled_call_us" not in launch and any(r.get("compiled_us") for r in doc["cases"]):
            try:
                compiled = fit = fit_compiled_host(doc)
            except RooflabError:
                continue
            for key, note in (("compiled_call_us", "a torch.compile call beyond its launches"),
                              ("compiled_launch_us", "per Triton kernel its wrapper launches"),
                              ("compiled_extern_us", "per extern (ATen) call from its wrapper")):
                launch[key] = {"value": round(float(fit[key]), 2), "source": source,
                               "note": f"{note}; fitted on {fit['cases']} host-bound cases"}
        # the run's traced cases, only where a fit below needs them (tracing is the slow part)
        graphs = traced_cases(doc)[1] if compiled or "eager_call_us" not in launch else {}
        if compiled:
            # on this run's own host figures, as `validate --backend torch` compares it
            host_hw = calibrated(shared, doc["host"], compiled, fit_eager_calls(doc, graphs))
            trees = fit_compiled_graph_call(doc, host_hw, graphs)
            if trees:
                launch["compiled_graph_call_us"] = {
                    "value": round(trees[0] * 1e6, 2), "source": source,
                    "note": f"cudagraph trees' own host time per reduce-overhead call; fitted "
                            f"on {trees[1]} host-bound cases"}
        if "eager_call_us" not in launch:
            calls = fit_eager_calls(doc, graphs)
            if calls:
                launch["eager_call_us"] = {
                    kind: {"value": _sig(us), "source": source,
                           "note": f"an eager call of this kind from a forward; the median of "
                                   f"{n} host-bound calibration cases"}
                    for kind, (us, n) in sorted(calls.items())}
        gap = doc["host"].get("graph_gap_us")
        if "graph_gap_us" not in launch and gap is not None:
            launch["graph_gap_us"] = {"value": round(float(gap), 3), "source": source,
                                      "note": "per replayed kernel beyond its profiled time "
                                              "(200 adds of 1M bf16 in one graph)"}
    return out


def add_to_spec(spec: dict, run: dict, run_path: str, source: str = "CAL-TORCH",
                host: bool = True) -> dict:
    """The spec document `spec` (a calibrated spec's YAML keys) with what the torch-suite
    `run` (written at `run_path`) measures: spec_figures' kernel-family curves, SDPA
    backend efficiencies and fixed times, replacing any, and (with `host`) its launch figures,
    citing `source`."""
    from rooflab.hardware import to_core
    from rooflab.hardware_spec import HardwareFile
    figures = spec_figures([run], to_core(HardwareFile.model_validate(spec)), source)
    prov = run["provenance"]
    out = {**spec, "sources": {**spec["sources"], source: (
        f"the torch suite's {sum(c.get('split', 'calibration') == 'calibration' for c in run['cases'])}"
        f" calibration cases on {prov.get('gpu')}, "
        f"{prov.get('date_utc')}, torch {prov.get('torch')} (rooflab calibrate --gpu): "
        f"{run_path}")}}
    launch = {k: v for k, v in spec["launch"].items() if k != "sdpa_fixed_us"}
    out["launch"] = {**launch, **(figures["launch"] if host else {}),
                     **({"sdpa_fixed_us": figures["sdpa_fixed_us"]}
                        if figures["sdpa_fixed_us"] else {})}
    out["kernel_families"] = figures["kernel_families"]
    backends = figures["attention_by_backend"]
    out["efficiency"] = {**spec["efficiency"], "attention_by_backend": backends} if backends \
        else {k: v for k, v in spec["efficiency"].items() if k != "attention_by_backend"}
    return out


def _sig(x: float, digits: int = 4) -> float:
    """`x` rounded to `digits` significant figures (a plain float, for YAML)."""
    return float(f"{x:.{digits}g}")
