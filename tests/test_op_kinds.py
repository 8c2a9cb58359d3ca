"""Every op kind through every per-kind table: a new kind that misses one fails here."""

import pytest

from rooflab import ops
from rooflab.errors import RooflabError
from rooflab.report.html.style import OP_CLASS_COLORS
from rooflab.validate.kernels import codegen

from test_ops import BINARY_KINDS, UNARY_FLOPS

KINDS = sorted(ops.KINDS)
RUNS_ON_ONE_GPU = {"collective", "opaque"}


def test_the_library_holds_every_kind():
    assert len(KINDS) == 63       # 40, then issue 13's indexing, slicing, ordering, MoE, MLA and
                                  # the generic elementwise, fill and expand of traced graphs;
                                  # issue 16's all_to_all and send_recv; copy_into (a traced
                                  # copy_ into a view); foreach_copy (torch._foreach_copy_)
    assert set(UNARY_FLOPS) | set(BINARY_KINDS) <= set(KINDS)


@pytest.mark.parametrize("name", KINDS)
def test_kind_record_is_complete(name):
    k = ops.KINDS[name]
    assert k.name == name and isinstance(k.role, ops.Role)
    assert k.op_class in ops.OP_CLASSES and k.doc
    lo, hi = k.arity
    assert 0 <= lo <= hi
    for attr in k.attrs.values():
        assert attr.type in ops.base.ATTR_TYPES and attr.doc
    hook = k.triton
    if k.op_class in RUNS_ON_ONE_GPU:
        assert hook.unsupported and k.reference is None
        return
    assert callable(k.reference), f"{name} has no PyTorch reference"
    if k.role is ops.Role.VIEW:
        return
    if hook.unsupported:          # checked against its reference only: the reason is shown
        assert name in hook.unsupported and not (hook.expr or hook.emit or hook.row or hook.template)
        return
    if k.role is ops.Role.REDUCTION:
        assert hook.row and hook.loop and len(hook.loop) == 4
    elif k.role in (ops.Role.GEMM, ops.Role.ATTENTION):
        assert hook.template
    else:
        assert bool(hook.expr) != bool(hook.emit), f"{name}: one Triton expression or emitter"
        if hook.emit:
            assert hasattr(codegen._Emitter, "_" + hook.emit), hook.emit


@pytest.mark.parametrize("op_class", [c for c in ops.OP_CLASSES
                                      if c not in RUNS_ON_ONE_GPU | {"view"}])
def test_every_validated_op_class_has_a_colour(op_class):
    assert op_class in OP_CLASS_COLORS


@pytest.mark.parametrize("kinds,fusion,expected", [
    (["matmul", "add", "gelu"], "epilogue", "gemm"),
    (["matmul", "scale", "causal_mask", "softmax", "matmul"], "attention", "attention"),
    (["dequantize", "matmul"], "dequant-in-GEMM", "quantized"),
    (["add", "rmsnorm"], "reduction prologue", "reduction"),
    (["embedding", "scale"], "pointwise", "gather"),
    (["relu"], "", "pointwise"),
])
def test_kernel_op_class(kinds, fusion, expected):
    assert ops.kernel_op_class(kinds, fusion) == expected


# ----------------------------------------------------------------------------- attributes
@pytest.mark.parametrize("op,problem", [
    ("{kind: attention, inputs: [q, q, q], outputs: [o], block_m: 0}",
     "`block_m` must be at least 1, got 0"),
    ("{kind: dequantize, inputs: [w], outputs: [o], dtype: bf16, group_size: -128}",
     "`group_size` must be at least 1, got -128"),
    ("{kind: sum, inputs: [x], outputs: [o], keepdim: 1}", "`keepdim` must be true or false, got 1"),
    ("{kind: cast, inputs: [x], outputs: [o], dtype: [bf16]}", "`dtype` must be a string, got ['bf16']"),
    ("{kind: cast, inputs: [x], outputs: [o], dtype: bf17}", "`dtype`: unknown dtype 'bf17'"),
    ("{kind: opaque, inputs: [x], outputs: [o], flops: 1, bytes: 1, reason: {a: 1}}",
     "`reason` must be a string, got {'a': 1}"),
    ("{kind: opaque, inputs: [x], outputs: [o], flops: -5}", "`flops` must be at least 0, got -5"),
    ("{kind: permute, inputs: [x], outputs: [o], dims: 1}", "`dims` must be a list of integers, got 1"),
    ("{kind: permute, inputs: [x], outputs: [o]}", "permute needs `dims:`"),
    ("{kind: scale, inputs: [x], outputs: [o], factor: .inf}", "`factor` must be a finite number"),
    ("{kind: rmsnorm, inputs: [x], outputs: [o], eps: -1}", "`eps` must be at least 0, got -1"),
    ("{kind: all_reduce, inputs: [x], outputs: [o]}", "all_reduce needs `world_size:`"),
    ("{kind: rotary, inputs: [x, x, x], outputs: [o], dtype: fp32}", "rotary op has no attribute 'dtype'"),
])
def test_bad_attributes_are_one_line_errors(tmp_path, op, problem):
    from rooflab import workload
    f = tmp_path / "w.yaml"
    f.write_text("name: t\ntensors:\n  x: {shape: [4, 8], dtype: bf16}\n"
                 "  q: {shape: [1, 2, 4, 8], dtype: bf16}\n  w: {shape: [8, 8], dtype: int4}\n"
                 f"ops:\n  - {op}\n")
    with pytest.raises(RooflabError) as e:
        workload.load(str(f))
    msg = str(e.value)
    assert problem in msg and msg.startswith(f"{f}:7:") and "\n" not in msg
