"""The launch model: what issuing a schedule's kernels costs besides their work, per launch mode.

Launch modes: `eager` dispatches each kernel from the CPU (eager_dispatch_s each); the CPU runs
ahead of the GPU, so a kernel waits only when the CPU has not issued it yet: short kernels leave
the GPU idle (launch-bound); each kernel also pays min_kernel_s on the GPU. `graph` replays the
step as a CUDA graph: one dispatch, then per kernel its GPU-side start and the gap to the next
(graph_warm_launch_s where what it reads is in L2, else graph_launch_s: rooflab.l2_residency).
`compiled` is a torch.compile'd call: one call's guards and wrapper (compiled_call_host_s), then
the wrapper launches each Triton kernel (compiled_launch_host_s) or calls an extern one through
ATen (a cuBLAS GEMM, attention, a collective: compiled_extern_host_s); the GPU follows as in
`eager`. Inductor's kernels are priced by the schedule (`inductor` reproduces its default
fusion).
`reduce-overhead` is torch.compile's mode of that name: the schedule replayed as in `graph`
(with `-s inductor`, Inductor's kernels in a CUDA graph), after cudagraph trees' own host work
per call (compiled_graph_call_host_s) and the copy of the call's inputs that are not parameters,
buffers or a static KV cache into the graph's static buffers (reduce_overhead_s). Cudagraph
trees do not replay a graph that writes one of its inputs in place: reduce-overhead runs it as
`compiled`, which is what is priced, and the notes say so (launch_notes).

Here: the GPU-side seconds a kernel adds per launch (floor_s, replayed_launches_s) and the host
seconds before each kernel (host_times for eager PyTorch, compiled_host_times for
torch.compile's wrapper). rooflab.cost.predict runs the CPU and GPU timelines with them.
"""

from __future__ import annotations

from rooflab.graph import Graph, Tensor
from rooflab.grid import vwhere
from rooflab.hardware import COMPILED_GRAPH_CALL_PER_DISPATCH, Hardware
from rooflab.kernel_families import extern_call, foreach_copy_kind, foreach_copy_launches
from rooflab.ops import KINDS, Role
from rooflab.schedule import Schedule

LAUNCH_MODES = ("eager", "graph", "compiled", "reduce-overhead")


def floor_s(kc: dict, hw: Hardware) -> float:
    """GPU-side seconds an eager kernel takes beyond its busy time: min_kernel_s, except for a
    kernel priced by its family's measured curve, whose small sizes already hold that time."""
    return 0.0 if kc["family"] in hw.family_curves else hw.min_kernel_s


def replayed_launches_s(kc: dict, generated_launches: int, hw: Hardware, warm=False) -> float:
    """GPU-side seconds a kernel's launches add in a CUDA-graph replay beyond its busy time.
    Each pays graph_launch_s (a kernel's start and ramp, and the gap to the next), or where
    every byte it reads is in L2 (`warm`, a bool or per grid point: rooflab.l2_residency)
    graph_warm_launch_s, where the spec measures it. A kernel whose busy time holds its start
    adds only the gap between replayed kernels (graph_gap_s, where measured): one priced by
    its family's measured curve, or an SDPA call with its backend's measured fixed time (both
    fitted on the profiler's kernel times, small sizes included); the `generated_launches`
    of such a call (Inductor's mask kernel before an SDPA call) pay their start."""
    start_s = hw.graph_launch_s if hw.graph_warm_launch_s is None else \
        vwhere(warm, hw.graph_warm_launch_s, hw.graph_launch_s)
    if hw.graph_gap_s is not None and (kc["family"] in hw.family_curves
                                       or kc["family"] in hw.attention_backend_fixed_s):
        return (kc["launches"] - generated_launches) * hw.graph_gap_s \
            + generated_launches * start_s
    return kc["launches"] * start_s


def host_times(schedule: Schedule, hw: Hardware) -> list[float]:
    """Seconds of host (CPU) time eager PyTorch spends before issuing each kernel of `schedule`:
    the call that launches it (its kind's eager_call_s_by_kind where the spec measured it, else
    eager_dispatch_s, gemm_dispatch_s for a GEMM), every
    metadata-only call since the previous kernel (view_dispatch_s each: views, transposes), and
    each nn.Module entered since (module_call_s; an op named `a.b.c.op` runs inside modules
    a, a.b and a.b.c, as traced graphs name them). Time after the last kernel joins it."""
    g = schedule.graph
    first = {k.ops[0]: i for i, k in enumerate(schedule.kernels)}
    inside = {j for k in schedule.kernels for j in k.ops[1:]}
    host = [0.0] * len(schedule.kernels)
    gemm_s = hw.gemm_dispatch_s if hw.gemm_dispatch_s is not None else hw.eager_dispatch_s

    def call_s(kind: str, role: Role) -> float:
        default = gemm_s if role is Role.GEMM else hw.eager_dispatch_s
        return hw.eager_call_s_by_kind.get(kind, default)

    entered: set[str] = set()
    pending = 0.0
    for i, op in enumerate(g.ops):
        path = op.name.split(".")[:-1]
        for depth in range(1, len(path) + 1):
            module = ".".join(path[:depth])
            if module not in entered:
                entered.add(module)
                pending += hw.module_call_s
        role = KINDS[op.kind].role
        if role is Role.VIEW:
            pending += hw.view_dispatch_s
        elif i in first:
            host[first[i]] += pending + call_s(op.kind, role)
            pending = 0.0
        elif i not in inside:
            pending += call_s(op.kind, role)
    if host:
        host[-1] += pending
    return host


def compiled_host_times(schedule: Schedule, hw: Hardware) -> list[float]:
    """Seconds of host time torch.compile's generated wrapper spends before issuing each kernel
    of `schedule`: a Triton launch (compiled_launch_host_s) for each launch of a kernel Inductor
    generates (a split reduction launches several; a GEMM with an epilogue); an ATen call
    (compiled_extern_host_s) for an extern one (kernel_families.extern_call), after a Triton
    launch for each kernel generated for it (generated_launches). The call's own cost is not
    in the list."""
    return [hw.compiled_extern_host_s + hw.compiled_launch_host_s * k.generated_launches
            if extern_call(schedule.graph, k.ops, k.anchor)
            else hw.compiled_launch_host_s * k.launches for k in schedule.kernels]


def reduce_overhead_s(schedule: Schedule, hw: Hardware) -> tuple[float, float]:
    """(host s, GPU s) that torch.compile(mode="reduce-overhead") adds to the replay of a
    schedule's CUDA graph: cudagraph trees' own call, and the copy of the call's inputs
    (graph.call_inputs) into the graph's static buffers by one torch._foreach_copy_: where they
    share a dtype, one dispatch and ATen's multi_tensor_apply copy (the `foreach_copy` family's
    curve), else a copy_ each (a dispatch and the elementwise curve). A copy kernel pays
    floor_s per launch, as an eager kernel does."""
    inputs = _call_inputs(schedule.graph)
    host_s = hw.compiled_graph_call_host_s
    if not inputs:
        return host_s, 0.0
    if foreach_copy_kind([t.dtype for t in inputs]) == "foreach_copy":
        copies = [("foreach_copy", 2 * sum(t.nbytes for t in inputs),
                   foreach_copy_launches(sum(t.numel for t in inputs)))]
        host_s += hw.eager_call_s_by_kind.get("foreach_copy", hw.eager_dispatch_s)
    else:
        copies = [("elementwise", 2 * t.nbytes, 1) for t in inputs]
        host_s += len(inputs) * hw.eager_dispatch_s
    return host_s, sum(moved / hw.hbm_rate_for(moved, family)
                       + floor_s({"family": family}, hw) * launches
                       for family, moved, launches in copies)


def _call_inputs(graph: Graph) -> list[Tensor]:
    """The graph's call inputs (Graph.call_inputs) that its ops read, as Tensors, by name."""
    return [graph.tensors[t] for t in sorted(graph.call_inputs) if t in graph.tensors]


def launch_notes(schedule: Schedule, launch: str, hw: Hardware) -> tuple[str, ...]:
    """Notes on what prices the launch mode: what a graph's replay adds beside its kernels;
    which default prices torch.compile's host side when the spec has none; what reduce-overhead
    adds to the replay, or that it does not replay a graph that writes its inputs in place;
    that it runs Inductor's kernels."""
    written = sorted(schedule.graph.written_inputs)
    if launch == "reduce-overhead" and written:
        inputs = "input " if len(written) == 1 else "inputs "
        return (f"the step writes its {inputs}{', '.join(written)} in place: torch.compile's "
                "reduce-overhead skips CUDA graphs for it (cudagraph trees replay no graph that "
                "mutates a non-static input) and runs it as `--launch compiled`, as priced",)
    if launch == "reduce-overhead":
        host_s, gpu_s = reduce_overhead_s(schedule, hw)
        trees_s = hw.compiled_graph_call_host_s
        default = "" if hw.compiled_graph_call_s is not None else (
            f" ({hw.name} has no measured compiled_graph_call_us: "
            f"{COMPILED_GRAPH_CALL_PER_DISPATCH:g} tiny-op dispatches)")
        inputs = ", ".join(t.name for t in _call_inputs(schedule.graph))
        copy = (f"; copying {inputs} into the graph's static inputs: "
                f"+{(host_s - trees_s) * 1e6:.1f} us host, +{gpu_s * 1e6:.1f} us GPU" if inputs
                else "; a workload YAML does not mark which inputs a call passes, so no input "
                     "copy is priced")
        kernels = "" if schedule.policy.name == "inductor" else \
            " (torch.compile runs Inductor's kernels: `-s inductor` prices those)"
        return (f"reduce-overhead (torch.compile): +{trees_s * 1e6:.0f} us host per call for "
                f"cudagraph trees{default}{copy}{kernels}",)
    if launch == "graph":
        return (f"graph: the replay's one cudaGraphLaunch adds {hw.graph_replay_s * 1e6:.1f} us "
                "to the total, in no kernel's row",)
    if launch != "compiled" or hw.compiled_call_s is not None:
        return ()
    return (f"{hw.name}: no measured compiled_call_us; a compiled call's host time is taken as "
            f"{hw.compiled_call_host_s * 1e6:.0f} us (5.1 tiny-op dispatches, as on the H200) and "
            f"a Triton launch as {hw.compiled_launch_host_s * 1e6:.1f} us",)
