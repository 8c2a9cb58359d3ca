"""What every op kind is made of: the `OpKind` record, its attribute schema and cost record.

An op kind is one `OpKind`: its shape rule (`infer`), its cost rule (`cost`), its fusion role,
the attributes it takes (checked when a workload is loaded), the op class it is reported under,
its PyTorch reference and the hook that tells the validation code generator how to compute it.
Each module of `rooflab.ops` registers the kinds of one family with `register`.

A cost rule is a pure function of the op and its (already shape-inferred) tensors. It returns
an `OpCost`: FLOPs by unit and dtype family, the bytes it reads from each input tensor and
writes to each output, and anything it moves beyond one pass. Whether a tensor's bytes cross
HBM is decided later, per kernel, by `cost.py`: a tensor made and used inside one fused kernel
costs nothing. Conventions:
  * FLOPs are real FLOPs: an FMA is 2. A transcendental (exp, tanh, erf, rsqrt) counts as 1.
  * All vector (non-tensor-core) math is priced at the fp32 vector rate.
  * A matmul's FLOPs are 2*M*N*K (PyTorch's flop counter convention, not 2K-1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from rooflab.dtypes import TENSOR_FAMILIES, DType, lookup
from rooflab.graph import Graph, Op, Tensor


class Role(str, Enum):
    """What an op is to the fusion scheduler (tinygrad's GroupOp idea)."""
    POINTWISE = "pointwise"      # elementwise, broadcasts allowed; fuses anywhere
    GATHER = "gather"            # embedding lookup: reads rows by index
    SCATTER = "scatter"          # writes rows by index into an existing tensor (in place): a
                                 # fusion barrier for its output; may take a pointwise producer
                                 # of the values it writes
    REDUCTION = "reduction"      # needs a whole row on chip: reduce, softmax, norms
    GEMM = "gemm"                # tensor-core anchor; takes tile epilogues and dequant prologues
    ATTENTION = "attention"      # fused QK^T-softmax-PV
    COLLECTIVE = "collective"    # runs on the interconnect: a fusion barrier
    OPAQUE = "opaque"            # library call with explicit cost: a fusion barrier
    VIEW = "view"                # reshape/permute: metadata only, no kernel


# The classes validation results are reported under, in the order a kernel holding ops of
# several classes takes the first of them (a GEMM with a dequantize prologue is "quantized").
OP_CLASSES = ("quantized", "attention", "gemm", "reduction", "gather", "pointwise",
              "collective", "opaque", "view")

OPAQUE_TRAFFIC = -1     # read position of an opaque op's declared traffic


class ShapeError(ValueError):
    """An op's inputs do not fit together; the message says how."""


class AttrError(ValueError):
    """An op attribute has the wrong type or value; the message says which and why."""


@dataclass(frozen=True, slots=True)
class OpCost:
    tensor_flops: int = 0
    tensor_dtype: str | None = None     # tensor-core dtype family: bf16, fp8, fp4, ...
    vector_flops: int = 0
    reads: tuple[tuple[int, int], ...] = ()    # (position in op.inputs, bytes read from it)
    writes: tuple[tuple[int, int], ...] = ()   # (position in op.outputs, bytes written to it)
    reread_bytes: int = 0    # traffic beyond one pass that caches serve (attention K/V re-reads)
    link_bytes: int = 0      # bytes each GPU sends over the interconnect
    collective: tuple[str, int, int, bool] | None = None   # (kind, size in bytes, GPUs,
                             # across nodes): priced by rooflab.collectives (size in nccl-tests'
                             # convention)
    row_bytes: int = 0       # fp32 bytes of one reduction row that must stay on chip
    passes_if_spilled: int = 1   # passes over the input when the row does not fit on chip
    gemm_mnb: tuple[int, int, int] | None = None   # a GEMM's (M, N, batch): its output tiles
    sfu_ops: int = 0         # transcendentals (exp, reciprocal, rsqrt) for the special-function units
    dequant_elems: int = 0   # integer weights unpacked and scaled in registers, per pass (a GEMM
                             # that dequantizes them does so once per row tile of its output)


# ----------------------------------------------------------------------------- attributes
# An attribute's type: "int" (an integer or an expression over the workload's parameters),
# "ints" (a list of those), "bool", "float" (a finite number), "dtype" (a dtype name),
# "family" (a tensor-core dtype family), "str".
ATTR_TYPES = ("int", "ints", "bool", "float", "dtype", "family", "str")


@dataclass(frozen=True, slots=True)
class Attr:
    """One attribute an op kind takes: its type, the smallest value a number may have, and
    whether a workload must give it."""
    type: str
    doc: str
    min: float | None = None
    required: bool = False

    def check(self, name: str, value: Any, evaluate: Callable[[Any], int]) -> Any:
        """The attribute's value as the op rules use it (expressions evaluated by `evaluate`);
        AttrError when it has the wrong type or is out of range."""
        if self.type == "int":
            return self._int(name, evaluate(value))
        if self.type == "ints":
            if not isinstance(value, list):
                raise AttrError(f"`{name}` must be a list of integers, got {_shown(value)}")
            return [self._int(f"{name}[{i}]", evaluate(v)) for i, v in enumerate(value)]
        if self.type == "bool":
            if not isinstance(value, bool):
                raise AttrError(f"`{name}` must be true or false, got {_shown(value)}")
            return value
        if self.type == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise AttrError(f"`{name}` must be a finite number, got {_shown(value)}")
            if self.min is not None and value < self.min:
                raise AttrError(f"`{name}` must be at least {self.min:g}, got {value:g}")
            return value
        if not isinstance(value, str):
            raise AttrError(f"`{name}` must be a string, got {_shown(value)}")
        if self.type == "dtype" and lookup(value) is None:
            raise AttrError(f"`{name}`: unknown dtype '{value}'")
        if self.type == "family" and value not in TENSOR_FAMILIES:
            raise AttrError(f"`{name}` must be a tensor-core family "
                            f"({', '.join(TENSOR_FAMILIES)}), got '{value}'")
        return value

    def _int(self, name: str, v: int) -> int:
        if self.min is not None and v < self.min:
            raise AttrError(f"`{name}` must be at least {self.min}, got {v}")
        return v


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ----------------------------------------------------------------------------- validation hook
@dataclass(frozen=True, slots=True)
class TritonHook:
    """How the validation code generator computes this kind inside a generated kernel.
    `expr`: one line of fp32 Triton over `{x}` (unary) or `{a}`, `{b}` (binary) and the op's
    attributes; `emit`: the name of the generator's method for kinds one line cannot express
    (a cast's clamp, a mask over positions, rotary's partner lane); `row` and `loop`: a row
    reduction's lines whole in registers and in the chunked two-pass form (init, accumulate,
    finish, per element); `template`: a hand-written kernel family runs it; `unsupported`: why
    no validation kernel computes it (it does not run on one GPU, or, where the kind has a
    PyTorch reference, no generated kernel is written for it yet: validation skips it)."""
    expr: str | None = None
    emit: str | None = None
    row: tuple[str, ...] = ()
    loop: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None = None
    template: str | None = None
    unsupported: str | None = None


# ----------------------------------------------------------------------------- the record
InferFn = Callable[[Op, list[Tensor]], list[tuple[tuple[int, ...], DType]]]
CostFn = Callable[[Op, list[Tensor], list[Tensor]], OpCost]


@dataclass(frozen=True)
class OpKind:
    """Everything rooflab knows about one op kind.

    `reference(op, xs, ctx)` computes the op in PyTorch for validation: `xs` are the inputs as
    fp32 tensors (integers kept), `ctx` gives `torch`, `F` (torch.nn.functional), the rooflab dtypes of the inputs
    (`ctx.in_dtypes`), the raw
    inputs (`ctx.raw`), the output shape (`ctx.out_shape`) and int-weight dequantization
    (`ctx.dequant(position, group)`); rooflab's core never imports torch itself. None where the
    kind does not run on one GPU (`triton.unsupported` says why)."""
    name: str
    role: Role
    op_class: str
    arity: tuple[int, int]          # (min, max) number of inputs
    doc: str
    infer: InferFn
    cost: CostFn
    attrs: dict[str, Attr] = field(default_factory=dict)
    reference: Callable | None = None
    triton: TritonHook = TritonHook()
    flops_per_element: int | None = None    # pointwise kinds: FLOPs per output element
    # views of part of their input (slice, split): (input shape, axis, start, stop, step) of
    # each output, as `view_regions` keys them
    regions: Callable[[Op, Tensor], list[tuple]] | None = None
    # views: each output's strides in elements from the input's (None where the view has no
    # strided form: a reshape of a non-contiguous tensor, which PyTorch would copy)
    strides: Callable[[Op, Tensor, tuple[int, ...]], list[tuple[int, ...] | None]] | None = None


KINDS: dict[str, OpKind] = {}


def register(kind: OpKind) -> OpKind:
    """Add `kind` to the library; a second record of the same name is an error."""
    if kind.name in KINDS:
        raise RuntimeError(f"duplicate op kind '{kind.name}'")
    if kind.op_class not in OP_CLASSES:
        raise RuntimeError(f"op kind '{kind.name}': unknown op class '{kind.op_class}'")
    for key, attr in kind.attrs.items():
        if attr.type not in ATTR_TYPES:
            raise RuntimeError(f"op kind '{kind.name}': attribute '{key}' has type '{attr.type}'")
    KINDS[kind.name] = kind
    return kind


def role(kind: str) -> Role:
    return KINDS[kind].role


def view_roots(graph: Graph) -> dict[str, str]:
    """Each output of every view op -> the tensor whose bytes it names (looking through chains).
    A view with several outputs (split) maps each of them to the same root."""
    root: dict[str, str] = {}
    for op in graph.ops:
        if KINDS[op.kind].role is Role.VIEW:
            src = op.inputs[0]
            for out in op.outputs:
                root[out] = root.get(src, src)
    return root


# A region names which bytes of its root a view covers: () for all of them (reshape, permute);
# a slice or split appends (input shape, axis, start, stop, step), so two views of one range
# compare equal and views of different ranges do not.
Region = tuple


def view_regions(graph: Graph) -> dict[str, tuple[str, Region]]:
    """Each view op's output -> (root tensor, the region of the root's bytes it names)."""
    out: dict[str, tuple[str, Region]] = {}
    for op in graph.ops:
        kind = KINDS[op.kind]
        if kind.role is not Role.VIEW:
            continue
        src = op.inputs[0]
        root, region = out.get(src, (src, ()))
        ranges = kind.regions(op, graph.tensors[src]) if kind.regions else None
        for j, t in enumerate(op.outputs):
            out[t] = (root, region + (ranges[j],) if ranges else region)
    return out


# ----------------------------------------------------------------------------- shared helpers
DTYPE_ATTR = Attr("dtype", "output dtype (default: the first input's)")


def numel(shape) -> int:
    return math.prod(shape)


def row_major(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The strides, in elements, of a contiguous (row-major) tensor of `shape`."""
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def same_layout(shape: tuple[int, ...], a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether strides `a` and `b` lay out a tensor of `shape` alike (dimensions of size 1,
    whose stride nothing reads, aside)."""
    return all(x == y for d, x, y in zip(shape, a, b) if d != 1)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy broadcasting of shapes; ShapeError when they do not broadcast."""
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        dims = {s[len(s) - ndim + i] for s in shapes if len(s) - ndim + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise ShapeError("shapes " + ", ".join(str(list(s)) for s in shapes)
                             + " do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def out_dtype(op: Op, default: DType) -> DType:
    """The op's `dtype` attribute, or `default`."""
    name = op.attrs.get("dtype")
    if name is None:
        return default
    dt = lookup(name)
    if dt is None:
        raise ShapeError(f"unknown dtype '{name}'")
    return dt


def read_write_once(ins: list[Tensor], outs: list[Tensor]):
    """Each input read once and each output written once, as (position, bytes) pairs."""
    return (tuple((i, t.nbytes) for i, t in enumerate(ins)),
            tuple((i, t.nbytes) for i, t in enumerate(outs)))


def axis_of(op: Op, x: Tensor) -> int:
    """The op's `axis` (default -1) as a non-negative index into x's dimensions."""
    axis = op.attrs.get("axis", -1)
    if not -len(x.shape) <= axis < len(x.shape):
        raise ShapeError(f"axis {axis} out of range for a {len(x.shape)}-D tensor")
    return axis % len(x.shape)
