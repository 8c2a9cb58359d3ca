"""The hardware spec file: what a YAML spec may say, validated by pydantic at the edge.

Every number in a spec is a `{value, source}` pair (`Figure`) whose source is a key of the
file's `sources:` table, so no figure enters the model without saying where it came from.
rooflab.hardware turns a validated `HardwareFile` into the frozen `Hardware` the model prices on.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from rooflab.dtypes import TENSOR_FAMILIES, VECTOR_FAMILIES
from rooflab.kernel_families import ATTENTION_BACKENDS, FAMILIES, GEMM_FAMILY
from rooflab.yamlio import did_you_mean


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# the smallest and largest value a spec figure may take, in its unit (bundled specs: 0.18 us to
# 10,066 TFLOPS)
FIGURE_RANGE = (1e-6, 1e9)


class Figure(_Strict):
    """One number and where it came from (a key of the spec's `sources`)."""
    value: float = Field(gt=0, allow_inf_nan=False)
    source: str
    note: str | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _number(cls, v):
        if isinstance(v, bool):        # YAML's true/yes is not the number 1
            raise ValueError(f"expected a number, got {v}")
        return v

    @field_validator("value")
    @classmethod
    def _plausible(cls, v: float) -> float:
        # every figure in its unit (TB/s, TFLOPS, GB, MHz, us, a fraction) lies far inside
        # this range; outside it is a typo whose times would overflow
        if not FIGURE_RANGE[0] <= v <= FIGURE_RANGE[1]:
            raise ValueError(f"{v:g} is outside {FIGURE_RANGE[0]:g} to {FIGURE_RANGE[1]:g}, "
                             "the range of any figure in its unit")
        return v


class Fraction(Figure):
    value: float = Field(gt=0, le=1, allow_inf_nan=False)


class Count(Figure):
    """A figure that counts things (SMs): a positive whole number."""

    @field_validator("value")
    @classmethod
    def _whole(cls, v: float) -> float:
        if not v.is_integer():
            raise ValueError(f"must be a whole number, got {v:g}")
        return v


# A kernel whose working set stays in L2 between calls moves its bytes faster than HBM's peak
# (an eager add of 4M bf16 elements: 6.1 TB/s on the H200, whose HBM peak is 4.8)
MAX_CURVE_FRACTION = 2.0


class Curve(_Strict):
    """Achieved fraction of peak HBM bandwidth against bytes a kernel moves (read + write), as
    [[MB, fraction], ...] with MB increasing: small kernels do not reach the asymptote, and
    working sets that stay in L2 pass it."""
    points: list[tuple[Annotated[float, Field(allow_inf_nan=False)],
                       Annotated[float, Field(allow_inf_nan=False)]]] = Field(min_length=2)
    # a row kernel's shortest time against its row's KB (kernel_families.ROW_FAMILIES):
    # [[row KB, µs], ...], KB increasing
    row_floor: list[tuple[Annotated[float, Field(gt=0, allow_inf_nan=False)],
                          Annotated[float, Field(gt=0, allow_inf_nan=False)]]] | None = None
    # a row gather's fixed cost per index, ns (kernel_families.PER_INDEX_FAMILIES)
    per_index_ns: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    # the cuBLAS GEMM family only (kernel_families.GEMM_FAMILY): achieved fraction of the
    # tensor peak against GFLOP, [[GFLOP, fraction], ...] GFLOP increasing, and the share of
    # the other term that each of its two times adds (0: the larger alone, 1: their sum)
    gflop_points: list[tuple[Annotated[float, Field(gt=0, allow_inf_nan=False)],
                             Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)]]] | None \
        = Field(default=None, min_length=2)
    overlap: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    source: str
    note: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "Curve":
        if self.row_floor and [k for k, _ in self.row_floor] != sorted(
                {k for k, _ in self.row_floor}):
            raise ValueError("row_floor points must have strictly increasing row KB")
        if self.gflop_points and [g for g, _ in self.gflop_points] != sorted(
                {g for g, _ in self.gflop_points}):
            raise ValueError("gflop_points must have strictly increasing GFLOP")
        mbs = [p[0] for p in self.points]
        if mbs != sorted(mbs) or len(set(mbs)) != len(mbs) or mbs[0] <= 0:
            raise ValueError("hbm_curve points must have positive, strictly increasing MB")
        if not all(0 < f <= MAX_CURVE_FRACTION for _, f in self.points):
            raise ValueError(f"hbm_curve fractions must lie in (0, {MAX_CURVE_FRACTION:g}] "
                             "(above 1: a working set served from L2)")
        return self


class MemorySpec(_Strict):
    hbm_gb: Figure                    # decimal GB, as the vendor quotes it
    # decimal GB one process can allocate: the CUDA driver's total (torch.cuda's
    # total_memory), where measured; a vendor's "141 GB" is nearer GiB. Fit checks use it.
    usable_gb: Figure | None = None
    hbm_tb_per_s: Figure              # decimal TB/s
    l2_mb: Figure                     # as the vendor or driver reports it (MB)
    l2_tb_per_s: Figure | None = None
    smem_per_sm_kb: Figure            # largest shared memory one block can use, KB (1024 B)
    hbm_curve: Curve | None = None    # size-aware achieved bandwidth (from calibration)


class CollectivePathSpec(_Strict):
    """One way the system runs collectives (rooflab/collectives.py): the collectives it runs,
    its latency per step, how its steps grow with GPUs, and its bus bandwidth (nccl-tests'
    busbw at large sizes)."""
    kinds: list[Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                        "send_recv"]] = Field(min_length=1)
    scaling: Literal["ring", "tree", "switch"] = "ring"
    step_latency_us: Figure
    busbw_gb_per_s: Figure
    min_gpus: int = Field(2, ge=2)    # the GPU counts NCCL uses the path at
    max_gpus: int | None = Field(None, ge=2)
    # left out where a switch path runs the collective (NCCL's tuner takes NVLS there)
    yields_to_switch: bool = False
    # fitted to a measured sweep on this many GPUs: runs only there, and alone for its kinds
    measured_gpus: int | None = Field(None, ge=2)
    source: str | None = None         # a key of `sources`: the table the path was fitted to
    note: str | None = None           # what the path stands for (protocol, what is inferred)

    @model_validator(mode="after")
    def _check(self) -> "CollectivePathSpec":
        if self.max_gpus is not None and self.max_gpus < self.min_gpus:
            raise ValueError(f"max_gpus {self.max_gpus} is below min_gpus {self.min_gpus}")
        return self


class InterconnectSpec(_Strict):
    name: str
    gb_per_s: Figure                  # per GPU, one direction
    gpus_per_node: Figure | None = None       # GPUs one NVLink domain joins
    # paths within a node (at gpus_per_node GPUs), and across nodes (per GPU's network share)
    collectives: dict[str, CollectivePathSpec] = {}
    network: dict[str, CollectivePathSpec] = {}


class LaunchSpec(_Strict):
    eager_dispatch_us: Figure         # host time to dispatch one eager op (CPU-bound)
    graph_launch_us: Figure           # per kernel, when a CUDA graph replays the step
    min_kernel_us: Figure             # GPU-side duration of an empty kernel
    triton_launch_us: Figure | None = None   # host time to launch one Triton kernel (validation)
    # eager PyTorch's host time beyond eager_dispatch_us (rooflab/cost.py's host model): an ATen
    # GEMM call (linear, mm: cuBLAS heuristics, workspace), a metadata-only call (view,
    # transpose: no kernel), and an nn.Module call (its __call__ and Python besides its ops)
    gemm_dispatch_us: Figure | None = None   # default: eager_dispatch_us
    # an eager call of one op kind as a model's forward makes it (rooflab.ops KINDS: softmax,
    # layernorm, attention, ...: its Python wrapper, argument checks, backend choice), from the
    # torch suite's host-bound calibration cases; a kind not here costs eager_dispatch_us
    # (gemm_dispatch_us for a GEMM)
    eager_call_us: dict[str, Figure] = {}
    view_dispatch_us: Figure | None = None   # default: 0
    module_call_us: Figure | None = None     # default: 0
    # host time of one CUDA-graph replay call from Python (cudaGraphLaunch), default: eager_dispatch_us
    graph_replay_us: Figure | None = None
    # per kernel of a graph replay beyond the kernel's own (profiled) device time: what a kernel
    # priced by a measured family curve, or an SDPA call with its backend's sdpa_fixed_us, both
    # holding its fixed GPU time, adds in a replayed step. Default: graph_launch_us
    graph_gap_us: Figure | None = None
    # per replayed kernel whose reads all hit L2 (rooflab.l2_residency): a tiny kernel replayed
    # back to back. Default: graph_launch_us
    graph_warm_launch_us: Figure | None = None
    # torch.compile's host side: one compiled call (guards, the generated wrapper's entry and
    # exit), each Triton kernel the wrapper launches (its buffers and the launcher), and each
    # extern kernel it calls through ATen (cuBLAS GEMM, SDPA). Defaults: COMPILED_CALL_PER_DISPATCH
    # x eager_dispatch_us; triton_launch_us (else eager_dispatch_us); gemm_dispatch_us
    compiled_call_us: Figure | None = None
    compiled_launch_us: Figure | None = None
    compiled_extern_us: Figure | None = None
    # cudagraph trees' own host time per torch.compile(mode="reduce-overhead") call, beyond the
    # graph's replay and the copy of its inputs into static buffers. Default:
    # COMPILED_GRAPH_CALL_PER_DISPATCH x eager_dispatch_us
    compiled_graph_call_us: Figure | None = None
    # eager SDPA's GPU time per call beyond its work, per backend (kernel_families.
    # ATTENTION_BACKENDS: the kernel's setup, cuDNN's memset), from the torch suite's small
    # calibration cases; default 0
    sdpa_fixed_us: dict[str, Figure] = {}


class EfficiencySpec(_Strict):
    """Achieved fractions of peak: what a good kernel reaches on large problems."""
    tensor: Fraction
    tensor_by_dtype: dict[str, Fraction] = {}
    # share of the tensor peak a FlashAttention kernel's two matmuls reach, its exponentials
    # priced apart on the special-function units (from calibration; else `tensor` applies)
    attention: Fraction | None = None
    # eager PyTorch's SDPA backends (kernel_families.ATTENTION_BACKENDS): share of the tensor
    # peak (the FP32 peak for sdpa_fp32) each reaches, from the torch suite's calibration
    attention_by_backend: dict[str, Fraction] = {}
    vector: Fraction
    hbm: Fraction
    interconnect: Fraction


class HardwareFile(_Strict):
    name: str
    display_name: str
    vendor: Literal["nvidia", "amd", "google", "intel"]
    architecture: str
    sources: dict[str, str]
    tensor_tflops: dict[str, Figure]  # dense peaks; a dtype here has a tensor-core GEMM path
    vector_tflops: dict[str, Figure]
    memory: MemorySpec
    sm_count: Count
    boost_clock_mhz: Figure
    sfu_per_clk_per_sm: Figure | None = None   # exp/rcp/rsqrt results per clock per SM
    # int4/int8 weights a weight-only GEMM kernel dequantizes per second (unpack, convert,
    # scale: integer and fp32 ALU work); default: fp32 instruction rate / 8 (ASSUMED)
    dequant_gweights_per_s: Figure | None = None
    interconnect: InterconnectSpec
    launch: LaunchSpec
    efficiency: EfficiencySpec
    weight_only_gemm: list[Literal["int4", "int8", "fp8"]] = Field(
        default=[], description="weight dtypes with a fused dequant-in-GEMM kernel (W4A16, W8A16)")
    # per ATen kernel family (rooflab/kernel_families.py), achieved fraction of HBM peak against
    # bytes moved, as eager PyTorch's kernels reach it (from calibration)
    kernel_families: dict[str, Curve] = {}
    calibrated_from: str | None = None    # measurement file the calibrated figures come from
    notes: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "HardwareFile":
        for fam in self.tensor_tflops:
            if fam not in TENSOR_FAMILIES:
                raise ValueError(f"tensor_tflops.{fam}: unknown tensor dtype '{fam}' "
                                 f"(known: {', '.join(TENSOR_FAMILIES)})")
        for fam in self.vector_tflops:
            if fam not in VECTOR_FAMILIES:
                raise ValueError(f"vector_tflops.{fam}: unknown vector dtype '{fam}' "
                                 f"(known: {', '.join(VECTOR_FAMILIES)})")
        if "fp32" not in self.vector_tflops:
            raise ValueError("vector_tflops must give fp32 (all vector FLOPs are priced at it)")
        for fam in self.efficiency.tensor_by_dtype:
            if fam not in self.tensor_tflops:
                raise ValueError(f"efficiency.tensor_by_dtype names '{fam}', "
                                 "which tensor_tflops does not list")
        for where, names in (("efficiency.attention_by_backend", self.efficiency.attention_by_backend),
                             ("launch.sdpa_fixed_us", self.launch.sdpa_fixed_us)):
            for name in names:
                if name not in ATTENTION_BACKENDS:
                    raise ValueError(f"{where}: unknown backend '{name}'"
                                     + did_you_mean(name, ATTENTION_BACKENDS))
        for fam, curve in self.kernel_families.items():
            if fam not in FAMILIES:
                raise ValueError(f"kernel_families: unknown family '{fam}'"
                                 + did_you_mean(fam, FAMILIES))
            if curve.source not in self.sources:
                raise ValueError(f"kernel_families.{fam}: source '{curve.source}' is not in "
                                 "`sources`")
            gemm_keys = curve.gflop_points is not None, curve.overlap is not None
            if fam == GEMM_FAMILY and not all(gemm_keys):
                raise ValueError(f"kernel_families.{fam}: needs gflop_points and overlap")
            if fam != GEMM_FAMILY and any(gemm_keys):
                raise ValueError(f"kernel_families.{fam}: gflop_points and overlap belong to "
                                 f"{GEMM_FAMILY} only")
        for where, fig in self._figures():
            if fig.source not in self.sources:
                raise ValueError(f"{where}: source '{fig.source}' is not in `sources`"
                                 + did_you_mean(fig.source, self.sources))
        return self

    def _figures(self):
        for k, f in self.tensor_tflops.items():
            yield f"tensor_tflops.{k}", f
        for k, f in self.vector_tflops.items():
            yield f"vector_tflops.{k}", f
        if self.launch.triton_launch_us:
            yield "launch.triton_launch_us", self.launch.triton_launch_us
        if self.memory.hbm_curve:
            c = self.memory.hbm_curve
            if c.source not in self.sources:
                raise ValueError(f"memory.hbm_curve: source '{c.source}' is not in `sources`")
        for group in ("memory", "launch", "efficiency"):
            sub = getattr(self, group)
            for k in type(sub).model_fields:
                v = getattr(sub, k)
                if isinstance(v, Figure):
                    yield f"{group}.{k}", v
        for k, f in self.efficiency.tensor_by_dtype.items():
            yield f"efficiency.tensor_by_dtype.{k}", f
        for k, f in self.efficiency.attention_by_backend.items():
            yield f"efficiency.attention_by_backend.{k}", f
        for k, f in self.launch.sdpa_fixed_us.items():
            yield f"launch.sdpa_fixed_us.{k}", f
        yield "sm_count", self.sm_count
        if self.sfu_per_clk_per_sm:
            yield "sfu_per_clk_per_sm", self.sfu_per_clk_per_sm
        if self.dequant_gweights_per_s:
            yield "dequant_gweights_per_s", self.dequant_gweights_per_s
        yield "boost_clock_mhz", self.boost_clock_mhz
        yield "interconnect.gb_per_s", self.interconnect.gb_per_s
        if self.interconnect.gpus_per_node:
            yield "interconnect.gpus_per_node", self.interconnect.gpus_per_node
        for group in ("collectives", "network"):
            for name, path in getattr(self.interconnect, group).items():
                where = f"interconnect.{group}.{name}"
                if path.source is not None and path.source not in self.sources:
                    raise ValueError(f"{where}: source '{path.source}' is not in `sources`"
                                     + did_you_mean(path.source, self.sources))
                yield f"{where}.step_latency_us", path.step_latency_us
                yield f"{where}.busbw_gb_per_s", path.busbw_gb_per_s
