"""Whole measured steps of Hugging Face models against the predictions of their traces.

A run file (reports/hf_eager/<gpu>-<date>.json, written by lab/hf_eager/measure.py on the GPU)
holds, per bundled model and case (decode: batch x context; prefill: batch x seq), the eager
step time and the CUDA-graph replay time of transformers itself, the CUDA kernels the profiler
counted in one eager step, and a dispatch calibration taken in the same process. Each case is
traced here (`trace_hf`, the same forward call: a prefill computes every position's logits, as
measure.py's call did) and predicted `unfused` with the `eager` and `graph` launch modes, on
the GPU's calibrated spec with its eager dispatch cost replaced by the run's own (host-bound
eager times move between machines, so they are compared only with a calibration taken at the
same time; the GPU-side costs are the spec's).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from rooflab.errors import RooflabError
from rooflab.hardware import Hardware
from rooflab.validate.common import PAIRS_LEGEND


@dataclass(frozen=True)
class MeasuredStep:
    """One measured case. Times in seconds; `kernels`: CUDA kernels the profiler saw in one
    eager step (memsets and memcpys apart: `copies`)."""
    model: str
    phase: str
    batch: int
    tokens: int                 # decode: context; prefill: seq
    eager_s: float | None
    graph_s: float | None
    kernels: int | None
    copies: int = 0

    @property
    def sets(self) -> dict[str, int]:
        """The hf: source's sizes of this case. A measured prefill called the model without
        logits_to_keep, so it computed every position's logits: traced with logit_tokens 0."""
        if self.phase == "decode":
            return {"batch": self.batch, "context": self.tokens}
        return {"batch": self.batch, "seq": self.tokens, "logit_tokens": 0}

    @property
    def label(self) -> str:
        size = "ctx" if self.phase == "decode" else "seq"
        return f"{self.model} {self.phase} b{self.batch} {size}{self.tokens}"


@dataclass(frozen=True)
class HostStep:
    """A model's host-side calibration in the run's own process: one eager decode step (batch 1,
    `context` tokens) of its shrunk config that keeps every layer, whose time is host time."""
    model: str
    config: dict                # the shrunk transformers config, to trace the same step
    context: int
    eager_s: float


@dataclass(frozen=True)
class StepRun:
    path: Path
    gpu: str
    eager_dispatch_s: float     # the run's own calibration: a tiny eager op, wall clock
    steps: tuple[MeasuredStep, ...]
    gemm_dispatch_s: float | None = None    # a tiny eager matmul (1x64 @ 64x64), wall clock
    view_dispatch_s: float | None = None    # a metadata-only eager call (x.view), wall clock
    host_steps: tuple[HostStep, ...] = ()


@dataclass(frozen=True)
class StepComparison:
    step: MeasuredStep
    kernels_traced: int
    eager_s: float              # predicted
    graph_s: float

    @property
    def kernel_error(self) -> float | None:
        k = self.step.kernels
        return None if not k else self.kernels_traced / k - 1

    @property
    def eager_error(self) -> float | None:
        m = self.step.eager_s
        return None if not m else self.eager_s / m - 1

    @property
    def graph_error(self) -> float | None:
        m = self.step.graph_s
        return None if not m else self.graph_s / m - 1


def is_run_of(path: str | Path, script: str) -> bool:
    """Whether `path` is a run file that `script` wrote (its `what` names the script)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return False
    return '"what"' in head and script in head


def is_steps_file(path: str | Path) -> bool:
    """Whether `path` is a measured-steps run file (lab/hf_eager/measure.py's)."""
    return is_run_of(path, "lab/hf_eager/measure.py")


def _ms(rec: dict | None, key: str) -> float | None:
    v = (rec or {}).get(key, {})
    return v.get("median") / 1e3 if isinstance(v, dict) and v.get("median") else None


def load(path: str | Path) -> StepRun:
    """The measured steps of a run file; RooflabError when it is not one."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
        start = doc["calibration"]["start"]
        dispatch = _us(start["add_inplace_1elem"])
        gemm_dispatch, view_dispatch = (_us(start[k]) if k in start else None
                                        for k in ("mm_1x64x64_bf16", "view_no_kernel"))
        gpu = doc["meta"]["timing"]["gpu"]["slug"] if "slug" in doc["meta"]["timing"].get(
            "gpu", {}) else "h200"
        steps = []
        host_steps = tuple(
            HostStep(name, m["host_step"]["config"], m["host_step"]["context"],
                     m["host_step"]["eager"]["wall_ms"]["median"] / 1e3)
            for name, m in doc["models"].items()
            if (m.get("host_step") or {}).get("eager"))
        for name, m in doc["models"].items():
            for rec in m["cases"].values():
                if rec.get("status", "ok") != "ok":
                    continue
                prof = rec.get("profile") or {}
                kernels = prof.get("kernels")
                copies = prof.get("memsets", 0) + prof.get("memcpys", 0)
                tokens = rec["context"] if rec["phase"] == "decode" else rec["seq"]
                steps.append(MeasuredStep(name, rec["phase"], rec["batch"], tokens,
                                          _ms(rec.get("eager"), "wall_ms"),
                                          _ms(rec.get("graph"), "wall_ms"), kernels, copies))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise RooflabError(f"{path}: not a measured-steps run file ({type(e).__name__}: {e})") \
            from None
    return StepRun(path, gpu, dispatch, tuple(steps), gemm_dispatch, view_dispatch, host_steps)


def _us(calibration: dict) -> float:
    """Seconds per op of one of the run's dispatch calibrations (median wall clock)."""
    return calibration["eager_wall_us_per_op"]["median"] * 1e-6


def calibrated(hw: Hardware, run: StepRun) -> Hardware:
    """`hw` with the run's own eager dispatch costs (those the run measured)."""
    hw = hw.with_eager_dispatch(run.eager_dispatch_s)
    if run.gemm_dispatch_s is not None:
        hw = replace(hw, gemm_dispatch_s=run.gemm_dispatch_s)
    if run.view_dispatch_s is not None:
        hw = replace(hw, view_dispatch_s=run.view_dispatch_s)
    return hw


def module_call_fit(run: StepRun, hw: Hardware) -> float | None:
    """Seconds per nn.Module call that close the gap between the run's host steps (its shrunk
    all-layer steps, timed in its own process) and their predictions without module cost, the
    median over models; None when the run has no host steps. `hw`: calibrated(hw, run)."""
    import tempfile

    from rooflab import api
    from rooflab.trace import source
    if not run.host_steps:
        return None
    per_model = []
    with tempfile.TemporaryDirectory() as tmp:
        for h in run.host_steps:
            f = Path(tmp) / f"{h.model}-host.json"
            f.write_text(json.dumps(h.config))
            graph = source.load(f"hf:{f}", {"batch": 1, "context": h.context}, "decode")
            at0, at1 = (api.predict_graph(graph, replace(hw, module_call_s=x), "unfused",
                                          "eager").totals.time_s for x in (0.0, 1e-6))
            modules = (at1 - at0) / 1e-6
            if modules > 0:
                per_model.append(max(0.0, (h.eager_s - at0) / modules))
    return statistics.median(per_model) if per_model else None


def compare(run: StepRun, hw: Hardware) -> list[StepComparison]:
    """Trace and predict every measured step of `run` on `hw` (calibrated with the run's own
    dispatch costs, and with the module call cost its own host steps fit where it has them);
    needs torch and transformers."""
    from rooflab import api
    from rooflab.trace import source
    hw = calibrated(hw, run)
    module_call_s = module_call_fit(run, hw)
    if module_call_s is not None:
        hw = replace(hw, module_call_s=module_call_s)
    out = []
    for s in run.steps:
        graph = source.load(f"hf:{s.model}", s.sets, s.phase)
        eager = api.predict_graph(graph, hw, "unfused", "eager").totals
        replay = api.predict_graph(graph, hw, "unfused", "graph").totals
        out.append(StepComparison(s, eager.kernels, eager.time_s, replay.time_s))
    return out


def median_abs(errors) -> float:
    """Median of |error| over the errors that exist."""
    vals = [abs(e) for e in errors if e is not None]
    return statistics.median(vals) if vals else float("nan")


def render(rows: list[StepComparison]) -> str:
    """A table: per case, kernels traced vs measured, eager and graph predicted vs measured."""
    head = (f"{'case':34s} {'kernels':>15s} {'eager ms':>19s} {'err':>6s} {'graph ms':>19s} "
            f"{'err':>6s}")
    lines = [head, "-" * len(head)]

    def pair(p, m):
        return f"{p * 1e3:8.2f} / {m * 1e3:8.2f}" if m else f"{p * 1e3:8.2f} /        -"

    def pct(e):
        return f"{e * 100:+5.0f}%" if e is not None else "     -"
    for r in rows:
        k = f"{r.kernels_traced:6d} / {r.step.kernels or 0:6d}"
        lines.append(f"{r.step.label:34s} {k:>15s} {pair(r.eager_s, r.step.eager_s)} "
                     f"{pct(r.eager_error)} {pair(r.graph_s, r.step.graph_s)} {pct(r.graph_error)}")
    lines.append(f"median |error|: kernels {median_abs(r.kernel_error for r in rows):.1%}, eager "
                 f"{median_abs(r.eager_error for r in rows):.1%}, graph "
                 f"{median_abs(r.graph_error for r in rows):.1%}")
    return "\n".join(lines + [PAIRS_LEGEND])
