"""Tracing a user's own module: `rooflab trace FILE.py:FACTORY`, the YAML round trip, and the
one-line errors for what a user can get wrong."""

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from typer.testing import CliRunner  # noqa: E402

from rooflab import api, workload  # noqa: E402
from rooflab.cli import app  # noqa: E402
from rooflab.trace import source, to_yaml, trace_module  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "transformer_block.py"
runner = CliRunner()


def _totals(g, schedule, launch):
    return api.predict_graph(g, api.load_hardware("h200"), schedule, launch).totals


def test_mlp_traces_to_the_kernels_eager_pytorch_launches():
    # Linear(1024->4096, bias) on [16, 1024]: addmm (one cuBLASLt kernel with the bias in its
    # epilogue), GELU, addmm; the second GEMM (M 16, K 4096, N 1024) splits K: a GEMM and its
    # reduction. 4 kernels; the weight transposes are views, the bias adds ride in the GEMMs
    g = source.load(f"py:{EXAMPLE}:build_mlp", {}, inputs=("x=[16,1024]:bf16",))
    assert [(op.kind, op.launches) for op in g.ops if op.launches] == \
        [("matmul", 1), ("gelu", 1), ("matmul", 2)]
    t = _totals(g, "unfused", "eager")
    assert t.kernels == 4
    # FLOPs: 2*16*1024*4096 per GEMM, both GEMMs, on tensor cores
    assert t.tensor_flops == 2 * (2 * 16 * 1024 * 4096)


def test_transformer_block_by_hand():
    g = source.load(f"py:{EXAMPLE}:build", {}, inputs=("x=[8,512,1024]:bf16",))
    mm = [op for op in g.ops if op.kind == "matmul"]
    assert [op.name for op in mm] == ["attn.qkv.mm", "attn.out.mm", "mlp.gate.mm", "mlp.up.mm",
                                      "mlp.down.mm"]
    att = [op for op in g.ops if op.kind == "attention"]
    assert len(att) == 1 and att[0].attrs["causal"] is True
    # tensor FLOPs: GEMMs 2*T*(1024*3072 + 1024*1024 + 3*1024*2816) with T = 8*512 tokens, plus
    # causal attention QK^T and PV over 16 heads of 64 on the S*(S+1)/2 query-key pairs the
    # mask keeps (rooflab's attention kind counts those): 2 * 2*B*H*D*pairs
    T = 8 * 512
    gemm = 2 * T * (1024 * 3072 + 1024 * 1024 + 3 * 1024 * 2816)
    attn = 2 * (2 * 8 * 16 * 64 * (512 * 513 // 2))
    assert _totals(g, "unfused", "eager").tensor_flops == gemm + attn


@pytest.mark.parametrize("factory,inp", [("build_mlp", "x=[16,1024]:bf16"),
                                         ("build", "x=[8,512,1024]:bf16")])
def test_yaml_round_trip_predicts_exactly_the_same(tmp_path, factory, inp):
    out = tmp_path / "m.yaml"
    r = runner.invoke(app, ["trace", f"{EXAMPLE}:{factory}", "--input", inp, "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "wrote" in r.output and out.read_text().startswith("# Traced by rooflab")
    traced = source.load(f"py:{EXAMPLE}:{factory}", {}, inputs=(inp,))
    loaded = workload.load(str(out))
    for schedule in ("unfused", "fused"):
        for launch in ("eager", "graph"):
            assert _totals(loaded, schedule, launch) == _totals(traced, schedule, launch)


def test_identical_layers_fold_into_one_repeat_block(tmp_path):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList(
                torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU()) for _ in range(6))

        def forward(self, x):
            for layer in self.layers:
                x = x + layer(x)
            return x
    g = trace_module(Net(), (torch.empty(4, 64),))
    doc = to_yaml.to_workload(g)
    (block,) = [item for item in doc["ops"] if "repeat" in item]
    assert block["repeat"] == 6 and block["name"] == "layers"
    assert set(block["tensors"]) == {"0.weight", "0.bias"}
    assert len(block["carry"]) == 1
    f = tmp_path / "net.yaml"
    f.write_text(to_yaml.dump(g))
    loaded = workload.load(str(f))
    assert len(loaded.ops) == len(g.ops)
    assert _totals(loaded, "fused", "graph") == _totals(g, "fused", "graph")


def _err(args):
    r = runner.invoke(app, args)
    lines = [ln for ln in r.output.strip().splitlines() if ln]
    return r.exit_code, lines


@pytest.mark.parametrize("args,expected", [
    (["trace", f"{EXAMPLE}:nosuch", "--input", "x=[4,1024]:bf16"], "no factory 'nosuch'"),
    (["trace", "py:missing.py:build", "--input", "x=[4]:bf16"], "missing.py: no such file"),
    (["trace", f"{EXAMPLE}:build_mlp", "--input", "x=4,1024"], "expected name=[d0,d1,...]"),
    (["trace", f"{EXAMPLE}:build_mlp", "--input", "x=[4,1024]:bf17"], "unknown dtype 'bf17'"),
    (["trace", f"{EXAMPLE}:build_mlp", "--input", "x=[0,1024]:bf16"], "must be positive"),
    (["trace", f"{EXAMPLE}:build_mlp"], "give the forward's inputs with --input"),
    (["trace", f"{EXAMPLE}:build_mlp", "--input", "x=[4,1000]:bf16"], "failed on meta tensors"),
    (["predict", "py:" + str(EXAMPLE), "--input", "x=[4]:bf16"], "expected py:FILE.py:FACTORY"),
    (["predict", "workloads/rmsnorm.yaml", "--input", "x=[4]:bf16"], "--input is for py:"),
])
def test_bad_input_is_one_line_exit_2(args, expected):
    code, lines = _err(args)
    assert code == 2 and len(lines) == 1 and expected in lines[0], lines


def test_a_module_with_data_dependent_control_flow_fails_in_one_line(tmp_path):
    f = tmp_path / "dyn.py"
    f.write_text("import torch\n"
                 "class M(torch.nn.Module):\n"
                 "    def forward(self, x):\n"
                 "        return x[x > 0] if x.sum() > 0 else x\n"
                 "def build():\n    return M()\n")
    code, lines = _err(["trace", f"{f}:build", "--input", "x=[8]:fp32"])
    assert code == 2 and len(lines) == 1
    assert "failed on meta tensors" in lines[0] and str(f) in lines[0]


@pytest.mark.parametrize("name,body,expected", [
    # a complex RoPE: rooflab has no complex dtype, so the trace says which op made one
    ("cplx.py", "        c = torch.view_as_complex(x.reshape(4, 32, 2))\n"
                "        return torch.view_as_real(c * c)\n",
     "a torch.complex64 tensor (aten.view_as_complex.default"),
    # an exception without a message still says what it was
    ("noisy.py", "        raise ValueError()\n", "ValueError: (no message)"),
    # a py: file that is not a .py file
    ("model.txt", "        return x\n", "not a Python file"),
])
def test_untraceable_modules_fail_in_one_line(tmp_path, name, body, expected):
    f = tmp_path / name
    f.write_text("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                 + body + "def build():\n    return M()\n")
    code, lines = _err(["trace", f"py:{f}:build", "--input", "x=[4,64]:fp32"])
    assert code == 2 and len(lines) == 1 and expected in lines[0], lines
