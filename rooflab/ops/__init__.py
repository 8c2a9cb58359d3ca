"""The op library: one `OpKind` record per op kind, in `KINDS`.

Each module of this package holds one family of kinds and registers them when imported; this
file imports every module it finds, so adding an op kind is adding one module (docs/ops.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from rooflab.ops.base import (KINDS, OP_CLASSES, OPAQUE_TRAFFIC, Attr, AttrError, OpCost,
                              OpKind, Role, ShapeError, TritonHook, broadcast, role, view_regions,
                              view_roots)

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module != "base":
        importlib.import_module(f"{__name__}.{_module}")

from rooflab.ops.attention import attention_family, attention_pairs  # noqa: E402  (registered above)
from rooflab.ops.elementwise import allocates  # noqa: E402
from rooflab.ops.gemm import gemm_family, qmatmul_family  # noqa: E402

__all__ = ["KINDS", "OP_CLASSES", "OPAQUE_TRAFFIC", "Attr", "AttrError", "OpCost", "OpKind",
           "Role", "ShapeError", "TritonHook", "allocates", "attention_family", "attention_pairs",
           "broadcast", "gemm_family",
           "kernel_op_class", "qmatmul_family", "role", "view_regions", "view_roots"]


def kernel_op_class(kinds, fusion: str = "") -> str:
    """The op class a kernel holding ops of `kinds` is reported under: the first of
    OP_CLASSES among its ops' classes; a FlashAttention-style fused kernel is attention."""
    classes = {KINDS[k].op_class for k in kinds}
    if fusion == "attention" and "quantized" not in classes:
        return "attention"
    return next(c for c in OP_CLASSES if c in classes)
