"""Which library kernel runs an op when eager PyTorch runs it, and the families those kernels
fall into.

An op of a workload graph is one ATen call when PyTorch runs it eagerly; ATen's kernels for a
family of calls (contiguous elementwise, broadcasting elementwise, row reductions, softmax, ...)
share their code and their achieved bandwidth. rooflab's own Triton kernels reach copy bandwidth
on large tensors; ATen's softmax and norms do not (about 1 and 2.5 TB/s on the H200 where a
copy runs at 4.3). So a kernel is priced for the implementation that runs it:

    `rooflab`  rooflab's generated kernels (the Triton validation suite): the spec's copy curve
    `aten`     eager PyTorch's ATen kernels: the family's curve from the spec's
               `kernel_families` (measured by calibration), else the copy curve (noted)

`eager_family(op, ins, outs, roots)` names the family of a one-op kernel (None where the op is
not priced by its bytes' bandwidth: GEMMs, attention, collectives, views). FAMILIES documents
each family; a spec's `kernel_families` curves are keyed by these names.
"""

from __future__ import annotations

from math import prod

from rooflab.graph import Op, Tensor
from rooflab.ops import KINDS, Role

IMPLEMENTATIONS = ("rooflab", "aten")

FAMILIES: dict[str, str] = {
    "elementwise": "pointwise op on same-shaped contiguous tensors (add, mul, silu, copy)",
    "cast": "a dtype conversion (x.float(), x.to(torch.bfloat16)): ATen's is not vectorised as add's",
    "elementwise_broadcast": "pointwise op where an input broadcasts (x[T, D] + b[D], x * s[T, 1])",
    "copy_broadcast": "a copy out of an expanded view (transformers' repeat_kv: the KV heads "
                      "written out once per query head)",
    "reduce_row": "sum / mean / max over the last axis",
    "reduce_column": "sum / mean / max over an axis that is not the last",
    "reduce_all": "a reduction to one value (x.sum() of a tensor): ATen splits it over the grid",
    "softmax": "softmax over the last axis",
    "layer_norm": "layer_norm over the last axis",
    "rms_norm": "rms_norm over the last axis",
    "embedding": "rows gathered by index (embedding, index_select, gather)",
    "index_copy": "rows written by index into an existing tensor (index_copy_, KV-cache writes)",
    "cat": "torch.cat of tensors along an axis",
}

_REDUCE = ("sum", "mean", "max")
_BY_KIND = {"cast": "cast", "softmax": "softmax", "layernorm": "layer_norm", "rmsnorm": "rms_norm",
            "concat": "cat", "embedding": "embedding", "index_select": "embedding",
            "gather": "embedding", "index": "embedding", "index_copy": "index_copy",
            "index_put": "index_copy"}


def eager_family(op: Op, ins: list[Tensor], outs: list[Tensor],
                 roots: list[Tensor] | None = None) -> str | None:
    """The ATen kernel family eager PyTorch runs `op` with, or None when its time is not a
    bandwidth curve's (tensor-core, attention, collective, view and opaque ops, sorts).
    `roots`: the tensors the inputs are views of (default: the inputs themselves); an input
    viewing fewer elements than it shows is an expanded (broadcast) view."""
    kind = KINDS[op.kind]
    roots = roots or ins
    if op.kind in _BY_KIND:
        return _BY_KIND[op.kind]
    if op.kind in _REDUCE:
        x = ins[0]
        if prod(outs[0].shape) == 1:
            return "reduce_all"
        axis = op.attrs.get("axis", -1) % len(x.shape)
        return "reduce_row" if axis == len(x.shape) - 1 else "reduce_column"
    if kind.role is Role.POINTWISE:
        n = prod(outs[0].shape)
        if any(prod(t.shape) != n for t in ins):
            return "elementwise_broadcast"
        if any(prod(r.shape) < n for r in roots):
            # a same-shaped input that is an expand of a smaller tensor: ATen's copy reads it
            # through strides of zero, unvectorised
            return "copy_broadcast" if op.kind == "copy" else "elementwise_broadcast"
        return "elementwise"
    return None
