"""What one schedule's fusions buy over another: the difference, attributed to each fusion.

Kernels of the two schedules are matched by the ops they hold: a set of baseline kernels whose
ops make up exactly one candidate kernel is one fusion. Its savings are the baseline kernels'
totals minus the fused kernel's (HBM bytes, launches, time including launch costs). A kernel
that holds the same ops in both schedules can still take another time: the schedules run it as
different implementations (ATen's rms_norm under `unfused`, a generated kernel under `fused`),
or it waits for the CPU for another time. Those kernels are listed apart (`repriced`), so the
fusions and the rest add up to the whole difference.
This module computes; rooflab.report.comparison renders the text, rooflab.report.jsonout the JSON.
"""

from __future__ import annotations

from dataclasses import dataclass

from rooflab.cost import Prediction
from rooflab.graph import folded_name



@dataclass(frozen=True)
class Fusion:
    kernel: str                 # the candidate's kernel name, block index folded to [*]
    ops: tuple[str, ...]        # op kinds, in order
    fusion: str
    count: int
    hbm_bytes_saved: int
    launches_saved: int
    time_saved_s: float
    stopped_by: tuple[str, ...]


@dataclass(frozen=True)
class Repriced:
    """Kernels (one name, block index folded) holding the same ops in both schedules whose
    time differs; times in seconds, summed over the `count` of them."""
    kernel: str
    count: int
    baseline_s: float
    candidate_s: float

    @property
    def time_saved_s(self) -> float:
        return self.baseline_s - self.candidate_s


# A same-ops kernel is listed as repriced when its time moves by more than this share
REPRICED_SHARE = 0.01


@dataclass(frozen=True)
class Comparison:
    baseline: Prediction
    candidate: Prediction
    fusions: tuple[Fusion, ...]      # sorted by time saved, largest first
    repriced: tuple[Repriced, ...] = ()     # largest |time saved| first
    regrouped_kernels: int = 0       # candidate kernels that are neither kept nor a merge

    @property
    def time_saved_s(self) -> float:
        return self.baseline.totals.time_s - self.candidate.totals.time_s

    @property
    def time_saved_elsewhere_s(self) -> float:
        """Seconds of the difference that no fusion holds: kernels with the same ops priced or
        issued differently, regrouped kernels, the end of the step; 0 where the difference is
        float rounding (under a femtosecond per kernel)."""
        rest = self.time_saved_s - sum(f.time_saved_s for f in self.fusions)
        kernels = len(self.baseline.kernels) + len(self.candidate.kernels)
        return rest if abs(rest) > 1e-15 * kernels else 0.0

    @property
    def speedup(self) -> float:
        return self.baseline.totals.time_s / self.candidate.totals.time_s

    @property
    def hbm_bytes_saved(self) -> int:
        return self.baseline.totals.hbm_bytes - self.candidate.totals.hbm_bytes

    @property
    def launches_saved(self) -> int:
        return self.baseline.totals.kernels - self.candidate.totals.kernels


def compare(baseline: Prediction, candidate: Prediction) -> Comparison:
    """Attribute candidate-vs-baseline differences to the candidate's fused kernels."""
    if baseline.workload != candidate.workload or baseline.hardware.name != candidate.hardware.name:
        raise ValueError("compare two predictions of one workload on one GPU")
    kernel_of = {op: i for i, k in enumerate(baseline.kernels) for op in k.ops}
    groups: dict[str, list] = {}
    same: dict[str, list] = {}
    regrouped_kernels = 0
    for k in candidate.kernels:
        base = sorted({kernel_of[o] for o in k.ops if o in kernel_of})
        base_k = [baseline.kernels[i] for i in base]
        if len(base_k) == 1 and set(base_k[0].ops) == set(k.ops):
            entry = same.setdefault(folded_name(k.name), [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += base_k[0].time_s
            entry[2] += k.time_s
            continue                      # same kernel in both schedules
        if {o for b in base_k for o in b.ops} != set(k.ops):
            regrouped_kernels += 1
            continue                      # not a pure merge of baseline kernels (regrouping)
        key = folded_name(k.name)
        entry = groups.setdefault(key, [k, 0, 0, 0, 0.0, set()])
        entry[1] += 1
        entry[2] += sum(b.hbm_bytes for b in base_k) - k.hbm_bytes
        entry[3] += len(base_k) - 1
        entry[4] += sum(b.time_s for b in base_k) - k.time_s
        entry[5].update(folded_name(s) for s in k.stopped_by)
    fusions = [Fusion(key, k.kinds, k.fusion, n, hbm, launches, t, tuple(sorted(stop)))
               for key, (k, n, hbm, launches, t, stop) in groups.items()]
    fusions.sort(key=lambda f: -f.time_saved_s)
    repriced = [Repriced(key, n, a, b) for key, (n, a, b) in same.items()
                if abs(a - b) > REPRICED_SHARE * a]
    repriced.sort(key=lambda r: -abs(r.time_saved_s))
    return Comparison(baseline, candidate, tuple(fusions), tuple(repriced),
                      regrouped_kernels)
