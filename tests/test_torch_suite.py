"""The torch-backend suite: its cases trace to the family they claim, run on the CPU, and the
runner's JSON has its schema. No GPU."""

import collections
import json
import re

import pytest

torch = pytest.importorskip("torch")

from rooflab import schedule  # noqa: E402
from rooflab.cost import op_families  # noqa: E402
from rooflab.kernel_families import FAMILIES, GEMM_FAMILY  # noqa: E402
from rooflab.trace import trace_module  # noqa: E402
from rooflab.validate import torch_programs, torch_run, torch_suite  # noqa: E402
from rooflab.validate.torch_suite import CASES, EXTRA_FAMILIES, SPLITS  # noqa: E402

_CPU_MAX_BYTES = 16 * 2**20      # run on the CPU only cases this small (inputs + weights)


def _traced(case):
    graph = trace_module(case.build(), case.example_inputs())
    return graph, schedule.build(graph, "unfused").kernels


def _family(graph, op):
    return op_families(graph)[graph.ops.index(op)]


def test_suite_size_families_and_splits():
    assert len(CASES) >= 150
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", i) for i in ids)
    # the suite's GEMM cases are its families gemm and bmm
    families = set(FAMILIES) - {GEMM_FAMILY} | set(EXTRA_FAMILIES)
    assert {c.family for c in CASES} == families
    count = collections.Counter(c.family for c in CASES)
    assert min(count.values()) >= 6, count
    # the new sizes between a variant's are in both splits, most in calibration
    between = collections.Counter(c.split for c in CASES if c.between)
    assert between["calibration"] >= 50 and between["validation"] >= 3
    by_split = collections.Counter((c.family, c.split) for c in CASES)
    assert all(by_split[f, s] >= 2 for f in families for s in SPLITS), by_split
    # compile is budgeted (a lease's calibration and torch run share one device call of at most
    # 600 s; each compiled case costs its compile): 30-50 cases, every step case among them
    assert 30 <= sum(c.compile for c in CASES) <= 50
    assert all(c.compile for c in CASES if c.family == "step")


def test_splits_alternate_and_span_the_size_range():
    # within a variant, sizes grow and the splits alternate, so neither split holds only the
    # small or only the large sizes
    # (a variant whose sizes ATen runs with different kernels spans their families)
    base = {"softmax_warp": "softmax", "softmax_wide_row": "softmax",
            "softmax_long_row": "softmax", "embedding_small_index": "embedding"}
    variants = collections.defaultdict(list)
    for c in CASES:
        if not c.between:
            variants[base.get(c.family, c.family), c.variant].append(c)
    for key, cases in variants.items():
        assert [c.split for c in cases] == [SPLITS[i % 2] for i in range(len(cases))], key
        sizes = [c.input_bytes + c.param_bytes() for c in cases]
        assert sizes == sorted(sizes), key
    # a kernel ATen picks by shape runs only over its shapes' range (few embedding ids read a
    # 1 GB table whatever their count)
    by_shape = {"softmax_warp", "softmax_wide_row", "softmax_long_row", "embedding_small_index"}
    for fam in {c.family for c in CASES} - by_shape:
        for split in SPLITS:
            # each split spans at least 1.5 decades of bytes (inputs + weights)
            sizes = [c.input_bytes + c.param_bytes() for c in CASES
                     if c.family == fam and c.split == split]
            assert max(sizes) / min(sizes) >= 30, (fam, split)


def test_sizes_run_from_launch_bound_to_a_gigabyte_and_compute_bound():
    sizes = {c.id: c.input_bytes for c in CASES}
    assert sizes["add_2K_bf16"] == 2 * 4096                       # 4 KB operands
    assert sizes["sum_all_256M_fp32"] == 2**30                   # a 1 GiB reduction
    assert any(c.id == "mm_8192x8192x8192_bf16" for c in CASES)
    assert any(c.id == "mm_4096x4096x4096_bf16" for c in CASES)
    # decode GEMV-like GEMMs (M 1..16) and small-N long-K ones are present
    gemms = [c for c in CASES if c.family == "gemm"]
    assert sum(c.inputs[0].shape[0] <= 16 for c in gemms if c.variant == "linear_decode") >= 6
    assert any(c.variant == "small_n_long_k" and c.inputs[1].shape[1] <= 16
               and c.inputs[0].shape[1] >= 65536 for c in gemms)


@pytest.fixture(scope="module")
def traced():
    return {c.id: _traced(c) for c in CASES}


def test_every_case_fits_in_8_gb(traced):
    for c in CASES:
        graph, _ = traced[c.id]
        assert sum(t.nbytes for t in graph.tensors.values()) < 8 * 2**30, c.id


@pytest.mark.parametrize("case", [c for c in CASES if c.single_kernel], ids=lambda c: c.id)
def test_single_kernel_case_is_its_family(case, traced):
    graph, kernels = traced[case.id]
    assert len(kernels) == 1, [k.name for k in kernels]
    op = graph.ops[kernels[0].ops[0]]
    if case.family in FAMILIES:
        assert _family(graph, op) == case.family
    elif case.family in ("gemm", "bmm"):
        assert op.kind == "matmul" and _family(graph, op) == (
            GEMM_FAMILY if graph.tensors[op.inputs[0]].dtype.name == "bf16" else None)
        a = graph.tensors[op.inputs[0]]
        assert (len(a.shape) == 3) == (case.family == "bmm")
    else:
        assert case.family == "sdpa" and op.kind == "attention"


def test_step_cases_are_several_kernels_of_known_families(traced):
    kernels = {c.id: traced[c.id][1] for c in CASES if c.family == "step"}
    assert len(kernels["mlp_t16_d4096_f14336_bf16"]) == 5          # gate, up, silu, mul, down
    assert len(kernels["rmsnorm_linear_t128_d4096_n6144_bf16"]) == 2
    assert len(kernels["pointwise_chain5_1M_bf16"]) == 5
    graph, ks = traced["decoder_layer_b1_s512_d2048_bf16"]
    kinds = collections.Counter(graph.ops[k.ops[0]].kind for k in ks)
    assert kinds["matmul"] == 7 and kinds["attention"] == 1 and kinds["rmsnorm"] == 2
    assert len(ks) >= 20


def _small(case):
    return case.input_bytes + case.param_bytes() < _CPU_MAX_BYTES


def test_every_family_has_cases_small_enough_for_the_cpu():
    small = collections.Counter(c.family for c in CASES if _small(c))
    # few embedding ids gather from the 1 GB Llama-3 table: that family runs on the GPU only
    assert set(small) == {c.family for c in CASES} - {"embedding_small_index"}
    assert sum(small.values()) >= 60


@pytest.mark.parametrize("case", [c for c in CASES if _small(c)], ids=lambda c: c.id)
def test_small_case_runs_on_the_cpu(case):
    mod = case.build("cpu")
    inputs = case.make_inputs("cpu")
    for spec, t in zip(case.inputs, inputs):
        assert tuple(t.shape) == spec.shape and t.dtype == torch_programs.torch_dtype(spec.dtype)
        if spec.fill == "index":
            assert 0 <= int(t.min()) and int(t.max()) < spec.high
    with torch.no_grad():
        out = mod(*inputs)
    assert isinstance(out, torch.Tensor) and out.numel() > 0
    assert torch.isfinite(out.float()).all()
    # the traced graph's output shape is what eager produced
    graph = trace_module(case.build(), case.example_inputs())
    shapes = [graph.tensors[t].shape for t in graph.outputs]
    assert tuple(out.shape) in shapes or (tuple(out.shape) == () and (1,) in shapes or
                                          () in shapes)


def test_select_by_regex_and_split():
    got = torch_suite.select(r"^softmax_", "validation")
    assert got and all(c.family.startswith("softmax") and c.split == "validation" for c in got)
    assert {c.family for c in got} == {"softmax", "softmax_warp", "softmax_wide_row",
                                       "softmax_long_row"}
    assert len(torch_suite.select()) == len(CASES)


def test_per_call_kernels_splits_events_into_calls():
    events = [("a", 0, 2.0), ("b", 3, 4.0), ("a", 10, 4.0), ("b", 13, 6.0)]
    assert torch_run.per_call_kernels(events[::-1], 2) == [{"name": "a", "us": 3.0},
                                                           {"name": "b", "us": 5.0}]
    assert torch_run.per_call_kernels(events[:3], 2) is None           # uneven
    assert torch_run.per_call_kernels([("a", 0, 1), ("b", 1, 1), ("b", 2, 1), ("a", 3, 1)],
                                      2) is None                       # different order


def test_cpu_run_gives_the_schema(tmp_path, monkeypatch):
    cases = [c for c in CASES if c.id in ("add_2K_bf16", "softmax_1x2048_bf16",
                                          "mm_64x64x64_bf16")]
    assert len(cases) == 3
    seen = []
    monkeypatch.setenv("ROOFLAB_GIT_SHA", "ab" * 20)
    result = torch_run.run(cases, device="cpu", budget_s=60, command="pytest",
                           on_case=lambda e, r: seen.append(e["id"]))
    text = json.dumps(result)                       # JSON-serializable as written
    result = json.loads(text)
    assert result["schema"] == "rooflab.torch-run/1"
    assert result["l2_flush"] is False
    prov = result["provenance"]
    assert prov["torch"] == torch.__version__ and prov["command"] == "pytest"
    assert {"gpu", "triton", "cuda", "driver", "hostname", "date_utc"} <= set(prov)
    assert prov["git_sha"] == "ab" * 20         # the commit measured, $ROOFLAB_GIT_SHA first
    host = result["host"]
    assert host["tiny_op_dispatch_us"] > 0 and host["view_dispatch_us"] > 0
    assert host["graph_launch_us"] is None and host["compiled_call_us"] is None
    assert seen == [c.id for c in cases] and result["cases_run"] == 3
    for entry, case in zip(result["cases"], cases):
        assert entry["id"] == case.id and entry["family"] == case.family
        assert entry["eager_us"] > 0 and entry["calls"] >= 3 and "error" not in entry
        assert "graph_us" not in entry and "kernels" not in entry     # GPU-only figures


def test_cpu_run_records_errors_and_stops_at_the_budget():
    bad = torch_suite.Case("broken_case", "elementwise", "calibration",
                           torch_programs.program(lambda x: x.view(3, -1), "Broken"),
                           (torch_suite.Input("x", (1024,)),))
    ok = next(c for c in CASES if c.id == "add_2K_bf16")
    result = torch_run.run([bad, ok], device="cpu", budget_s=60, command="")
    first, second = result["cases"]
    assert first["error"].startswith("RuntimeError") and "eager_us" not in first
    assert second["eager_us"] > 0
    result = torch_run.run([ok, ok], device="cpu", budget_s=0, command="")
    assert [c.get("skipped") for c in result["cases"]] == ["budget", "budget"]
    assert result["cases_run"] == 0
