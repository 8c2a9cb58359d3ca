"""Fusion policies: plain data saying which merges a schedule may make (rooflab.schedule applies
them). The built-in ones (docs/fusion.md defines them precisely), and user policies from YAML.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooflab.errors import RooflabError
from rooflab.ops import Role


@dataclass(frozen=True)
class FusionPolicy:
    """Which merges a policy allows. `edges` holds (kernel anchor, joining op role) pairs;
    `dequant_prologue` lets a GEMM read its operand through a dequantize/cast;
    `attention_pattern` fuses QKᵀ → softmax → ·V chains into one kernel; `gqa_attention` lets
    an attention kernel read key/value heads shared by several query heads where they are, not
    through copies made per query head (transformers' repeat_kv)."""
    name: str
    description: str
    edges: frozenset[tuple[str, str]] = frozenset()
    dequant_prologue: bool = False
    attention_pattern: bool = False
    reduction_prologue: bool = False
    gqa_attention: bool = False
    # whose kernels run the schedule (rooflab/kernel_families.py): a fusing schedule's own
    # kernels, and cuBLAS's where a GEMM fuses nothing (as the unfused step calls it)
    kernels: str = "rooflab+library"
    # GEMMs are library calls that take nothing in (Inductor's cuBLAS), and every kernel that
    # is not a library call is generated code that launches once (ATen's extra launches gone)
    extern_gemm: bool = False
    # a pointwise kernel that only one other kernel reads is computed inside it (Inductor
    # inlines unrealized pointwise nodes into their reader), and long reductions with few rows
    # are split over the grid into several launches (Inductor's split reductions)
    inline_single_reader: bool = False
    split_reductions: bool = False
    # two independent pointwise kernels over the same number of elements that read a common
    # tensor become one kernel (Inductor's horizontal fusion: it scores candidate pairs by the
    # bytes they share, dependent or not)
    fuse_siblings: bool = False

    def allows(self, anchor: Role, role: Role) -> bool:
        return (anchor.value, role.value) in self.edges


_PW, _GA, _RED, _GEMM, _SC = "pointwise", "gather", "reduction", "gemm", "scatter"
POLICIES: dict[str, FusionPolicy] = {
    "unfused": FusionPolicy("unfused", "one kernel per op, as eager PyTorch runs it",
                            kernels="aten"),
    "epilogue": FusionPolicy(
        "epilogue", "a GEMM absorbs the pointwise ops that follow it (bias, activation, scale, "
        "residual add, cast) while its output tile is on chip",
        edges=frozenset({(_GEMM, _PW)})),
    "fused": FusionPolicy(
        "fused", "Inductor-like: pointwise chains, pointwise prologues and epilogues of "
        "reductions/softmax/norms, GEMM epilogues, dequantize inside the GEMM, and "
        "FlashAttention-style attention reading shared KV heads in place; a scatter computes "
        "the values it writes",
        edges=frozenset({(_PW, _PW), (_GA, _PW), (_RED, _PW), (_GEMM, _PW), (_PW, _SC)}),
        dequant_prologue=True, attention_pattern=True, reduction_prologue=True,
        gqa_attention=True),
    "inductor": FusionPolicy(
        "inductor", "torch.compile's default: pointwise chains and reduction prologues and "
        "epilogues in generated Triton kernels; a GEMM is an extern cuBLAS call with no "
        "epilogue, attention one SDPA call",
        edges=frozenset({(_PW, _PW), (_GA, _PW), (_RED, _PW), (_PW, _SC)}),
        attention_pattern=True, reduction_prologue=True, extern_gemm=True,
        inline_single_reader=True, split_reductions=True, fuse_siblings=True,
        kernels="inductor"),
}


def load_policy(name_or_path: str) -> FusionPolicy:
    """A built-in policy by name, or a user policy from a YAML file (docs/fusion.md)."""
    if name_or_path in POLICIES:
        return POLICIES[name_or_path]
    p = Path(name_or_path)
    if not name_or_path.endswith((".yaml", ".yml")):
        from rooflab.yamlio import did_you_mean
        raise RooflabError(f"unknown schedule '{name_or_path}'" + did_you_mean(name_or_path, POLICIES)
                           + f"; built-in: {', '.join(POLICIES)} (or a policy YAML file)")
    from pydantic import BaseModel, ConfigDict, ValidationError

    from rooflab.yamlio import load_yaml, raise_first

    roles = [r.value for r in Role]

    class PolicyFile(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: str
        description: str = ""
        edges: list[tuple[str, str]] = []
        dequant_prologue: bool = False
        attention_pattern: bool = False
        reduction_prologue: bool = False
        gqa_attention: bool = False

    doc = load_yaml(p, "fusion policy")
    try:
        spec = PolicyFile.model_validate(doc.data)
    except ValidationError as err:
        raise_first(err, doc)
    for i, (a, b) in enumerate(spec.edges):
        for r in (a, b):
            if r not in roles:
                raise doc.error(f"unknown role '{r}' (roles: {', '.join(roles)})", ("edges", i))
    return FusionPolicy(spec.name, spec.description, frozenset(map(tuple, spec.edges)),
                        spec.dequant_prologue, spec.attention_pattern, spec.reduction_prologue,
                        spec.gqa_attention)
