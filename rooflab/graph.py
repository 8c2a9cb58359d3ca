"""The core workload graph: plain frozen data, already validated and shape-checked."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rooflab.dtypes import DType


# A repeated block's index in a name: "layer[3]" (a YAML repeat) or ".3" (a module list, as
# traced module paths spell it: "model.layers.3.mlp")
_BLOCK_INDEX = re.compile(r"\[\d+\]|(?<=\.)\d+(?=\.|$)")


def folded_name(name: str) -> str:
    """`name` with every block index replaced by `*`: "layer[3].mlp" -> "layer[*].mlp",
    "model.layers.3.mlp" -> "model.layers.*.mlp". Names that differ only in block index are the
    same op (or kernel) of different iterations, which tables show as one row."""
    return _BLOCK_INDEX.sub(lambda m: "[*]" if m.group(0)[0] == "[" else "*", name)


def outer_block_index(name: str) -> str:
    """The outermost repeated-block index in `name`: "layer[3].head[1].q" -> "[3]",
    "model.layers.3.mlp.experts.5.w" -> "3"; "" outside any repeated block."""
    m = _BLOCK_INDEX.search(name)
    return m.group(0) if m else ""


@dataclass(frozen=True, slots=True)
class Tensor:
    """A named tensor. `strides`: in elements, as eager PyTorch lays it out, where its source
    knows them (a trace records every tensor's); None: rooflab.strides derives them (row-major
    for a workload's inputs and its ops' outputs, through the view for a view's)."""
    name: str
    shape: tuple[int, ...]
    dtype: DType
    strides: tuple[int, ...] | None = field(default=None, compare=False)
    numel: int = field(init=False, compare=False)
    nbytes: int = field(init=False, compare=False)     # block scales included

    def __post_init__(self):
        n = 1
        for d in self.shape:
            n *= d
        object.__setattr__(self, "numel", n)
        object.__setattr__(self, "nbytes", self.dtype.nbytes(n))

    def renamed(self, name: str) -> Tensor:
        """This tensor under another name; its sizes are copied, not worked out again (they
        may be grid Values, whose arithmetic is costly)."""
        t = object.__new__(Tensor)
        for slot in Tensor.__slots__:
            object.__setattr__(t, slot, getattr(self, slot))
        object.__setattr__(t, "name", name)
        return t


@dataclass(frozen=True, slots=True)
class Op:
    name: str
    kind: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict, hash=False, compare=False)
    block: str = ""            # repeated block instance it came from, e.g. "layer[3]"
    line: int | None = None    # YAML line, for messages
    data_dependent: bool = False
    launches: int = 1          # CUDA kernels the op launches when it runs alone (views: none;
                               # 0 for an op that rides in its producer's kernel, such as the
                               # bias add a cuBLASLt GEMM does in its epilogue)


@dataclass(frozen=True, slots=True)
class Graph:
    """Ops in a valid topological order over named tensors."""
    name: str
    tensors: dict[str, Tensor]
    ops: tuple[Op, ...]
    outputs: frozenset[str]             # tensors the workload returns
    params: dict[str, int]
    file: str = ""
    description: str = ""
    notes: tuple[str, ...] = ()         # what its source says about it (a trace's opaque ops)
    # a traced forward's inputs (not parameters or buffers) that it writes in place
    written_inputs: frozenset[str] = frozenset()
    # a traced forward's top-level tensor arguments (not parameters, buffers or a static KV
    # cache; tensors nested in a list or dict argument are not counted): what torch.compile's
    # reduce-overhead copies into its CUDA graph's static buffers each call; empty where the
    # source does not say (a workload YAML)
    call_inputs: frozenset[str] = frozenset()

    def with_notes(self, notes: tuple[str, ...]) -> "Graph":
        """This graph with `notes` added."""
        from dataclasses import replace
        return replace(self, notes=self.notes + tuple(notes))

    def consumers(self) -> dict[str, list[int]]:
        """Tensor name -> indices of ops that read it."""
        out: dict[str, list[int]] = {}
        for i, op in enumerate(self.ops):
            for t in op.inputs:
                out.setdefault(t, []).append(i)
        return out

    def producers(self) -> dict[str, int]:
        return {t: i for i, op in enumerate(self.ops) for t in op.outputs}
