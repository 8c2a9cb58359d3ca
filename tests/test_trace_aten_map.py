"""The ATen -> rooflab table (rooflab/trace/aten_map.py), op by op: each rule traced from a tiny
PyTorch function, checked for the kind, attributes, launches and shapes it emits."""

import math

import pytest

torch = pytest.importorskip("torch")

from rooflab import api  # noqa: E402
from rooflab.trace import trace_module  # noqa: E402
from rooflab.trace.aten_map import RULES  # noqa: E402

F = torch.nn.functional
bf16, f32, i64 = torch.bfloat16, torch.float32, torch.int64


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def t(*shape, dtype=bf16):
    return torch.empty(shape, dtype=dtype, device="meta")


def traced(fn, *xs):
    return trace_module(Fn(fn), xs)


def kinds(g):
    return [op.kind for op in g.ops]


# (ATen rule, function, inputs, the kinds it becomes (in order), checks on the first non-view op)
CASES = [
    ("view", lambda x: x.view(4, 8), (t(32),), ["reshape"], {"shape": [4, 8]}),
    ("_unsafe_view", lambda x: (x.transpose(0, 1) @ x).reshape(-1), (t(3, 3),),
     ["permute", "matmul", "reshape"], None),
    ("reshape", lambda x: x.reshape(2, 16), (t(32),), ["reshape"], None),
    ("unsqueeze", lambda x: x.unsqueeze(0), (t(4),), ["reshape"], {"shape": [1, 4]}),
    ("squeeze", lambda x: x.squeeze(0), (t(1, 4),), ["reshape"], {"shape": [4]}),
    ("alias", lambda x: torch.ops.aten.alias(x) * 2, (t(4),), ["scale"], None),
    ("detach", lambda x: x.detach() * 2, (t(4),), ["scale"], None),
    ("lift_fresh", lambda x: torch.ops.aten.lift_fresh(x) * 2, (t(4),), ["scale"], None),
    ("t", lambda x: x.t(), (t(2, 3),), ["permute"], {"dims": [1, 0]}),
    ("transpose", lambda x: x.transpose(0, 2), (t(2, 3, 4),), ["permute"], {"dims": [2, 1, 0]}),
    ("permute", lambda x: x.permute(1, 2, 0), (t(2, 3, 4),), ["permute"], {"dims": [1, 2, 0]}),
    ("expand", lambda x: x.expand(8, 4), (t(1, 4),), ["expand"], {"shape": [8, 4]}),
    ("slice", lambda x: x[:, 2:6], (t(4, 8),), ["slice"], {"axis": 1, "start": 2, "end": 6}),
    ("select", lambda x: x[:, 3], (t(4, 8),), ["slice", "reshape"], {"axis": 1, "start": 3}),
    ("split", lambda x: x.split(3, dim=1)[1] * 2, (t(4, 6),), ["split", "scale"],
     {"axis": 1, "sizes": [3, 3]}),
    ("split_with_sizes", lambda x: x.split([2, 4], dim=1)[1] * 2, (t(4, 6),), ["split", "scale"],
     {"sizes": [2, 4]}),
    ("unbind", lambda x: x.unbind(0)[0] * 2, (t(2, 3),), ["split", "reshape", "reshape", "scale"],
     {"sizes": [1, 1]}),
    ("empty", lambda x: torch.empty(3, device="meta").add_(x), (t(3, dtype=f32),),
     ["fill", "add"], {"fn": "empty"}),
    ("empty_like", lambda x: torch.empty_like(x).copy_(x), (t(3),), ["fill", "copy"], None),
    ("zeros", lambda x: torch.zeros(5, device="meta") + x, (t(5, dtype=f32),), ["fill", "add"],
     {"shape": [5], "dtype": "fp32", "fn": "zeros"}),
    ("ones", lambda x: torch.ones(5, device="meta") + x, (t(5, dtype=f32),), ["fill", "add"], None),
    ("full", lambda x: torch.full((5,), 2.0, device="meta") + x, (t(5, dtype=f32),),
     ["fill", "add"], None),
    ("zeros_like", lambda x: torch.zeros_like(x), (t(5),), ["fill"], {"dtype": "bf16"}),
    ("ones_like", lambda x: torch.ones_like(x), (t(5),), ["fill"], None),
    ("full_like", lambda x: torch.full_like(x, 3.0), (t(5),), ["fill"], None),
    ("new_zeros", lambda x: x.new_zeros(2, 2), (t(5),), ["fill"], {"shape": [2, 2]}),
    ("new_ones", lambda x: x.new_ones(2, 2), (t(5),), ["fill"], None),
    ("new_full", lambda x: x.new_full((2,), 1.0), (t(5),), ["fill"], None),
    ("scalar_tensor", lambda x: x + torch.scalar_tensor(1.0, device="meta"), (t(5, dtype=f32),),
     ["fill", "add"], {"shape": []}),
    ("arange", lambda x: x + torch.arange(5, device="meta"), (t(5, dtype=i64),),
     ["fill", "add"], {"dtype": "int64", "fn": "arange"}),
    ("fill", lambda x: x.clone().fill_(1.0), (t(5),), ["copy", "fill"], None),
    ("zero", lambda x: x.clone().zero_(), (t(5),), ["copy", "fill"], None),
    ("add", lambda x, y: x + y, (t(4, 8), t(8)), ["add"], {}),
    ("sub", lambda x, y: x - y, (t(4, 8), t(4, 8)), ["sub"], {}),
    ("mul", lambda x: x * 0.5, (t(4),), ["scale"], {"factor": 0.5}),
    ("div", lambda x: x / 4, (t(4),), ["scale"], {"factor": 0.25}),
    ("rsub", lambda x: 1 - x, (t(4),), ["elementwise"], {"fn": "rsub"}),
    ("maximum", lambda x, y: torch.maximum(x, y), (t(4), t(4)), ["maximum"], {}),
    ("minimum", lambda x, y: torch.minimum(x, y), (t(4), t(4)), ["minimum"], {}),
    ("neg", lambda x: -x, (t(4),), ["neg"], {}),
    ("rsqrt", lambda x: x.rsqrt(), (t(4),), ["rsqrt"], {}),
    ("sqrt", lambda x: x.sqrt(), (t(4),), ["sqrt"], {}),
    ("exp", lambda x: x.exp(), (t(4),), ["exp"], {}),
    ("tanh", lambda x: x.tanh(), (t(4),), ["tanh"], {}),
    ("sigmoid", lambda x: x.sigmoid(), (t(4),), ["sigmoid"], {}),
    ("silu", lambda x: F.silu(x), (t(4),), ["silu"], {}),
    ("relu", lambda x: F.relu(x), (t(4),), ["relu"], {}),
    ("abs", lambda x: x.abs(), (t(4),), ["abs"], {}),
    ("gelu", lambda x: F.gelu(x, approximate="tanh"), (t(4),), ["gelu"], {}),
    ("pow", lambda x: x.pow(2), (t(4),), ["square"], {}),
    ("_to_copy", lambda x: x.float(), (t(4),), ["cast"], {"dtype": "fp32"}),
    ("clone", lambda x: x.clone(), (t(4),), ["copy"], {}),
    ("copy", lambda x, y: x.clone().copy_(y), (t(4), t(4, dtype=f32)), ["copy", "copy"], None),
    ("_foreach_copy_", lambda a, b, x, y: (torch._foreach_copy_([a, b], [x, y]), a)[1],
     (t(4), t(2, 3), t(4), t(2, 3)), ["foreach_copy", "foreach_copy"], {}),
    ("cos", lambda x: x.cos(), (t(4),), ["elementwise"], {"fn": "cos"}),
    ("where", lambda c, x, y: torch.where(c, x, y), (t(4, dtype=torch.bool), t(4), t(4)),
     ["elementwise"], {"fn": "where"}),
    ("masked_fill", lambda x, m: x.masked_fill(m, 0.0), (t(2, 4), t(4, dtype=torch.bool)),
     ["elementwise"], {"fn": "masked_fill"}),
    ("ge", lambda x, y: x >= y, (t(4), t(4)), ["elementwise"], {"fn": "ge", "dtype": "bool"}),
    ("sum", lambda x: x.sum(-1), (t(4, 8),), ["sum"], {"axis": 1}),
    ("mean", lambda x: x.mean(-1, keepdim=True), (t(4, 8),), ["mean"], {"keepdim": True}),
    ("amax", lambda x: x.amax(0), (t(4, 8),), ["max"], {"axis": 0}),
    ("_softmax", lambda x: x.softmax(-1), (t(4, 8),), ["softmax"], {"axis": 1}),
    ("native_layer_norm", lambda x, w, b: F.layer_norm(x, (8,), w, b, 1e-5),
     (t(4, 8), t(8), t(8)), ["layernorm"], {"eps": 1e-5}),
    ("mm", lambda x, w: x @ w, (t(4, 8), t(8, 16)), ["matmul"], {}),
    ("bmm", lambda x, w: torch.bmm(x, w), (t(2, 4, 8), t(2, 8, 16)), ["matmul"], {}),
    ("addmm", lambda x, w, b: torch.addmm(b, x, w), (t(4, 8), t(8, 16), t(16)),
     ["matmul", "add"], {}),
    ("scaled_dot_product_attention",
     lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     (t(1, 4, 16, 8), t(1, 4, 16, 8), t(1, 4, 16, 8)), ["attention"], {"causal": True}),
    ("embedding", lambda ids, w: F.embedding(ids, w), (t(2, 3, dtype=i64), t(10, 4)),
     ["embedding"], {}),
    ("index_copy", lambda c, i, x: c.index_copy_(2, i, x),
     (t(1, 2, 8, 4), t(1, dtype=i64), t(1, 2, 1, 4)), ["index_copy"], {"axis": 2}),
    ("index", lambda x, i: x[i], (t(8, 4), t(3, dtype=i64)), ["index"], {}),
    ("index_put", lambda x, i, v: x.index_put_((i,), v), (t(8, 4), t(3, dtype=i64), t(3, 4)),
     ["index_put"], {"accumulate": False}),
    ("index_select", lambda x, i: x.index_select(0, i), (t(8, 4), t(3, dtype=i64)),
     ["index_select"], {"axis": 0}),
    ("gather", lambda x, i: x.gather(1, i), (t(4, 8), t(4, 2, dtype=i64)), ["gather"],
     {"axis": 1}),
    ("index_add", lambda x, i, v: x.index_add(0, i, v), (t(8, 4), t(3, dtype=i64), t(3, 4)),
     ["index_add"], {"axis": 0}),
    ("scatter", lambda x, i, v: x.scatter(1, i, v), (t(4, 8), t(4, 2, dtype=i64), t(4, 2)),
     ["scatter"], {"axis": 1, "reduce": "none"}),
    ("scatter_add", lambda x, i, v: x.scatter_add(1, i, v),
     (t(4, 8), t(4, 2, dtype=i64), t(4, 2)), ["scatter"], {"reduce": "add"}),
    ("topk", lambda x: x.topk(2, dim=-1)[1], (t(4, 8),), ["topk"], {"k": 2, "axis": 1}),
    ("sort", lambda x: x.sort(dim=-1)[0], (t(4, 8),), ["sort"], {"axis": 1}),
    ("cumsum", lambda x: x.cumsum(0), (t(8, dtype=i64),), ["cumsum"], {"axis": 0}),
    ("histc", lambda x: torch.histc(x, bins=8, min=0, max=7), (t(16, dtype=f32),),
     ["histogram"], {"bins": 8}),
    ("cat", lambda x, y: torch.cat([x, y], dim=-1), (t(4, 2), t(4, 3)), ["concat"],
     {"axis": 1}),
    ("rms_norm", lambda x, w: F.rms_norm(x, (8,), w, 1e-6), (t(4, 8), t(8)), ["rmsnorm"],
     {"eps": 1e-6}),
    ("_safe_softmax", lambda x: torch.ops.aten._safe_softmax(x, -1), (t(4, 8),), ["softmax"],
     {"axis": 1}),
    ("empty_strided", lambda x: torch.empty_strided((4,), (1,), device="meta").copy_(x),
     (t(4, dtype=f32),), ["fill", "copy"], None),
    ("new_empty", lambda x: x.new_empty(4).copy_(x), (t(4),), ["fill", "copy"], None),
    ("new_empty_strided", lambda x: x.new_empty_strided((4,), (1,)).copy_(x), (t(4),),
     ["fill", "copy"], None),
    ("_grouped_mm", lambda x, w, offs: torch._grouped_mm(x, w, offs=offs),
     (t(64, 32), t(4, 32, 16), t(4, dtype=torch.int32)), ["grouped_matmul"], {}),
]


# the generic elementwise rules: ATen name -> (function, inputs)
b4 = t(4, dtype=torch.bool)
GENERIC = {
    "sin": (lambda x: x.sin(), (t(4),)), "log": (lambda x: x.log(), (t(4),)),
    "log1p": (lambda x: x.log1p(), (t(4),)), "reciprocal": (lambda x: x.reciprocal(), (t(4),)),
    "erf": (lambda x: x.erf(), (t(4),)), "floor": (lambda x: x.floor(), (t(4),)),
    "ceil": (lambda x: x.ceil(), (t(4),)), "round": (lambda x: x.round(), (t(4),)),
    "sign": (lambda x: x.sign(), (t(4),)), "clamp": (lambda x: x.clamp(0, 1), (t(4),)),
    "clamp_min": (lambda x: x.clamp_min(0), (t(4),)),
    "clamp_max": (lambda x: x.clamp_max(1), (t(4),)),
    "eq": (lambda x, y: x == y, (t(4), t(4))), "ne": (lambda x, y: x != y, (t(4), t(4))),
    "lt": (lambda x, y: x < y, (t(4), t(4))), "le": (lambda x, y: x <= y, (t(4), t(4))),
    "gt": (lambda x, y: x > y, (t(4), t(4))),
    "logical_and": (lambda x, y: x.logical_and(y), (b4, b4)),
    "logical_or": (lambda x, y: x.logical_or(y), (b4, b4)),
    "logical_not": (lambda x: x.logical_not(), (b4,)),
    "bitwise_and": (lambda x, y: x & y, (b4, b4)), "bitwise_or": (lambda x, y: x | y, (b4, b4)),
    "bitwise_xor": (lambda x, y: x ^ y, (b4, b4)), "bitwise_not": (lambda x: ~x, (b4,)),
    "floor_divide": (lambda x, y: x // y, (t(4, dtype=i64), t(4, dtype=i64))),
    "remainder": (lambda x, y: x % y, (t(4, dtype=i64), t(4, dtype=i64))),
    "fmod": (lambda x, y: x.fmod(y), (t(4), t(4))), "isnan": (lambda x: x.isnan(), (t(4),)),
    "isinf": (lambda x: x.isinf(), (t(4),)), "tril": (lambda x: x.tril(), (t(4, 4),)),
    "triu": (lambda x: x.triu(1), (t(4, 4),)), "exp2": (lambda x: x.exp2(), (t(4),)),
    "softplus": (lambda x: F.softplus(x), (t(4),)),
    "lerp": (lambda x, y: x.lerp(y, 0.5), (t(4), t(4))),
    "addcmul": (lambda x, y, z: x.addcmul(y, z), (t(4), t(4), t(4))),
    "addcdiv": (lambda x, y, z: x.addcdiv(y, z), (t(4), t(4), t(4))),
    "nan_to_num": (lambda x: x.nan_to_num(), (t(4),)),
}


@pytest.mark.parametrize("name", sorted(GENERIC))
def test_generic_elementwise_rule(name):
    fn, xs = GENERIC[name]
    g = traced(fn, *xs)
    assert kinds(g) == ["elementwise"], [(op.kind, op.attrs) for op in g.ops]
    assert g.ops[0].attrs["fn"] == name and g.ops[0].launches == 1
    api.predict_graph(g, api.load_hardware("h200"))


# measured on the H200 (reports/hf_eager/h200-2026-12-03.json): these launch two kernels each
TWO_KERNELS = {"embedding": 2, "topk": 2, "sort": 2, "cumsum": 2, "histc": 2, "_grouped_mm": 2}


@pytest.mark.parametrize("m,n,k,launches", [
    # the decode GEMMs of the zoo, and how many kernels cuBLAS ran for each on the H200
    (4, 4096, 4096, 2), (4, 1024, 4096, 2), (4, 14336, 4096, 1), (4, 4096, 14336, 2),
    (4, 128256, 4096, 1), (4, 8, 4096, 2),                       # Llama-3-8B / Mixtral router
    (1, 2048, 2048, 1), (1, 2048, 8192, 2), (1, 8192, 2048, 1),  # Llama-3.2-1B
    (16, 896, 896, 1), (16, 896, 4864, 2),                       # Qwen2.5-0.5B
    (16, 1152, 6912, 2), (16, 1024, 1152, 1),                    # Gemma-3-1B
    (64, 4096, 4096, 1), (64, 1024, 4096, 2), (64, 4096, 14336, 2), (64, 3584, 3584, 1),
    (512, 4096, 4096, 1),                                        # prefill: never split
])
def test_gemm_launches_follow_what_cublas_ran(m, n, k, launches):
    from rooflab.trace.aten_map import gemm_launches
    assert gemm_launches(m, n, k) == launches


def test_sdpa_with_a_boolean_mask_launches_four_kernels():
    g = traced(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
               t(2, 4, 1, 8), t(2, 4, 64, 8), t(2, 4, 64, 8), t(2, 1, 1, 64, dtype=torch.bool))
    assert [op.launches for op in g.ops] == [4]


def test_copies_into_slices_of_a_buffer_write_the_buffer():
    def fill_halves(a, b):
        buf = a.new_empty(2, 8)
        buf[:, :4].copy_(a)
        buf[:, 4:].copy_(b)
        return buf * 2
    g = traced(fill_halves, t(2, 4), t(2, 4))
    assert kinds(g) == ["fill", "slice", "copy_into", "slice", "copy_into", "scale"]
    alloc, _, first, _, second, product = g.ops
    # an allocation: no kernel, no bytes; the copies write into the buffer, which the
    # product reads; only the product is an output (the copies' writes always count)
    assert alloc.launches == 0 and alloc.attrs["fn"] == "empty"
    assert product.inputs[0] == alloc.outputs[0]
    assert g.outputs == {product.outputs[0]}
    hw = api.load_hardware("h200")
    p = api.predict_graph(g, hw, "unfused", "graph")
    # 2 x 4 bf16 = 16 B read and written by each copy; the product reads 32 B and writes 32 B
    assert p.totals.hbm_bytes == 2 * (16 + 16) + 32 + 32
    assert p.totals.kernels == 3


def test_a_foreach_copy_over_two_dtypes_takes_copy_for_each_pair():
    # ATen's fast route needs one dtype throughout; else it runs copy_ pair by pair. Either
    # way the inputs written are recorded (cudagraph trees skip a graph that writes one)
    g = traced(lambda a, b, x, y: (torch._foreach_copy_([a, b], [x, y]), b)[1],
               t(4), t(4, dtype=i64), t(4), t(4, dtype=i64))
    assert kinds(g) == ["copy", "copy"]
    assert g.written_inputs == {"input0", "input1"}
    assert traced(lambda x: x + 1, t(4)).written_inputs == frozenset()


def test_a_large_foreach_copy_is_traced_with_its_launches():
    # 64 Mi elements: 1024 chunks of 64 Ki, 320 blocks a launch (kernel_families)
    g = traced(lambda a, x: (torch._foreach_copy_([a], [x]), a)[1], t(2 ** 26), t(2 ** 26))
    assert [op.launches for op in g.ops if op.kind == "foreach_copy"] == [4]


def test_every_rule_has_a_case():
    covered = {c[0] for c in CASES} | set(GENERIC)
    assert set(RULES) - covered == set()


@pytest.mark.parametrize("rule,fn,xs,expected,attrs", CASES, ids=[c[0] for c in CASES])
def test_rule(rule, fn, xs, expected, attrs):
    g = traced(fn, *xs)
    assert kinds(g) == expected, [(op.name, op.kind, op.attrs.get("reason")) for op in g.ops]
    assert not g.notes, g.notes
    main = g.ops[0]           # the attributes checked are the first op's
    for key, value in (attrs or {}).items():
        assert main.attrs.get(key) == value, (key, main.attrs)
    # views and allocations launch nothing; every other op of these rules launches one
    # kernel, but the bias add of addmm, which runs in the GEMM's epilogue, and the ops
    # measured to launch two
    for op in g.ops:
        views = ("reshape", "permute", "expand", "slice", "split")
        nothing = op.kind in views or (rule, op.kind) == ("addmm", "add") or \
            op.attrs.get("fn") == "empty"
        expected_launches = 0 if nothing else TWO_KERNELS.get(rule, 1)
        assert op.launches == expected_launches, op
    # and the graph predicts
    api.predict_graph(g, api.load_hardware("h200"))


def test_sdpa_with_a_mask_is_one_attention_op_reading_the_mask():
    g = traced(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
               t(2, 4, 1, 8), t(2, 4, 64, 8), t(2, 4, 64, 8), t(2, 1, 1, 64, dtype=torch.bool))
    (op,) = g.ops
    assert op.kind == "attention" and len(op.inputs) == 4 and op.attrs["causal"] is False
    k = api.predict_graph(g, api.load_hardware("h200")).kernels[0]
    # q, k, v, the 128-byte mask read; the output written: bf16 = 2 bytes
    assert k.hbm_read_bytes == 2 * (2 * 4 * 1 * 8 + 2 * 2 * 4 * 64 * 8) + 2 * 64
    assert k.hbm_write_bytes == 2 * 2 * 4 * 1 * 8


def test_unmapped_op_becomes_opaque_with_flops_and_bytes_and_a_note():
    # aten.cumprod has no rule: an opaque op named after it, bytes of its tensors, a note
    g = traced(lambda x: x.cumprod(-1), t(4, 8, dtype=f32))
    (op,) = g.ops
    assert op.kind == "opaque" and op.name == "cumprod"
    assert op.attrs["bytes"] == 2 * 4 * 8 * 4        # read and write 32 fp32 elements
    assert op.attrs["flops"] == 0                     # torch's flop counter does not know it
    assert "aten.cumprod.default" in op.attrs["reason"]
    assert g.notes == ("1 × aten.cumprod.default traced as opaque (no rooflab kind): priced by "
                       "its tensors' bytes and torch's flop count",)


def test_opaque_takes_torchs_flop_count_where_it_has_one():
    # a conv has no rooflab kind; torch's flop counter gives 2*N*Cout*Hout*Wout*Cin*kh*kw
    g = traced(lambda x, w: F.conv2d(x, w), t(1, 3, 8, 8), t(4, 3, 3, 3))
    (op,) = [o for o in g.ops if o.kind == "opaque"]
    assert op.attrs["flops"] == 2 * 1 * 4 * 6 * 6 * 3 * 3 * 3
    assert op.attrs["tensor_dtype"] == "bf16"


def test_in_place_ops_make_new_versions_and_data_flows_through_them():
    def fn(x, y):
        x = x.clone()
        x.add_(y)          # x's new version
        return x * 2       # reads the new version
    g = traced(fn, t(4), t(4))
    clone, add, scale = g.ops
    assert add.kind == "add" and add.inputs[0] == clone.outputs[0]
    assert scale.inputs == add.outputs and add.outputs != clone.outputs


def test_ops_are_named_by_module_path_and_blocks_by_module_list_item():
    layers = torch.nn.Sequential(*[torch.nn.Linear(8, 8, bias=False) for _ in range(3)])
    g = trace_module(layers, (t(2, 8, dtype=f32),))
    mms = [op for op in g.ops if op.kind == "matmul"]
    assert [op.name for op in mms] == ["0.mm", "1.mm", "2.mm"]
    model = torch.nn.Module()
    model.layers = layers
    model.forward = lambda x: model.layers(x)
    g = trace_module(model, (t(2, 8, dtype=f32),))
    mms = [op for op in g.ops if op.kind == "matmul"]
    assert [op.name for op in mms] == ["layers.0.mm", "layers.1.mm", "layers.2.mm"]
    assert [op.block for op in trace_module(layers, (t(2, 8, dtype=f32),)).ops] == [""] * 6
    assert [op.block for op in mms] == ["layers.0", "layers.1", "layers.2"]


@pytest.mark.parametrize("fn, shape, expected, axis, out", [
    # a whole tensor: merged into one axis by a free reshape, then reduced (ATen's reduce_all)
    (lambda x: x.sum(), (4, 8), ["reshape", "sum"], 0, ()),
    # adjacent axes 1 and 2 of [2, 3, 4]: merged to [2, 12], reduced along 12
    (lambda x: x.mean((1, 2)), (2, 3, 4), ["reshape", "mean"], 1, (2,)),
    # keepdim: ATen's [2, 1, 1] is the merged result [2] reshaped back
    (lambda x: x.mean((1, 2), keepdim=True), (2, 3, 4), ["reshape", "mean", "reshape"], 1,
     (2, 1, 1)),
])
def test_reductions_over_adjacent_axes_merge_them(fn, shape, expected, axis, out):
    g = traced(fn, t(*shape, dtype=f32))
    assert kinds(g) == expected
    (red,) = [op for op in g.ops if op.kind in ("sum", "mean")]
    assert red.attrs["axis"] == axis and red.attrs["keepdim"] is False
    assert g.tensors[g.ops[-1].outputs[0]].shape == out
    # read once, written once: 4 bytes per fp32 element in, 4 per result out
    pred = api.predict_graph(g, api.load_hardware("h200"), "unfused", "graph")
    assert pred.totals.hbm_bytes == 4 * (math.prod(shape) + math.prod(out))


def test_a_reduction_over_axes_that_are_not_adjacent_is_opaque():
    g = traced(lambda x: x.sum((0, 2)), t(2, 3, 4, dtype=f32))
    (op,) = g.ops
    assert op.kind == "opaque" and "axes [0, 2], which are not adjacent" in op.attrs["reason"]


def test_the_ops_of_one_call_are_not_taken_for_a_module():
    # addmm with a bias becomes a GEMM and its epilogue add, named <call>_<kind>: no module
    # "addmm" for the eager host model to charge (a 1 s module call would show)
    from dataclasses import replace
    g = traced(lambda b, x, w: torch.addmm(b, x, w), t(16), t(4, 8), t(8, 16))
    assert [op.name for op in g.ops] == ["addmm_matmul", "addmm_add"]
    hw = replace(api.load_hardware("h200"), module_call_s=1.0)
    assert api.predict_graph(g, hw, "unfused", "eager").totals.time_s < 1e-3


def test_an_input_written_through_a_view_is_a_written_input():
    # a slice of a KV cache written in place is a write of the cache; a parameter written in
    # place is not an input
    assert traced(lambda c, y: (c[:, :2].copy_(y), c)[1], t(4, 8), t(4, 2)).written_inputs \
        == {"input0"}
    assert traced(lambda c: c.view(-1).add_(1), t(4, 8)).written_inputs == {"input"}

    class Bump(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.zeros(4))

        def forward(self, x):
            self.count.add_(1)
            return x + self.count
    assert trace_module(Bump(), (t(4),)).written_inputs == frozenset()


def test_the_forwards_tensor_arguments_are_its_call_inputs():
    # what reduce-overhead copies into static buffers: the arguments, not parameters or buffers
    lin = torch.nn.Linear(8, 4)
    assert trace_module(lin, (t(2, 8),)).call_inputs == {"input"}
    g = trace_module(lin, (t(2, 8),), name="lin", input_names=["x"])
    assert g.call_inputs == {"x"} and "weight" in g.tensors and "bias" in g.tensors


def test_a_foreach_copy_with_transposed_source_takes_copy():
    # ATen's fast route needs each pair laid out alike: a transposed source takes copy_
    g = traced(lambda a, x: (torch._foreach_copy_([a], [x.t()]), a)[1], t(4, 8), t(8, 4))
    assert [k for k in kinds(g) if k != "permute"] == ["copy"]
