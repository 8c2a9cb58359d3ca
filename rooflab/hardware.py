"""A GPU as the cost model sees it: a frozen `Hardware` in SI units, built from a spec file
(rooflab.hardware_spec validates the YAML at the edge), and the bundled specs by name.
"""

from __future__ import annotations

import math

import numpy as np
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError

from rooflab import bundled
from rooflab.collectives import KINDS as COLLECTIVE_KINDS
from rooflab.collectives import Path as CollectivePath
from rooflab.dtypes import TENSOR_FAMILIES
from rooflab.errors import RooflabError
from rooflab.grid import vmax, vmin
from rooflab.hardware_spec import HardwareFile
from rooflab.kernel_families import GEMM_FAMILY, floor_at
from rooflab.yamlio import did_you_mean, load_yaml, raise_first

SPEC_DIR = bundled.SPEC_DIR          # the bundled specs (rooflab/bundled.py says where they lie)


# ALU instructions per int4 weight in a dequant-in-GEMM kernel: unpack (and/shift), turn into
# a float (or/sub), scale, round to bf16, and move into the MMA operand layout
DEQUANT_OPS_PER_WEIGHT = 8
# A torch.compile'd call's host time in tiny-op dispatches, where a spec has no measured
# figure: on the lent H200, 50.8 us against 9.9 us (reports/validation/torch/h200-2026-12-04.json,
# host: compiled_call_us and tiny_op_dispatch_us, the same process).
COMPILED_CALL_PER_DISPATCH = 5.1
# cudagraph trees' own host time per torch.compile(mode="reduce-overhead") call, in tiny-op
# dispatches, where a spec has no measured figure: 72.7 us against 8.0 us on an H100 lease
# (reports/validation/torch/h100-80gb-hbm3-2026-12-07-r4.json), 78.5 against 7.6 on an H200
# (h200-2026-12-04-r9.json), each fitted by torch_fit.fit_compiled_graph_call
COMPILED_GRAPH_CALL_PER_DISPATCH = 10.0


@dataclass(frozen=True, slots=True)
class Hardware:
    """A GPU in SI base units: FLOP/s, bytes, bytes/s, seconds."""
    name: str
    display_name: str
    tensor_flops_per_s: dict[str, float]      # dense peak per tensor-core dtype family
    vector_flops_per_s: dict[str, float]
    hbm_bytes: float
    hbm_bytes_per_s: float
    l2_bytes: float
    l2_bytes_per_s: float | None
    smem_per_sm_bytes: float
    sm_count: int
    link_bytes_per_s: float
    gpus_per_node: int
    collective_paths: tuple          # rooflab.collectives.Path, within a node
    network_paths: tuple             # across nodes
    eager_dispatch_s: float
    graph_launch_s: float
    min_kernel_s: float
    triton_launch_s: float | None
    tensor_efficiency: float
    tensor_efficiency_by_dtype: dict[str, float]
    vector_efficiency: float
    hbm_efficiency: float
    link_efficiency: float
    weight_only_gemm: frozenset[str]
    hbm_curve: tuple[tuple[float, float], ...] = ()   # (bytes moved, fraction of peak)
    usable_bytes: float | None = None                 # one process can allocate (else hbm)
    sfu_ops_per_s: float | None = None                # special-function-unit results per second
    dequant_weights_per_s: float | None = None        # int weights dequantized in registers /s
    attention_efficiency: float | None = None         # tensor efficiency inside FlashAttention
    # SDPA backend -> share of the tensor (sdpa_fp32: FP32) peak eager PyTorch's kernel reaches
    attention_backend_efficiency: dict[str, float] = field(default_factory=dict)
    # SDPA backend -> its GPU time per call beyond its work (s)
    attention_backend_fixed_s: dict[str, float] = field(default_factory=dict)
    gemm_dispatch_s: float | None = None              # host time of an eager GEMM call
    # op kind -> host seconds of one eager call of it as a model's forward makes it (the ATen
    # call, its Python wrapper and argument checks); kinds not here cost eager_dispatch_s
    # (gemm_dispatch_s for a GEMM)
    eager_call_s_by_kind: dict[str, float] = field(default_factory=dict)
    view_dispatch_s: float = 0.0                      # of a metadata-only eager call
    module_call_s: float = 0.0                        # of an nn.Module call beyond its ops
    graph_replay_call_s: float | None = None          # of one CUDA-graph replay call
    graph_gap_s: float | None = None                  # per replayed kernel beyond its device time
    graph_warm_launch_s: float | None = None          # per replayed kernel reading from L2
    compiled_call_s: float | None = None              # of one torch.compile'd call
    compiled_launch_s: float | None = None            # of one Triton launch in its wrapper
    compiled_extern_s: float | None = None            # of one extern (ATen) call in it
    compiled_graph_call_s: float | None = None        # cudagraph trees' own per call
    # ATen kernel family -> ((bytes moved, fraction of peak), ...), as hbm_curve
    family_curves: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    # row-kernel family -> ((row bytes, seconds), ...): its shortest time per row length
    family_row_floors: dict[str, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    # row-gather family -> seconds per index gathered, beyond its curve's bytes
    family_per_index_s: dict[str, float] = field(default_factory=dict)
    # cuBLAS GEMMs (GEMM_FAMILY): ((FLOPs, fraction of tensor peak), ...), and the share of
    # the other of its two times each adds
    gemm_flops_curve: tuple[tuple[float, float], ...] = ()
    gemm_overlap: float = 0.0
    source_file: str = ""
    spec: HardwareFile | None = field(default=None, compare=False, repr=False)

    @property
    def allocatable_bytes(self) -> float:
        """Bytes one process can allocate on the GPU: the driver's total where the spec
        measured it, else the vendor's HBM capacity."""
        return self.usable_bytes or self.hbm_bytes

    def has_gemm_path(self, family: str) -> bool:
        return family in self.tensor_flops_per_s

    def tensor_rate(self, family: str, attention: bool = False) -> float:
        """Achievable tensor-core FLOP/s for a dtype family (peak times efficiency); inside a
        FlashAttention kernel, the calibrated attention efficiency where the spec has one."""
        if family not in self.tensor_flops_per_s:
            raise RooflabError(f"{self.name} has no {family} tensor-core path; lower the graph "
                               "first (rooflab.lowering.lower) so it is priced as its fallback")
        eff = self.tensor_efficiency_by_dtype.get(family, self.tensor_efficiency)
        if attention and self.attention_efficiency:
            eff = self.attention_efficiency
        return self.tensor_flops_per_s[family] * eff

    @property
    def vector_rate(self) -> float:
        """Achievable fp32 vector FLOP/s."""
        return self.vector_flops_per_s["fp32"] * self.vector_efficiency

    @property
    def dequant_rate(self) -> float:
        """Integer weights dequantized per second inside a GEMM: the calibrated figure, else
        about 8 ALU instructions per weight (unpack, offset, scale, convert, layout) at the fp32
        instruction rate (an FMA is 2 FLOPs)."""
        if self.dequant_weights_per_s:
            return self.dequant_weights_per_s
        return self.vector_flops_per_s["fp32"] / 2 / DEQUANT_OPS_PER_WEIGHT

    def with_eager_dispatch(self, eager_dispatch_s: float) -> Hardware:
        """This GPU with another lease's eager dispatch (seconds per tiny op). The per-kind
        eager calls, measured on the spec's own lease, go with it: every eager op then costs
        that lease's dispatch (gemm_dispatch_s for a GEMM), never a mix of two hosts."""
        return replace(self, eager_dispatch_s=eager_dispatch_s, eager_call_s_by_kind={})

    @property
    def graph_replay_s(self) -> float:
        """Seconds of host time to replay a CUDA graph from Python (one launch call)."""
        return self.eager_dispatch_s if self.graph_replay_call_s is None \
            else self.graph_replay_call_s

    @property
    def compiled_call_host_s(self) -> float:
        """Seconds of host time one torch.compile'd call costs beyond its kernels' launches."""
        return self.compiled_call_s if self.compiled_call_s is not None \
            else COMPILED_CALL_PER_DISPATCH * self.eager_dispatch_s

    @property
    def compiled_graph_call_host_s(self) -> float:
        """Seconds of host time cudagraph trees spend per torch.compile(mode="reduce-overhead")
        call beyond the graph's replay and the copy of its inputs."""
        return self.compiled_graph_call_s if self.compiled_graph_call_s is not None \
            else COMPILED_GRAPH_CALL_PER_DISPATCH * self.eager_dispatch_s

    @property
    def compiled_launch_host_s(self) -> float:
        """Seconds of host time the compiled wrapper spends launching one Triton kernel."""
        if self.compiled_launch_s is not None:
            return self.compiled_launch_s
        return self.triton_launch_s if self.triton_launch_s is not None else self.eager_dispatch_s

    @property
    def compiled_extern_host_s(self) -> float:
        """Seconds of host time the compiled wrapper spends calling one extern kernel (a cuBLAS
        GEMM, SDPA) through ATen."""
        if self.compiled_extern_s is not None:
            return self.compiled_extern_s
        return self.gemm_dispatch_s if self.gemm_dispatch_s is not None else self.eager_dispatch_s

    @property
    def hbm_rate(self) -> float:
        return self.hbm_bytes_per_s * self.hbm_efficiency

    def hbm_rate_for(self, nbytes: float, family: str | None = None) -> float:
        """Achievable HBM bytes/s for a kernel moving `nbytes`: the ATen kernel family's
        calibrated curve where `family` names one the spec measured, else the copy curve,
        interpolated in log(bytes) and flat beyond its ends; the flat efficiency without one.
        Below a family curve's first point the kernel takes that point's time (its fixed GPU
        time: a one-element rsqrt is not faster than a thousand-element one)."""
        pts = self.family_curves.get(family)
        if pts:
            x0 = pts[0][0]
            return self.hbm_bytes_per_s * log_interp(pts, vmax(nbytes, x0)) * vmin(nbytes, x0) / x0
        if not self.hbm_curve:
            return self.hbm_rate
        return self.hbm_bytes_per_s * log_interp(self.hbm_curve, nbytes)

    def gemm_rate_for(self, flops: float, dtype: str) -> float:
        """Achievable tensor FLOP/s of a cuBLAS GEMM of `flops` in total on `dtype`: the
        spec's GEMM FLOP curve (as a fraction of that dtype's peak), interpolated in
        log(FLOPs) and flat beyond its ends; tensor_rate without one."""
        if not self.gemm_flops_curve:
            return self.tensor_rate(dtype)
        return self.tensor_flops_per_s[dtype] * log_interp(self.gemm_flops_curve, flops)

    def row_floor_s(self, family: str, row_bytes):
        """The shortest time (s) of a `family` row kernel whose rows are `row_bytes` long: the
        measured floor interpolated linearly, flat below its shortest row, growing in
        proportion beyond its longest; 0 without one."""
        pts = self.family_row_floors.get(family)
        return floor_at(pts, row_bytes) if pts else 0.0

    @property
    def link_rate(self) -> float:
        return self.link_bytes_per_s * self.link_efficiency


# A spec without measured collective paths gets one ring over its link at the link's efficiency,
# with this latency per ring step (NCCL's Simple protocol over NVLink: a few microseconds per
# step; an assumption until the spec lists published or measured figures).
DEFAULT_STEP_LATENCY_S = 2e-6


def log_interp(pts: tuple[tuple[float, float], ...], x):
    """The curve `pts` ((x, y), ... x increasing) at `x` (a number or an array), linear in
    log(x), flat beyond its ends."""
    if isinstance(x, np.ndarray):      # a sweep's grid: the same curve, per point
        return np.interp(np.log(x), [math.log(a) for a, _ in pts], [y for _, y in pts])
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            return y0 + math.log(x / x0) / math.log(x1 / x0) * (y1 - y0)
    return pts[-1][1]


def _gpus_per_node(spec: HardwareFile) -> int:
    g = spec.interconnect.gpus_per_node
    return int(g.value) if g else 8


def _paths(specs: dict) -> tuple:
    return tuple(CollectivePath(name, frozenset(p.kinds), p.step_latency_us.value * 1e-6,
                                p.busbw_gb_per_s.value * 1e9, p.scaling, p.min_gpus,
                                p.max_gpus, p.yields_to_switch, p.measured_gpus)
                 for name, p in specs.items())


def _default_paths(spec: HardwareFile) -> tuple:
    bw = spec.interconnect.gb_per_s.value * 1e9 * spec.efficiency.interconnect.value
    return (CollectivePath("ring (default)", frozenset(COLLECTIVE_KINDS), DEFAULT_STEP_LATENCY_S,
                           bw, "ring"),)


def _efficiency_by_dtype(listed: dict[str, float]) -> dict[str, float]:
    """Each tensor family's efficiency where known: its own where the spec lists one; FP6 and
    FP4 without one take the nearest listed of FP6 and FP8 (a narrower format is no easier
    to feed: FP4 is not priced nearer its peak than FP8 is). Families absent here fall back
    to the spec's efficiency.tensor (Hardware.tensor_rate)."""
    out, wider = {}, None
    for fam in reversed(TENSOR_FAMILIES):          # widest first
        wider = listed.get(fam, wider if fam in _NARROW_FAMILIES else None)
        if wider is not None:
            out[fam] = wider
    return out


# tensor families narrower than 8 bits
_NARROW_FAMILIES = ("fp4", "fp6")


def to_core(spec: HardwareFile, source_file: str = "") -> Hardware:
    m = spec.memory
    eff = spec.efficiency
    gemm = spec.kernel_families.get(GEMM_FAMILY)
    return Hardware(
        name=spec.name,
        display_name=spec.display_name,
        tensor_flops_per_s={k: f.value * 1e12 for k, f in spec.tensor_tflops.items()},
        vector_flops_per_s={k: f.value * 1e12 for k, f in spec.vector_tflops.items()},
        hbm_bytes=m.hbm_gb.value * 1e9,
        usable_bytes=m.usable_gb.value * 1e9 if m.usable_gb else None,
        hbm_bytes_per_s=m.hbm_tb_per_s.value * 1e12,
        l2_bytes=m.l2_mb.value * 1e6,
        l2_bytes_per_s=m.l2_tb_per_s.value * 1e12 if m.l2_tb_per_s else None,
        smem_per_sm_bytes=m.smem_per_sm_kb.value * 1024,
        sm_count=int(spec.sm_count.value),
        link_bytes_per_s=spec.interconnect.gb_per_s.value * 1e9,
        gpus_per_node=_gpus_per_node(spec),
        collective_paths=_paths(spec.interconnect.collectives) or _default_paths(spec),
        network_paths=_paths(spec.interconnect.network),
        eager_dispatch_s=spec.launch.eager_dispatch_us.value * 1e-6,
        graph_launch_s=spec.launch.graph_launch_us.value * 1e-6,
        min_kernel_s=spec.launch.min_kernel_us.value * 1e-6,
        triton_launch_s=(spec.launch.triton_launch_us.value * 1e-6
                         if spec.launch.triton_launch_us else None),
        gemm_dispatch_s=(spec.launch.gemm_dispatch_us.value * 1e-6
                         if spec.launch.gemm_dispatch_us else None),
        view_dispatch_s=(spec.launch.view_dispatch_us.value * 1e-6
                         if spec.launch.view_dispatch_us else 0.0),
        eager_call_s_by_kind={k: f.value * 1e-6 for k, f in spec.launch.eager_call_us.items()},
        module_call_s=(spec.launch.module_call_us.value * 1e-6
                       if spec.launch.module_call_us else 0.0),
        graph_replay_call_s=(spec.launch.graph_replay_us.value * 1e-6
                             if spec.launch.graph_replay_us else None),
        graph_gap_s=(spec.launch.graph_gap_us.value * 1e-6
                     if spec.launch.graph_gap_us else None),
        graph_warm_launch_s=(spec.launch.graph_warm_launch_us.value * 1e-6
                             if spec.launch.graph_warm_launch_us else None),
        compiled_call_s=(spec.launch.compiled_call_us.value * 1e-6
                         if spec.launch.compiled_call_us else None),
        compiled_launch_s=(spec.launch.compiled_launch_us.value * 1e-6
                           if spec.launch.compiled_launch_us else None),
        compiled_extern_s=(spec.launch.compiled_extern_us.value * 1e-6
                           if spec.launch.compiled_extern_us else None),
        compiled_graph_call_s=(spec.launch.compiled_graph_call_us.value * 1e-6
                               if spec.launch.compiled_graph_call_us else None),
        tensor_efficiency=eff.tensor.value,
        tensor_efficiency_by_dtype=_efficiency_by_dtype(
            {k: f.value for k, f in eff.tensor_by_dtype.items()}),
        vector_efficiency=eff.vector.value,
        hbm_efficiency=eff.hbm.value,
        link_efficiency=eff.interconnect.value,
        weight_only_gemm=frozenset(spec.weight_only_gemm),
        hbm_curve=tuple((mb * 1e6, f) for mb, f in m.hbm_curve.points) if m.hbm_curve else (),
        attention_efficiency=eff.attention.value if eff.attention else None,
        attention_backend_efficiency={k: f.value for k, f in eff.attention_by_backend.items()},
        attention_backend_fixed_s={k: f.value * 1e-6 for k, f in spec.launch.sdpa_fixed_us.items()},
        family_curves={fam: tuple((mb * 1e6, f) for mb, f in c.points)
                       for fam, c in spec.kernel_families.items()},
        family_row_floors={fam: tuple((kb * 1e3, us * 1e-6) for kb, us in c.row_floor)
                           for fam, c in spec.kernel_families.items() if c.row_floor},
        family_per_index_s={fam: c.per_index_ns * 1e-9 for fam, c in spec.kernel_families.items()
                            if c.per_index_ns},
        gemm_flops_curve=tuple((g * 1e9, f) for g, f in gemm.gflop_points) if gemm else (),
        gemm_overlap=gemm.overlap if gemm else 0.0,
        dequant_weights_per_s=(spec.dequant_gweights_per_s.value * 1e9
                               if spec.dequant_gweights_per_s else None),
        sfu_ops_per_s=(spec.sfu_per_clk_per_sm.value * spec.sm_count.value
                       * spec.boost_clock_mhz.value * 1e6 if spec.sfu_per_clk_per_sm else None),
        source_file=source_file,
        spec=spec,
    )


def load_file(path: str | Path) -> Hardware:
    doc = load_yaml(path, "hardware spec")
    try:
        spec = HardwareFile.model_validate(doc.data)
    except ValidationError as err:
        raise_first(err, doc)
    return to_core(spec, str(path))


def spec_paths(spec_dir: Path = SPEC_DIR) -> dict[str, Path]:
    """Bundled spec files by name (the file stem)."""
    return {p.stem: p for p in sorted(spec_dir.glob("*.yaml"))}


def load(name_or_path: str, spec_dir: Path = SPEC_DIR) -> Hardware:
    """A spec by bundled name (`h200`) or by path (`specs/my_gpu.yaml`)."""
    if name_or_path.endswith((".yaml", ".yml")) or "/" in name_or_path:
        return load_file(bundled.spec_file(name_or_path))
    paths = spec_paths(spec_dir)
    if name_or_path not in paths:
        raise RooflabError(f"unknown hardware '{name_or_path}'" + did_you_mean(name_or_path, paths)
                           + f"; known: {', '.join(paths)} (or pass a path to a spec YAML)")
    return load_file(paths[name_or_path])
