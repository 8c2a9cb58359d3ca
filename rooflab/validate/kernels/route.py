"""Which builder makes the Triton kernel for a rooflab kernel: a hand-written template
(`templates.py`) or a generated kernel (`codegen.py`). The one place that decides it.

  attention     a lone attention op, or a fused QKᵀ → softmax → ·V chain (attention.py)
  qmatmul       a lone quantized matmul (qgemm.py: W4A16, FP8)
  dequant_int4  a lone group-wise int4 dequantize (qgemm.py)
  w4a16         a group-wise int4 dequantize fused into its matmul (qgemm.py)
  gemm          a matmul and its epilogue: a batched-GEMM template where one tiles the problem
                exactly (bmm_pingpong.py, bmm.py), else the generated GEMM
  row           a last-axis reduction with its prologue and epilogue (generated)
  pointwise     pointwise ops only (generated)
"""

from __future__ import annotations

from rooflab.graph import Graph
from rooflab.ops import KINDS, Role
from rooflab.schedule import Kernel
from rooflab.validate.common import Unsupported
from rooflab.validate.kernels import codegen, templates
from rooflab.validate.kernels.built import Built, Views


def _grouped_dequantize(g: Graph, i: int) -> bool:
    return g.ops[i].kind == "dequantize" and "group_size" in g.ops[i].attrs


def family(g: Graph, kernel: Kernel, views: Views) -> str:
    """The builder for `kernel` (a name from the module docstring); raises `Unsupported` where
    none computes it on one GPU."""
    kinds = [g.ops[i].kind for i in kernel.ops]
    roles = {KINDS[k].role for k in kinds}
    if roles & {Role.COLLECTIVE, Role.OPAQUE}:
        raise Unsupported(f"{'/'.join(kinds)} does not run on one GPU")
    for k in kinds:                 # kinds checked against their PyTorch reference only
        if KINDS[k].triton.unsupported:
            raise Unsupported(KINDS[k].triton.unsupported)
    if kernel.fusion == "attention" or kinds == ["attention"]:
        return "attention"
    if kinds == ["qmatmul"]:
        return "qmatmul"
    grouped = any(_grouped_dequantize(g, i) for i in kernel.ops)
    if kinds in (["dequantize"], ["dequantize", "matmul"]) and _grouped_dequantize(g, kernel.ops[0]) \
            and g.tensors[views(g.ops[kernel.ops[0]].inputs[0])].dtype.name == "int4":
        return "dequant_int4" if kinds == ["dequantize"] else "w4a16"
    if "attention" in kinds or "qmatmul" in kinds or grouped or (
            "dequantize" in kinds and "matmul" in kinds):
        raise Unsupported(f"no template for {'→'.join(kinds)}")
    if Role.GEMM in roles:
        return "gemm"
    if Role.REDUCTION in roles:
        return "row"
    return "pointwise"


def build(g: Graph, kernel: Kernel, config: dict | None = None) -> Built:
    """A Triton kernel computing `kernel`'s escaping outputs from its external inputs.
    `config` overrides the launch configuration of a generated row or GEMM kernel (and then a
    GEMM is always generated); by default it is `configs.row_config` / `configs.gemm_config`."""
    views = Views(g)
    fam = family(g, kernel, views)
    if fam == "attention":
        return templates.attention(g, kernel, views)
    if fam == "qmatmul":
        return templates.qmatmul(g, kernel, views)
    if fam == "dequant_int4":
        return templates.dequant_int4(g, kernel, views)
    if fam == "w4a16":
        return templates.dequant_gemm(g, kernel, views)
    if fam == "gemm":
        built = templates.batched_gemm(g, kernel, views) if config is None else None
        return built or codegen.gen_gemm(g, kernel, views, config)
    if fam == "row":
        return codegen.gen_row(g, kernel, views, config)
    return codegen.gen_pointwise(g, kernel, views)
