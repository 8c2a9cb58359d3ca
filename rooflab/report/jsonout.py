"""The JSON form of predictions: pydantic models, so the schema is explicit and versioned.

`rooflab predict --json` prints a `PredictionsJSON`; `docs/prediction.schema.json` is generated
from these models (`python -m rooflab.report.jsonout`). Bump SCHEMA when a field changes meaning.
All times are seconds, all sizes bytes, all FLOP counts exact integers.
"""

from __future__ import annotations

import json
import math

from pydantic import BaseModel, ConfigDict

from rooflab.compare import Comparison
from rooflab.cost import KernelCost, Prediction

SCHEMA = "rooflab.prediction/1"


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KernelJSON(_Out):
    name: str
    ops: list[str]
    kinds: list[str]
    fusion: str
    tensor_flops: int
    tensor_dtypes: list[str]
    vector_flops: int
    hbm_read_bytes: int
    hbm_write_bytes: int
    l2_reread_bytes: int
    link_bytes: int
    arithmetic_intensity: float | None   # FLOP per HBM byte; null when no HBM traffic
    compute_s: float
    memory_s: float
    link_s: float
    launch_s: float
    time_s: float
    bound: str                           # compute | memory | link | launch
    stopped_by: list[str]


class TotalsJSON(_Out):
    kernels: int
    tensor_flops: int
    vector_flops: int
    hbm_read_bytes: int
    hbm_write_bytes: int
    link_bytes: int
    compute_s: float
    memory_s: float
    link_s: float
    launch_s: float
    time_s: float
    bound: str


class PredictionJSON(_Out):
    workload: str
    hardware: str
    schedule: str
    launch: str
    params: dict[str, int]
    kernels: list[KernelJSON]
    totals: TotalsJSON
    notes: list[str]


class FusionJSON(_Out):
    """One fusion: the kernels of schedule A that became one kernel of schedule B."""
    kernel: str
    ops: list[str]
    fusion: str
    count: int                      # how many times it occurs (repeated blocks)
    hbm_bytes_saved: int
    launches_saved: int
    time_saved_s: float
    stopped_by: list[str]


class RepricedJSON(_Out):
    """Kernels with the same ops in both schedules whose time differs (summed over `count`)."""
    kernel: str
    count: int
    baseline_s: float
    candidate_s: float


class ComparisonJSON(_Out):
    baseline: str
    candidate: str
    launch: str
    time_saved_s: float
    speedup: float
    hbm_bytes_saved: int
    launches_saved: int
    fusions: list[FusionJSON]
    time_saved_elsewhere_s: float = 0.0     # the part of time_saved_s no fusion holds
    repriced: list[RepricedJSON] = []
    regrouped_kernels: int = 0      # candidate kernels that are neither kept nor a merge


class PredictionsJSON(_Out):
    schema_: str = SCHEMA
    predictions: list[PredictionJSON]
    comparisons: list[ComparisonJSON] = []

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def dump(self) -> str:
        return json.dumps({"schema": self.schema_, **self.model_dump(exclude={"schema_"})},
                          indent=2)


def kernel_json(k: KernelCost) -> KernelJSON:
    inten = k.intensity
    return KernelJSON(
        name=k.name, ops=list(k.ops), kinds=list(k.kinds), fusion=k.fusion,
        tensor_flops=k.tensor_flops, tensor_dtypes=list(k.tensor_dtypes),
        vector_flops=k.vector_flops, hbm_read_bytes=k.hbm_read_bytes,
        hbm_write_bytes=k.hbm_write_bytes, l2_reread_bytes=k.l2_reread_bytes,
        link_bytes=k.link_bytes, arithmetic_intensity=None if math.isinf(inten) else inten,
        compute_s=k.compute_s, memory_s=k.memory_s, link_s=k.link_s, launch_s=k.launch_s,
        time_s=k.time_s, bound=k.bound, stopped_by=list(k.stopped_by))


def prediction_json(p: Prediction) -> PredictionJSON:
    t = p.totals
    return PredictionJSON(
        workload=p.workload, hardware=p.hardware.name, schedule=p.policy, launch=p.launch,
        params=p.params, kernels=[kernel_json(k) for k in p.kernels],
        totals=TotalsJSON(kernels=t.kernels, tensor_flops=t.tensor_flops,
                          vector_flops=t.vector_flops, hbm_read_bytes=t.hbm_read_bytes,
                          hbm_write_bytes=t.hbm_write_bytes, link_bytes=t.link_bytes,
                          compute_s=t.compute_s, memory_s=t.memory_s, link_s=t.link_s,
                          launch_s=t.launch_s, time_s=t.time_s, bound=t.bound),
        notes=list(p.notes))


def comparison_json(c: Comparison) -> ComparisonJSON:
    """The JSON form of a comparison: totals saved, then every fusion, largest first."""
    return ComparisonJSON(
        baseline=c.baseline.policy, candidate=c.candidate.policy, launch=c.baseline.launch,
        time_saved_s=c.time_saved_s, speedup=c.speedup, hbm_bytes_saved=c.hbm_bytes_saved,
        launches_saved=c.launches_saved,
        fusions=[FusionJSON(kernel=f.kernel, ops=list(f.ops), fusion=f.fusion, count=f.count,
                            hbm_bytes_saved=f.hbm_bytes_saved, launches_saved=f.launches_saved,
                            time_saved_s=f.time_saved_s, stopped_by=list(f.stopped_by))
                 for f in c.fusions],
        time_saved_elsewhere_s=c.time_saved_elsewhere_s,
        repriced=[RepricedJSON(kernel=r.kernel, count=r.count, baseline_s=r.baseline_s,
                               candidate_s=r.candidate_s) for r in c.repriced],
        regrouped_kernels=c.regrouped_kernels)


if __name__ == "__main__":
    print(json.dumps(PredictionsJSON.model_json_schema(), indent=2))
