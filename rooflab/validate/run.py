"""Run a validation suite on the GPU: build each kernel of each schedule as a Triton kernel,
check it against the PyTorch reference, time it, and record predicted vs measured.

Timing (see accuracy.py for what each number is compared with):
  * kernels: each captured as a one-kernel CUDA graph, replayed by `triton.testing.do_bench`
    (warm-up, median of many runs, L2 flushed before each by writing a 256 MB buffer, CUDA
    events) on fresh random inputs (timing.py says why a graph);
  * schedules: every kernel of the schedule replayed as one CUDA graph, and launched eagerly one
    by one from Python, each timed the same way.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from dataclasses import dataclass
from pathlib import Path

import torch
import triton

from rooflab import api, workload
from rooflab.hardware import Hardware
from rooflab.validate import accuracy
from rooflab.validate.kernels import route
from rooflab.validate.records import (CaseResult, KernelResult, Provenance, ScheduleResult,
                                      ValidationFile)
from rooflab.validate.common import Unsupported
from rooflab.validate.gpu import git_sha
from rooflab.validate.reference import (TOLERANCE, make_scales, random_input, rel_error,
                                        run_graph, scales_name)
from rooflab.validate.suite import Case
from rooflab.validate.timing import bench, bench_kernel, capture

SCHEDULES = ("unfused", "fused")


class Mismatch(Exception):
    """A kernel's output differs from the PyTorch reference beyond its dtype's tolerance."""


def cuda_available() -> bool:
    return torch.cuda.is_available()


def provenance(command: str, spec: str) -> Provenance:
    props = torch.cuda.get_device_properties(0)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        driver = "unknown"
    return Provenance(gpu=props.name, sm_count=props.multi_processor_count, driver=driver,
                      cuda=str(torch.version.cuda), torch=torch.__version__,
                      triton=triton.__version__,
                      date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                      command=command, git_sha=git_sha(), hardware_spec=spec)


def _inputs(graph, seed: int) -> dict[str, torch.Tensor]:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    made = {t for op in graph.ops for t in op.outputs}
    env = {name: random_input(t, "cuda", gen) for name, t in graph.tensors.items()
           if name not in made}
    for op in graph.ops:                 # group scales of int weights (W4A16)
        group = op.attrs.get("group_size")
        for name in op.inputs:
            w = graph.tensors[name]
            if group and w.dtype.name in ("int4", "int8") and scales_name(name) not in env:
                env[scales_name(name)] = make_scales(w, group, "cuda", gen)
    return env


@dataclass
class _Sched:
    name: str
    built: list
    pred: object


def run_case(case: Case, hw: Hardware, seed: int = 0, log=print) -> CaseResult:
    """Build, check and time both schedules of one case. Raises Unsupported to skip it."""
    graph = workload.load_dict(case.workload)
    scheds = []
    for s in SCHEDULES:
        pred = api.predict_graph(graph, hw, s, "graph", "rooflab")
        if pred.notes:
            raise Unsupported("; ".join(pred.notes))
        scheds.append(_Sched(s, [route.build(pred.schedule.graph, k) for k in pred.schedule.kernels], pred))
    inputs = _inputs(graph, seed)
    ref = run_graph(graph, inputs)
    kernels: dict[str, list[KernelResult]] = {}
    schedules: list[ScheduleResult] = []
    measured: dict[str, tuple] = {}
    for sc in scheds:
        cp = accuracy.predict_case(case.workload, {}, hw, sc.name)
        results = []
        for b, k in zip(sc.built, sc.pred.kernels):
            env = {t: ref[t] for t in b.inputs}
            got = b.run(env)
            torch.cuda.synchronize()
            err = 0.0
            for t, val in got.items():
                tol = TOLERANCE.get(graph.tensors[t].dtype.name, 2e-2)
                e = rel_error(val, ref[t])
                if not e <= tol:
                    raise Mismatch(f"{case.name} [{sc.name}] kernel {k.name}: output {t} differs "
                                   f"from the PyTorch reference by {e:.3g} (tolerance {tol:g})")
                err = max(err, e)
            key = tuple(k.ops)
            if key not in measured:        # a kernel both schedules share is timed once
                measured[key] = bench_kernel(lambda b=b, env=env: b.run(env))
            p50, p20, p80, timing = measured[key]
            results.append(KernelResult(
                kernel=k.name, ops=list(k.ops), op_class=cp.classes[k.name], fusion=k.fusion,
                flops=k.flops, hbm_bytes=k.hbm_bytes, predicted_s=cp.kernels[k.name],
                measured_s=p50, measured_p20_s=p20, measured_p80_s=p80, timing=timing,
                bound=k.bound, max_rel_error=err))
        kernels[sc.name] = results
        schedules += _time_schedule(sc, inputs, cp)
    log(f"  {case.name}: " + ", ".join(
        f"{s.schedule}/{s.launch} {s.measured_s * 1e6:.1f} µs (pred {s.predicted_s * 1e6:.1f})"
        for s in schedules))
    return CaseResult(case=case.name, workload=case.workload, params={}, kernels=kernels,
                      schedules=schedules)


def _time_schedule(sc: _Sched, inputs: dict, cp) -> list[ScheduleResult]:
    def eager():
        env = dict(inputs)
        for b in sc.built:
            env.update(b.run(env))
    eager()
    torch.cuda.synchronize()
    graph = capture(eager)
    g50, _, _ = bench(graph.replay)
    e50, _, _ = bench(eager)
    return [ScheduleResult(schedule=sc.name, launch="graph", predicted_s=cp.graph_s, measured_s=g50),
            ScheduleResult(schedule=sc.name, launch="eager", predicted_s=cp.eager_s, measured_s=e50)]


def run_suite(cases: list[Case], hw: Hardware, spec_name: str, command: str,
              out: str | Path | None = None, log=print) -> ValidationFile:
    """Run every case; skipped cases are logged with their reason. Mismatches abort. With
    `out`, the results so far are written after every case, so that a run cut short (a time
    limit, a lost machine) keeps the cases it finished."""
    results, failures = [], []
    prov = provenance(command, spec_name)
    for i, case in enumerate(cases, 1):
        log(f"[{i}/{len(cases)}] {case.name}")
        try:
            results.append(run_case(case, hw, seed=i, log=log))
        except Unsupported as e:
            log(f"  skipped: {e}")
        except Exception as e:             # a wrong or broken kernel: never a silent number
            failures.append(f"{case.name}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
            log(f"  FAILED: {failures[-1]}")
        torch.cuda.empty_cache()
        if out:
            ValidationFile(provenance=prov, cases=results).dump(out)
    vf = ValidationFile(provenance=prov, cases=results)
    if out:
        vf.dump(out)
    if failures:
        raise ValidationFailed(failures)
    return vf


class ValidationFailed(Exception):
    """Some cases failed their correctness check or crashed; the others were saved."""

    def __init__(self, failures: list[str]):
        self.failures = failures
        super().__init__(f"{len(failures)} case(s) failed: " + "; ".join(failures))

