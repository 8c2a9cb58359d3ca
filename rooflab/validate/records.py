"""Validation results as data: what was predicted, what was measured, and on what machine.

A file `reports/validation/<gpu>-<date>.json` holds one `ValidationFile`. Each case carries the
workload it ran (the full workload mapping, so CI can re-predict it with the current model
without the GPU), the schedule, and per kernel the predicted and measured time.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from rooflab.errors import RooflabError
from rooflab.yamlio import format_loc

SCHEMA = "rooflab.validation/1"


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Provenance(_Rec):
    gpu: str                      # torch.cuda.get_device_name
    sm_count: int
    driver: str
    cuda: str
    torch: str
    triton: str
    date: str                     # ISO 8601, UTC
    command: str
    git_sha: str = ""
    hardware_spec: str            # the rooflab spec the predictions used (name)


class KernelResult(_Rec):
    kernel: str                   # rooflab kernel name
    ops: list[str]
    op_class: str                 # pointwise | reduction | gemm | attention | quantized | gather
    fusion: str                   # "" for a single op
    flops: int
    hbm_bytes: int
    predicted_s: float
    measured_s: float             # median
    measured_p20_s: float
    measured_p80_s: float
    timing: str = "eager"         # graph: replayed as a one-kernel CUDA graph; eager: launched
                                  #   from Python (the default: files without the field timed so)
    bound: str                    # predicted bound
    max_rel_error: float          # output check against the PyTorch reference

    @property
    def error(self) -> float:
        """Signed relative error of the prediction: (predicted - measured) / measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s


class ScheduleResult(_Rec):
    schedule: str                 # policy name
    launch: str                   # eager | graph
    predicted_s: float
    measured_s: float


class CaseResult(_Rec):
    case: str                     # unique id, e.g. "rmsnorm/T=16384,D=4096"
    workload: dict                # the workload mapping (as in a YAML file)
    params: dict[str, int]
    kernels: dict[str, list[KernelResult]]        # schedule -> its kernels
    schedules: list[ScheduleResult] = []


class ValidationFile(_Rec):
    schema_: str = SCHEMA
    provenance: Provenance
    cases: list[CaseResult]

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def dump(self, path: str | Path) -> None:
        data = {"schema": SCHEMA, **self.model_dump(exclude={"schema_"})}
        Path(path).write_text(json.dumps(data, indent=1) + "\n")


def load(path: str | Path) -> ValidationFile:
    """The validation run in `path`; RooflabError naming the file when it cannot be read or is
    not one."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise RooflabError(f"{path}: cannot be read ({e.strerror or e})") from None
    except ValueError as e:
        raise RooflabError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise RooflabError(f"{path}: not a results file rooflab reads (a validation run "
                           f"has schema {SCHEMA}; the torch and tensor-parallel runs, "
                           "measured steps and measured generation each have their own)")
    data.pop("schema")
    try:
        return ValidationFile.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise RooflabError(f"{path}: not a valid validation run: {format_loc(err['loc'])}: "
                           f"{err['msg']}") from None
