"""The figures a torch-suite run's calibration cases give a measured spec, and the spec with them.

    fit_family_curves   each ATen family's achieved fraction of HBM peak against MB moved (the
                        spec's `kernel_families`), the L2 slope kept up to its capacity
    fit_row_floors      a row kernel's least time against its row's bytes (`row_floor`)
    fit_per_index       a row gather's cost per index (`per_index_ns`)
    fit_attention_backends  each SDPA backend's share of peak (`efficiency.attention_by_backend`)
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
from rooflab.hardware import MAX_CURVE_FRACTION, Hardware
from rooflab.validate.torch_compare import CaseComparison, compare, fit_compiled_host


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
