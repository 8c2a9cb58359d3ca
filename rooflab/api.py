"""The Python API: everything the CLI does, callable from Python.

    >>> from rooflab.api import predict
    >>> p = predict("workloads/gemm_bias_gelu_residual.yaml", "h100-sxm", schedule="fused")
    >>> p.totals.time_s, p.totals.hbm_bytes

Serving answers (TTFT, TPOT, memory fit, sweeps) are rooflab.serve's `serve` and `sweep`.
"""

from __future__ import annotations

from pathlib import Path

from rooflab import cost, hardware, lowering, schedule, workload
from rooflab.cost import Prediction
from rooflab.errors import RooflabError
from rooflab.graph import Graph
from rooflab.hardware import Hardware


def load_workload(path: str | Path, sets: dict[str, int] | None = None,
                  phase: str | None = None, inputs: tuple[str, ...] = ()) -> Graph:
    """The Graph of a workload YAML (a path or a bundled name), or of a program traced on the
    spot: `hf:NAME_OR_CONFIG` (with `phase`, default decode, and `sets` batch/seq/context) or
    `py:FILE.py:FACTORY` (with `inputs` like "x=[16,4096]:bf16"); see rooflab/trace/source.py."""
    from rooflab.trace import source
    path = source.as_program(str(path))
    if path.startswith("hf:"):
        return source.load(str(path), sets, phase if phase is not None else "decode", inputs)
    if phase not in (None, "decode"):
        raise RooflabError(f"--phase is for hf: models; {path} is one step (its sizes are set "
                           "with --set)")
    if source.is_program(str(path)):
        return source.load(str(path), sets, "decode", inputs)
    if inputs:
        raise RooflabError("--input is for py: sources; a workload file declares its tensors")
    return workload.load(str(path), sets)


def load_hardware(name_or_path: str | Hardware) -> Hardware:
    return name_or_path if isinstance(name_or_path, Hardware) else hardware.load(name_or_path)


def predict_graph(graph: Graph, hw: Hardware, schedule_name: str = "unfused",
                  launch: str = "eager", kernels: str | None = None,
                  l2_flushed: bool = False) -> Prediction:
    """Lower `graph` for `hw` (dtype fallbacks), schedule it under a policy, and price it.
    `kernels`: whose kernels run it (rooflab.kernel_families.IMPLEMENTATIONS; default: the
    policy's: eager PyTorch's ATen kernels for `unfused`, `inductor`'s for inductor, and
    `rooflab+library` for the other fusing policies);
    `l2_flushed`: the step starts after an L2 flush (as the Triton validation times it)."""
    low = lowering.lower(graph, hw)
    sched = schedule.build(low.graph, schedule_name, hw, graph.notes + tuple(low.notes))
    return cost.predict(sched, hw, launch, kernels, l2_flushed)


def predict(workload_path: str | Path | Graph, hw: str | Hardware, schedule: str = "unfused",
            launch: str = "eager", sets: dict[str, int] | None = None) -> Prediction:
    """Predict one workload on one GPU under one schedule and launch mode."""
    graph = workload_path if isinstance(workload_path, Graph) else load_workload(workload_path, sets)
    return predict_graph(graph, load_hardware(hw), schedule, launch)


def predict_matrix(graph: Graph, gpus: list[Hardware], schedules: list[str], launches: list[str]):
    """Predictions for every GPU x launch mode x schedule, and per (GPU, launch mode) the
    comparison of each later schedule against the first. Returns (predictions, comparisons)."""
    from rooflab import compare
    preds, comparisons = [], []
    for hw in gpus:
        for mode in launches:
            ps = [predict_graph(graph, hw, s, mode) for s in schedules]
            preds += ps
            comparisons += [compare.compare(ps[0], p) for p in ps[1:]]
    return preds, comparisons



def predict_pipeline(source: str, hw: Hardware, sets: dict | None = None, phase: str | None = None,
                     schedule_name: str = "unfused", launch: str = "eager", pp: int = 2,
                     nodes: int = 1, microbatches: int = 1):
    """A traced hf: step cut into `pp` pipeline stages (rooflab/trace/pipeline.py), each priced
    on `hw`, the stages placed in order on `nodes` nodes: (stage predictions, PipelineTime).
    `sets` as for load_workload (its `tp`, `batch`); with `microbatches` m, each stage runs the
    step at batch / m, m times."""
    from rooflab.trace import pipeline
    sets = dict(sets or {})
    batch = sets.get("batch", 1)
    if microbatches < 1 or batch % microbatches:
        raise RooflabError(f"--microbatches {microbatches}: batch {batch} does not divide "
                           "into that many micro-batches")
    if nodes < 1 or pp % nodes:
        raise RooflabError(f"--nodes {nodes}: {pp} pipeline stages do not spread evenly over "
                           f"{nodes} nodes")
    graph = load_workload(source, {**sets, "batch": batch // microbatches}, phase)
    per_node = pp // nodes
    across = tuple(s > 0 and s // per_node != (s - 1) // per_node for s in range(pp))
    preds = [predict_graph(g, hw, schedule_name, launch)
             for g in pipeline.stages(graph, pp, across)]
    return preds, pipeline.PipelineTime(tuple(p.totals.time_s for p in preds), microbatches)
