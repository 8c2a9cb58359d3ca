"""The cost model: pure functions from (schedule, hardware, launch mode) to a Prediction.

Per kernel (docs/cost-model.md says why each term is there):
    tensor_s  = Σ tensor FLOPs[dtype] / (peak[dtype]·η_tc[dtype]) / waves   (η_attention in FlashAttention)
    compute_s = max(tensor_s + sfu_s + dequant_s, vector FLOPs / (peak_fp32·η_vec), sfu_s) / balance
    memory_s  = (HBM bytes read + written) / BW(bytes moved) / waves
    link_s    = Σ collectives: steps x step latency + bus bytes / bus BW (rooflab.collectives)
    busy_s    = max(compute_s, memory_s, link_s)
    time_s    = busy_s + launch_s
    launch_s  = eager: min_kernel_s + any stall waiting for the CPU;  graph: graph_launch_s
                (graph_warm_launch_s reading only from L2, rooflab/l2_residency.py; a kernel
                priced by a measured family curve: graph_gap_s and no min_kernel_s; an SDPA
                call with a measured fixed time: graph_gap_s)
waves: share of the SMs a GEMM's tiles (or a row kernel's rows) keep busy; sfu_s: special-
function ops; dequant_s: int weights unpacked in registers, once per GEMM row tile; balance:
share of the SMs a causal FlashAttention kernel keeps busy.
HBM bytes of a kernel: every tensor it reads that no op inside it made (once, however many ops
read it), plus every tensor it writes that something outside it reads or the workload returns,
plus reduction re-reads when a row does not fit on chip.

Launch modes (`eager`, `graph`, `compiled`): rooflab/launch.py, the host side of issuing kernels.

Kernel implementations (rooflab/kernel_families.py): `aten` prices each one-op kernel's bytes
at its ATen family's measured bandwidth curve, and a whole-tensor reduction as split over the
grid, as eager PyTorch runs them; `rooflab` prices rooflab's generated kernels at the copy curve;
the fusing schedules mix them (`inductor`, `rooflab+library`: a GEMM that fuses nothing stays
cuBLAS's). A schedule's policy says which runs it; `predict` can override.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rooflab.bundled import SPEC_DIR
from rooflab.collectives import collective_time
from rooflab.errors import RooflabError
from rooflab.gemm_tiles import gemm_tile, wave_efficiency
from rooflab.graph import Graph, Op, Tensor
from rooflab.grid import vargmax, vmax, vmin, vwhere
from rooflab.hardware import Hardware
from rooflab.kernel_families import (CURVE_ELEMENT_BYTES, FAMILIES, GEMM_FAMILY,
                                     IMPLEMENTATIONS, attention_backend, curve_bytes,
                                     eager_family, gathered_rows, one_call, priced_as)
from rooflab.l2_residency import warm_kernels
from rooflab.launch import (LAUNCH_MODES, compiled_host_times, floor_s, host_times,
                            launch_notes, reduce_overhead_s, replayed_launches_s)
from rooflab.ops import (OPAQUE_TRAFFIC, KINDS, OpCost, Role, attention_pairs, view_regions,
                         view_roots)
from rooflab.ops.base import row_major, same_layout
from rooflab.schedule import Kernel, Schedule
from rooflab.strides import strides_of, vectorised


@dataclass(frozen=True, slots=True)
class KernelCost:
    """One kernel priced on one GPU. Counts are exact integers; times are seconds."""
    name: str
    ops: tuple[str, ...]
    kinds: tuple[str, ...]
    fusion: str
    tensor_flops: int
    tensor_dtypes: tuple[str, ...]
    vector_flops: int
    hbm_read_bytes: int
    hbm_write_bytes: int
    l2_reread_bytes: int
    link_bytes: int
    compute_s: float
    memory_s: float
    link_s: float
    launch_s: float
    time_s: float
    stopped_by: tuple[str, ...] = ()
    block: str = ""
    launches: int = 1       # CUDA kernels it launches
    family: str = ""        # the ATen kernel family it was priced as ("" for rooflab kernels)

    @property
    def flops(self) -> int:
        return self.tensor_flops + self.vector_flops

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per HBM byte (inf when nothing crosses HBM)."""
        return self.flops / self.hbm_bytes if self.hbm_bytes else float("inf")

    @property
    def bound(self) -> str:
        """What bounds the kernel's time: compute, memory, link or launch."""
        return _bound(self.compute_s, self.memory_s, self.link_s, self.launch_s)

    @property
    def busy_bound(self) -> str:
        """What bounds the kernel's busy time, launches aside: compute, memory or link."""
        return _bound(self.compute_s, self.memory_s, self.link_s, 0.0)


@dataclass(frozen=True, slots=True)
class Totals:
    kernels: int            # CUDA kernels launched
    tensor_flops: int
    vector_flops: int
    hbm_read_bytes: int
    hbm_write_bytes: int
    link_bytes: int
    compute_s: float        # Σ over kernels
    memory_s: float
    link_s: float
    launch_s: float         # GPU time spent on launches and waiting for the CPU
    time_s: float           # end-to-end predicted time of the schedule
    bound: str              # what most of the time is spent on
    host_s: float = 0.0     # CPU time to issue the schedule (dispatches, or the replay call)
    gpu_s: float = 0.0      # GPU time of its kernels with their per-kernel launch cost

    @property
    def back_to_back_s(self) -> float:
        """Seconds per call when calls follow each other without a synchronize: the CPU issues
        the next call while the GPU runs this one, so the slower of the two sets the pace."""
        return vmax(self.host_s, self.gpu_s)

    @property
    def flops(self) -> int:
        return self.tensor_flops + self.vector_flops

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_read_bytes + self.hbm_write_bytes


@dataclass(frozen=True)
class Prediction:
    workload: str
    hardware: Hardware
    policy: str
    launch: str
    params: dict[str, int]
    kernels: tuple[KernelCost, ...]
    totals: Totals
    notes: tuple[str, ...] = field(default=())
    schedule: Schedule | None = field(default=None, repr=False, compare=False)
    kernels_impl: str = "rooflab"       # the kernel implementation priced (IMPLEMENTATIONS)


class _Graphinfo:
    """Per-graph facts the kernel pricing needs: op costs, views, consumers, inputs' bytes."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.root = view_roots(graph)
        self.region = view_regions(graph)
        strides = strides_of(graph)
        self.consumers: dict[str, set[int]] = {}
        tensors = graph.tensors
        self.costs: list[OpCost] = []
        self.families: list[str | None] = []     # each op's ATen kernel family
        # Repeated layers hold the same op on same-shaped tensors; cost rules speak of input
        # and output positions, not names, so one OpCost serves every copy.
        cache: dict[tuple, tuple[OpCost, str | None]] = {}
        for op in graph.ops:
            if KINDS[op.kind].role is not Role.VIEW:   # a view's readers count, not the view
                for t in op.inputs:
                    self.consumers.setdefault(self.rt(t), set()).add(len(self.costs))
            ins = [tensors[t] for t in op.inputs]
            outs = [tensors[t] for t in op.outputs]
            roots = [tensors[self.rt(t)] for t in op.inputs]
            strided = _strided(op, ins, outs, strides)
            key = (op.kind, op.name if op.kind == "opaque" else "", strided,
                   *[(t.shape, t.dtype.name) for t in ins + outs + roots], _attrs_key(op.attrs))
            c = cache.get(key)
            if c is None:
                c = cache[key] = (KINDS[op.kind].cost(op, ins, outs),
                                  eager_family(op, ins, outs, roots, strided))
            self.costs.append(c[0])
            self.families.append(c[1])
        self.outputs = {self.rt(t) for t in graph.outputs}
        self.scatters = {i for i, op in enumerate(graph.ops) if KINDS[op.kind].role is Role.SCATTER}
        self.inputs = set(self.consumers) - {t for op in graph.ops for t in op.outputs}
        self.input_bytes = sum(tensors[t].nbytes for t in self.inputs)

    def rt(self, t: str) -> str:
        return self.root.get(t, t)

    def bytes_of(self, t: str) -> tuple[str, tuple]:
        """(root, region): which bytes tensor `t` names (a slice names part of its root)."""
        return self.region.get(t, (t, ()))


def op_families(graph: Graph) -> list[str | None]:
    """Each op's ATen kernel family (kernel_families.eager_family, seeing the graph's views
    and layouts), in op order."""
    return _Graphinfo(graph).families


def _strided(op: Op, ins: list[Tensor], outs: list[Tensor],
             strides: dict[str, tuple | None]) -> bool:
    """Whether ATen runs `op` through strides (kernel_families.eager_family's `strided`): a
    pointwise op whose full-size operands its vectorised kernel cannot take, a cat of an input
    that is not row-major."""
    role = KINDS[op.kind].role
    if role is Role.POINTWISE:
        n = outs[0].numel
        return not vectorised([(t.shape, strides[t.name]) for t in ins + outs if t.numel == n])
    if op.kind == "concat":
        return not all(strides[t.name] is not None
                       and same_layout(t.shape, strides[t.name], row_major(t.shape)) for t in ins)
    return False


def _attrs_key(attrs: dict) -> tuple:
    return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(attrs.items()))


def price_kernel(info: _Graphinfo, kernel: Kernel, hw: Hardware,
                 cache: dict | None = None, kernels: str = "rooflab") -> dict:
    """KernelCost fields of one kernel: FLOPs, HBM bytes and busy time (`time_s`); the launch
    model of the schedule adds launch_s and the bound. `kernels`: the implementation that runs
    it (IMPLEMENTATIONS). `cache` (kernel_key -> numbers, for one implementation) lets the
    kernels of identical layers be priced once."""
    g = info.graph
    if cache is None:
        numbers = _kernel_numbers(info, kernel, hw, kernels)
    else:
        key = kernel_key(info, kernel)
        numbers = cache.get(key)
        if numbers is None:
            numbers = cache[key] = _kernel_numbers(info, kernel, hw, kernels)
    return dict(
        name=kernel.name, ops=tuple(g.ops[i].name for i in kernel.ops),
        kinds=tuple(g.ops[i].kind for i in kernel.ops), fusion=kernel.fusion, **numbers,
        stopped_by=kernel.stopped_by, block=g.ops[kernel.ops[0]].block, launches=kernel.launches)


def kernel_key(info: _Graphinfo, kernel: Kernel) -> tuple:
    """What a kernel's price depends on, names aside: its fusion, and per op its cost record
    (shared by same-shaped ops) and launches, which of its inputs name the same bytes or bytes
    made inside the kernel, the shapes of the tensors its inputs view, and which of its outputs
    leave the kernel. Two kernels with equal keys cost the same (the same layer of a repeated
    block)."""
    g = info.graph
    members = set(kernel.ops)
    made = {info.rt(t) for i in kernel.ops for t in g.ops[i].outputs}
    roots: dict[str, int] = {}
    parts: list = [kernel.fusion]
    for i in kernel.ops:
        op = g.ops[i]
        ins = []
        for t in op.inputs:
            root, region = info.bytes_of(t)
            r = info.rt(t)
            ins.append((r in made, roots.setdefault(root, len(roots)), region,
                        g.tensors[root].shape, g.tensors[root].dtype.name, g.tensors[r].shape))
        outs = tuple(info.rt(t) in info.outputs
                     or any(j not in members for j in info.consumers.get(info.rt(t), ()))
                     for t in op.outputs)
        parts.append((id(info.costs[i]), op.kind, op.launches, i in info.scatters, tuple(ins),
                      outs))
    return tuple(parts)


def aten_family(info: _Graphinfo, kernel: Kernel) -> str:
    """The ATen family of a kernel that is one ATen call as eager PyTorch runs it: one op, and
    any that launch none of their own (addmm's bias in the GEMM's epilogue); "" for a fused
    kernel or an op no family's curve prices."""
    return (info.families[kernel.ops[0]] or "") if one_call(info.graph, kernel.ops) else ""


def _kernel_numbers(info: _Graphinfo, kernel: Kernel, hw: Hardware, kernels: str) -> dict:
    """The counts and times of `price_kernel`'s record."""
    g = info.graph
    aten = priced_as(kernels, kernel, info.graph) == "aten"
    family = aten_family(info, kernel) if aten else ""
    # SDPA called through ATen: the backend PyTorch picks, at that backend's measured efficiency
    first = g.ops[kernel.ops[0]]
    backend = attention_backend(first, [g.tensors[t] for t in first.inputs]) \
        if aten and len(kernel.ops) == 1 else None
    backend_eff = hw.attention_backend_efficiency.get(backend)
    if backend_eff:
        family = backend
    members = set(kernel.ops)
    made = {info.rt(t) for i in kernel.ops for t in g.ops[i].outputs}
    reads: dict[tuple[str, tuple], int] = {}     # (root, region) -> bytes read
    writes = 0
    tensor_by_dtype: dict[str, int] = {}
    vector = reread = link = sfu = dequant = 0
    link_s = 0.0
    waves = 1.0
    row_tiles = 1
    for i in kernel.ops:
        c = info.costs[i]
        if c.gemm_mnb:
            waves = vmin(waves, wave_efficiency(*c.gemm_mnb, hw.sm_count))
            m = c.gemm_mnb[0]
            row_tiles = vmax(row_tiles, -(-m // gemm_tile(*c.gemm_mnb, hw.sm_count)[0]))
        dequant += c.dequant_elems
        if c.row_bytes and family != "reduce_all" and family not in hw.family_curves \
                and not kernel.split_reduction:
            # a row kernel runs one program per row: fewer rows than SMs leave SMs idle (ATen
            # splits a whole-tensor reduction over the grid instead; a family's measured curve
            # already holds how its kernel spreads rows)
            op = g.ops[i]
            rows = g.tensors[op.inputs[0]].numel // (c.row_bytes // 4)
            waves = vmin(waves, rows / hw.sm_count)
        if c.tensor_flops:
            tensor_by_dtype[c.tensor_dtype] = tensor_by_dtype.get(c.tensor_dtype, 0) + c.tensor_flops
        vector += c.vector_flops
        sfu += c.sfu_ops
        reread += c.reread_bytes
        link += c.link_bytes
        if c.collective:
            kind, size, world, across = c.collective
            paths = hw.network_paths if (across or world > hw.gpus_per_node) \
                and hw.network_paths else hw.collective_paths
            link_s = link_s + collective_time(paths, kind, world, size)[0]
        extra_passes = 0
        if c.row_bytes > hw.smem_per_sm_bytes:
            extra_passes = c.passes_if_spilled - 1      # a row that does not fit is re-read
        op = g.ops[i]
        # ATen's SDPA reads K and V once per query head, also where they are one KV head
        # expanded to several (transformers' repeat_kv of a single KV head stays a view)
        per_head_kv = aten and op.kind == "attention"
        for pos, b in c.reads:
            key = info.bytes_of(op.inputs[pos]) if pos != OPAQUE_TRAFFIC \
                else (f"{op.name}:traffic", ())
            if pos != OPAQUE_TRAFFIC and key[0] != op.inputs[pos] \
                    and not (per_head_kv and pos in (1, 2)):
                b = min(b, g.tensors[key[0]].nbytes)    # a view (an expand) names no more bytes
            if key[0] not in made:
                # two reads of the same bytes are one; two slices of a tensor are different bytes
                reads[key] = vmax(reads.get(key, 0), b * (1 + extra_passes))
        for pos, b in c.writes:
            r = info.rt(op.outputs[pos])
            # a scatter's write is a side effect on its target: it always reaches memory
            if r in info.outputs or i in info.scatters or \
                    any(j not in members for j in info.consumers.get(r, ())):
                writes += b
    causal_fraction = 1.0
    if kernel.fusion == "attention":
        reread += _attention_reread(info, kernel)
        causal_fraction = _causal_fraction(info, kernel)
    balance = _attention_balance(info, kernel, hw.sm_count)
    # a slice of a tensor the kernel also reads whole adds no bytes
    # (NB: two overlapping slices of one tensor count their overlap twice)
    read_bytes = sum(b for (root, region), b in reads.items()
                     if not region or reads.get((root, ()), 0) < g.tensors[root].nbytes)
    # a GEMM's partly filled last wave idles SMs for both its math and its memory traffic
    in_attention = kernel.fusion == "attention" or any(
        KINDS[g.ops[i].kind].role is Role.ATTENTION for i in kernel.ops)
    # a cuBLAS GEMM priced by its measured curves: they hold its waves and tile shapes
    gemm_curve = family == GEMM_FAMILY and bool(hw.gemm_flops_curve)
    if gemm_curve:
        waves = 1.0
        flops = sum(tensor_by_dtype.values())
        tensor_s = sum(f / hw.gemm_rate_for(flops, d) for d, f in tensor_by_dtype.items())
    elif backend_eff:
        tensor_s = sum(f / (hw.tensor_flops_per_s[d] * backend_eff)
                       for d, f in tensor_by_dtype.items()) / waves
    else:
        tensor_s = sum(f / hw.tensor_rate(d, in_attention)
                       for d, f in tensor_by_dtype.items()) / waves
    # a fused causal attention kernel skips the key blocks its mask removes: its FLOPs are the
    # naive pattern's (fusion never changes FLOPs), its time is that of the kept blocks
    tensor_s *= causal_fraction
    sfu *= causal_fraction
    vector_s = vector / hw.vector_rate
    if backend_eff and not tensor_by_dtype:        # fp32 SDPA: its matmuls on the FP32 units
        vector_s = vector / (hw.vector_flops_per_s["fp32"] * backend_eff)
    # Transcendentals run on the special-function units; in a kernel that also uses tensor
    # cores (attention's exp, a GELU epilogue) the two take turns within each warp.
    sfu_s = sfu / hw.sfu_ops_per_s if hw.sfu_ops_per_s else 0.0
    # Integer weights are unpacked and scaled on the ALUs by the warps that also issue the MMAs,
    # once per row tile of the output: at decode sizes this, not the weight bytes, bounds W4A16.
    dequant_s = dequant * row_tiles / hw.dequant_rate / waves if dequant else 0.0
    compute_s = vmax(vmax(tensor_s + sfu_s + dequant_s, vector_s), sfu_s) / balance
    moved = read_bytes + writes
    sized = moved
    if family in CURVE_ELEMENT_BYTES and family in hw.family_curves:
        # a family whose time follows its elements reads its curve at their computed width
        sized = curve_bytes(family, moved, g.tensors[first.inputs[0]].dtype.bits / 8)
    # a family's measured curve holds how its kernel's tiles fill the SMs (the grouped GEMM's)
    spread = 1.0 if family in hw.family_curves else waves
    memory_s = sized / hw.hbm_rate_for(sized, family) / spread if moved else 0.0
    if gemm_curve and hw.l2_bytes_per_s:
        # the curve times one GEMM back to back, its operands in L2 up to L2's size; a step that
        # outgrows L2 reads its inputs (weights) from HBM: copy rate past L2, not L2's rate
        cold = sum(b for (root, _), b in reads.items() if root in info.inputs)
        extra_s = cold * (1 / hw.hbm_rate_for(2 * hw.l2_bytes) - 1 / hw.l2_bytes_per_s)
        memory_s = memory_s + vwhere((info.input_bytes > hw.l2_bytes) & (sized <= hw.l2_bytes),
                                     vmax(extra_s, 0.0), 0.0)
    if gemm_curve:
        # each curve holds the GEMMs its term dominates; where alike, cuBLAS overlaps them in part
        compute_s, memory_s = (compute_s + hw.gemm_overlap * memory_s,
                               memory_s + hw.gemm_overlap * compute_s)
    if backend_eff:
        # an SDPA call's setup (cuDNN's memset, its scheduler's prologue) precedes its work
        fixed_s = hw.attention_backend_fixed_s.get(backend, 0.0)
        compute_s, memory_s = compute_s + fixed_s, memory_s + fixed_s
    if family in hw.family_per_index_s:
        # a row gather also pays per index it loads
        memory_s = memory_s + hw.family_per_index_s[family] * gathered_rows(
            first, [g.tensors[t] for t in first.inputs])
    if family in hw.family_row_floors:
        # however few its rows, a row kernel takes one row's serial time
        c = info.costs[kernel.ops[0]]
        x = g.tensors[first.inputs[0]]
        memory_s = vmax(memory_s, hw.row_floor_s(family, c.row_bytes // 4 * x.dtype.bits / 8))
    return dict(
        tensor_flops=sum(tensor_by_dtype.values()),
        tensor_dtypes=tuple(sorted(tensor_by_dtype)), vector_flops=vector,
        hbm_read_bytes=read_bytes, hbm_write_bytes=writes, l2_reread_bytes=reread,
        link_bytes=link, compute_s=compute_s, memory_s=memory_s, link_s=link_s,
        time_s=_busy(compute_s, memory_s, link_s), family=family)


def _attention_reread(info: _Graphinfo, kernel: Kernel) -> int:
    """K and V re-reads of a fused QKᵀ → softmax → ·V kernel: each block of 128 queries streams
    all of K and V again (served by L2 when it holds them)."""
    g = info.graph
    first, last = g.ops[kernel.ops[0]], g.ops[kernel.ops[-1]]
    k, v = g.tensors[first.inputs[1]], g.tensors[last.inputs[1]]
    sq = g.tensors[first.inputs[0]].shape[-2]
    passes = -(-sq // 128)
    return (k.nbytes + v.nbytes) * (passes - 1)


def _causal_fraction(info: _Graphinfo, kernel: Kernel) -> float:
    """Share of the score blocks a FlashAttention-style kernel computes: all of them, or the
    causal triangle (end-aligned) when the fused pattern holds a causal mask."""
    g = info.graph
    if not any(g.ops[i].kind == "causal_mask" for i in kernel.ops):
        return 1.0
    sq, sk = g.tensors[g.ops[kernel.ops[0]].outputs[0]].shape[-2:]
    return attention_pairs(sq, sk, True) / (sq * sk)


def _attention_balance(info: _Graphinfo, kernel: Kernel, sm_count: int) -> float:
    """Share of the SMs' time a FlashAttention-style kernel keeps busy (1.0 for other kernels).
    One program takes 128 queries of one head; with a causal mask the programs of late query
    blocks scan more keys, and the kernel lasts at least as long as its longest program: time
    is max(total work / SMs, longest program), the bound of any greedy schedule."""
    g = info.graph
    ops = [g.ops[i] for i in kernel.ops]
    att = next((op for op in ops if KINDS[op.kind].role is Role.ATTENTION), None)
    if att is not None:
        # mla_attention's keys are its latent cache, [B, Sk, L]: the third input
        keys = att.inputs[2] if att.kind == "mla_attention" else att.inputs[1]
        # the op's own shapes, not its inputs' roots: q [B, S, H*D] seen as [B, H, S, D]: B*H heads
        q, sk = g.tensors[att.inputs[0]], g.tensors[keys].shape[-2]
        causal = att.attrs.get("causal", True)
    elif kernel.fusion == "attention":
        # q kᵀ as its matmul sees q; the scores [.., Sq, Sk] count the keys
        q, sk = g.tensors[ops[0].inputs[0]], g.tensors[ops[0].outputs[0]].shape[-1]
        causal = any(op.kind == "causal_mask" for op in ops)
    else:
        return 1.0
    sq = q.shape[-2]
    if sq == 1 or not causal:                     # decode splits keys; equal programs otherwise
        return 1.0
    heads = math.prod(q.shape[:-2])
    blocks = -(-sq // 128)
    # query block j (end-aligned causal mask) sees min(sk, sk - sq + 128 (j + 1)) keys; only
    # the last block is clipped to sk. Summed in closed form, in units of 128 keys.
    work = blocks * (sk - sq) / 128 + blocks * (blocks + 1) / 2 - (128 * blocks - sq) / 128
    longest = sk / 128
    total = heads * work
    return total / (sm_count * vmax(total / sm_count, longest))


_BOUNDS = ("compute", "memory", "link", "launch")


def _busy(compute_s, memory_s, link_s):
    """A kernel's busy time: the longest of its compute, memory and link times."""
    return vmax(vmax(compute_s, memory_s), link_s)


def _bound(compute_s, memory_s, link_s, launch_s):
    """Which of the four times is longest ("compute" on ties, then memory, link, launch); over a
    sweep's grid, an array of those names, one per point."""
    return _name(vargmax((compute_s, memory_s, link_s, launch_s)))


def _name(i):
    return _BOUNDS[i] if isinstance(i, int) else np.array(_BOUNDS)[i]


def predict(schedule: Schedule, hw: Hardware, launch: str = "eager",
            kernels: str | None = None, l2_flushed: bool = False) -> Prediction:
    """Price every kernel of `schedule` on `hw` and run the launch model. Times in seconds.
    `kernels`: the implementation that runs the kernels (IMPLEMENTATIONS; default: the one the
    schedule's policy names); `l2_flushed`: the step starts with its inputs out of L2."""
    if launch not in LAUNCH_MODES:
        raise RooflabError(f"unknown launch mode '{launch}'; expected one of "
                           f"{', '.join(LAUNCH_MODES)}")
    kernels = kernels or schedule.policy.kernels
    if kernels not in IMPLEMENTATIONS:
        raise ValueError(f"kernel implementation must be one of {IMPLEMENTATIONS}")
    info = _Graphinfo(schedule.graph)
    cache: dict = {}
    priced = [price_kernel(info, k, hw, cache, kernels) for k in schedule.kernels]
    # cudagraph trees do not replay a step that writes an input: reduce-overhead runs it compiled
    mode = "compiled" if launch == "reduce-overhead" and schedule.graph.written_inputs else launch
    replayed = mode in ("graph", "reduce-overhead")
    # GPU seconds each kernel's launches add beyond its busy time (eager: and any CPU stall)
    if replayed:
        warm = warm_kernels(info, schedule, priced, hw.l2_bytes, l2_flushed)
        starts = [replayed_launches_s(p, k.generated_launches, hw, w)
                  for p, k, w in zip(priced, schedule.kernels, warm)]
    else:
        starts = [floor_s(p, hw) * p["launches"] for p in priced]
    host = compiled_host_times(schedule, hw) if mode == "compiled" else \
        host_times(schedule, hw) if kernels == "aten" else [hw.eager_dispatch_s] * len(priced)
    out: list[KernelCost] = []
    cpu_s = gpu_s = copy_s = 0.0
    if replayed:                # one cudaGraphLaunch from Python (and cudagraph trees' work)
        trees_s, copy_s = reduce_overhead_s(schedule, hw) if mode != "graph" else (0.0, 0.0)
        gpu_s = cpu_s = hw.graph_replay_s + trees_s
    elif mode == "compiled":
        cpu_s = hw.compiled_call_host_s      # guards and the wrapper, before its first launch
    for kc, host_s, start_s in zip(priced, host, starts):
        busy = kc.pop("time_s")
        launch_s = start_s
        if not replayed:
            cpu_s += host_s
            launch_s += vmax(gpu_s, cpu_s) - gpu_s
        time_s = busy + launch_s
        gpu_s += time_s
        out.append(KernelCost(**kc, launch_s=launch_s, time_s=time_s))
    if replayed:
        gpu_s = cpu_s + copy_s + sum(k.time_s for k in out)
    # CPU-bound when dispatching takes longer than the GPU needs for the work it is given
    gpu_work_s = copy_s + sum(_busy(p["compute_s"], p["memory_s"], p["link_s"]) + start_s
                              for p, start_s in zip(priced, starts))
    totals = replace(_totals(out, gpu_s, cpu_bound=cpu_s >= gpu_work_s), host_s=cpu_s,
                     gpu_s=gpu_work_s)
    notes = schedule.notes + _family_notes(out, hw) + launch_notes(schedule, launch, hw)
    return Prediction(schedule.graph.name, hw, schedule.policy.name, launch,
                      dict(schedule.graph.params), tuple(out), totals, notes, schedule, kernels)


def _family_notes(kernels: list[KernelCost], hw: Hardware) -> tuple[str, ...]:
    """Notes naming the ATen families this spec has no measured curve for and what prices
    them instead: the copy curve, or for cuBLAS GEMMs the tile model."""
    families = {k.family for k in kernels}
    missing = sorted(f for f in families - {GEMM_FAMILY}
                     if f in FAMILIES and f not in hw.family_curves)
    # a calibrated spec of this GPU may ship beside the datasheet one
    shipped = SPEC_DIR / "measured" / f"{hw.name}.yaml"
    measure = f"a spec calibrated on this GPU ships: `-H measured/{hw.name}.yaml`" \
        if shipped.is_file() and Path(hw.source_file or ".").resolve() != shipped.resolve() \
        else "`rooflab calibrate --gpu` measures them"
    notes = []
    if missing:
        notes.append(f"{hw.name}: no measured curve for the ATen kernel families "
                     f"{', '.join(missing)}; their kernels are priced at copy bandwidth "
                     f"({measure})")
    if GEMM_FAMILY in families and not hw.gemm_flops_curve:
        notes.append(f"{hw.name}: no measured cuBLAS GEMM curve ({GEMM_FAMILY}); its GEMMs "
                     f"are priced by the tile model ({measure})")
    return tuple(notes)


def _totals(kernels: list[KernelCost], end_s: float, cpu_bound: bool) -> Totals:
    """Sums over kernels. The schedule's bound: `launch` when the CPU's dispatch is the critical
    path (it issues the last kernel no sooner than the GPU could run all of them); otherwise the
    bound that holds most of the time, each kernel's busy time counted under its own bound."""
    by_bound = [0.0] * len(_BOUNDS)
    for k in kernels:
        times = (k.compute_s, k.memory_s, k.link_s)
        busy, which = _busy(*times), vargmax(times)
        for i in range(3):
            by_bound[i] = by_bound[i] + vwhere(which == i, busy, 0.0)
        by_bound[3] += k.launch_s
    launch_s = sum(k.launch_s for k in kernels) + vmax(0.0, end_s - sum(k.time_s for k in kernels))
    return Totals(
        kernels=sum(k.launches for k in kernels),
        tensor_flops=sum(k.tensor_flops for k in kernels),
        vector_flops=sum(k.vector_flops for k in kernels),
        hbm_read_bytes=sum(k.hbm_read_bytes for k in kernels),
        hbm_write_bytes=sum(k.hbm_write_bytes for k in kernels),
        link_bytes=sum(k.link_bytes for k in kernels),
        compute_s=sum(k.compute_s for k in kernels),
        memory_s=sum(k.memory_s for k in kernels),
        link_s=sum(k.link_s for k in kernels),
        launch_s=launch_s,
        time_s=end_s,
        bound=vwhere(cpu_bound, "launch", _name(vargmax(tuple(by_bound)))) if kernels
        else "launch",
    )
