"""Property tests over random valid graphs (hypothesis): fusion never adds HBM bytes or
launches, never changes FLOPs, and predictions never get slower on a faster GPU."""

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rooflab import api, hardware, workload

POLICIES = ["unfused", "epilogue", "fused"]
H200 = hardware.load("h200")


@st.composite
def graphs(draw):
    rows = draw(st.sampled_from([1, 7, 64, 1024]))
    cols = draw(st.sampled_from([8, 256, 4096, 70000]))
    tensors = {"x0": {"shape": [rows, cols], "dtype": "bf16"},
               "bias": {"shape": [cols], "dtype": "bf16"},
               "w": {"shape": [cols, cols], "dtype": "bf16"}}
    live = ["x0"]
    ops = []
    for i in range(draw(st.integers(1, 12))):
        out = f"t{i}"
        a = draw(st.sampled_from(live))
        b = draw(st.sampled_from(live))
        choice = draw(st.sampled_from(["relu", "gelu", "add", "mul", "bias", "softmax",
                                       "rmsnorm", "matmul", "all_reduce", "opaque", "sum_mul",
                                       "cast", "data_dep"]))
        if choice in ("relu", "gelu"):
            ops.append({"kind": choice, "inputs": [a], "outputs": [out]})
        elif choice in ("add", "mul"):
            ops.append({"kind": choice, "inputs": [a, b], "outputs": [out]})
        elif choice == "bias":
            ops.append({"kind": "add", "inputs": [a, "bias"], "outputs": [out]})
        elif choice == "softmax":
            ops.append({"kind": "softmax", "inputs": [a], "outputs": [out]})
        elif choice == "rmsnorm":
            ops.append({"kind": "rmsnorm", "inputs": [a, "bias"], "outputs": [out]})
        elif choice == "matmul":
            ops.append({"kind": "matmul", "inputs": [a, "w"], "outputs": [out]})
        elif choice == "all_reduce":
            ops.append({"kind": "all_reduce", "inputs": [a], "outputs": [out], "world_size": 4})
        elif choice == "opaque":
            tensors[out] = {"shape": [rows, cols], "dtype": "bf16"}
            ops.append({"kind": "opaque", "inputs": [a], "outputs": [out], "flops": 1000,
                        "bytes": 4 * rows * cols})
        elif choice == "sum_mul":
            ops.append({"kind": "sum", "inputs": [a], "outputs": [out + "s"], "keepdim": True})
            ops.append({"kind": "mul", "inputs": [a, out + "s"], "outputs": [out]})
        elif choice == "cast":
            ops.append({"kind": "cast", "inputs": [a], "outputs": [out + "c"], "dtype": "fp32"})
            ops.append({"kind": "cast", "inputs": [out + "c"], "outputs": [out], "dtype": "bf16"})
        else:
            ops.append({"kind": "exp", "inputs": [a], "outputs": [out], "data_dependent": True})
        live.append(out)
    return workload.load_dict({"name": "random", "tensors": tensors, "ops": ops})


def _faster(hw, bw=1.0, peak=1.0):
    return replace(hw, hbm_bytes_per_s=hw.hbm_bytes_per_s * bw,
                   tensor_flops_per_s={k: v * peak for k, v in hw.tensor_flops_per_s.items()},
                   vector_flops_per_s={k: v * peak for k, v in hw.vector_flops_per_s.items()})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.sampled_from(["eager", "graph"]))
def test_fusion_never_adds_bytes_or_launches_and_keeps_flops(g, launch):
    base = api.predict_graph(g, H200, "unfused", launch).totals
    for policy in POLICIES[1:]:
        t = api.predict_graph(g, H200, policy, launch).totals
        assert t.hbm_bytes <= base.hbm_bytes, policy
        assert t.kernels <= base.kernels, policy
        assert (t.tensor_flops, t.vector_flops) == (base.tensor_flops, base.vector_flops)
        assert t.link_bytes == base.link_bytes


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.sampled_from(POLICIES), st.sampled_from(["eager", "graph"]),
       st.floats(1.0, 8.0), st.floats(1.0, 8.0))
def test_faster_gpu_is_never_slower(g, policy, launch, bw, peak):
    slow = api.predict_graph(g, H200, policy, launch).totals.time_s
    fast = api.predict_graph(g, _faster(H200, bw, peak), policy, launch).totals.time_s
    assert fast <= slow * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(graphs(), st.sampled_from(POLICIES))
def test_kernel_time_between_bounds(g, policy):
    for k in api.predict_graph(g, H200, policy, "graph").kernels:
        busy = max(k.compute_s, k.memory_s, k.link_s)
        assert busy <= k.time_s <= k.compute_s + k.memory_s + k.link_s + k.launch_s + 1e-15
