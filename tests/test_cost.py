"""Predicted times worked out by hand from the H200 spec's numbers (hardware_specs/h200.yaml):
bf16 989.4 TFLOP/s x 0.80, fp8 1978.9 x 0.69, HBM 4.8 TB/s x 0.89, eager dispatch 11 µs,
graph launch 1.3 µs per kernel, minimum kernel 2 µs."""

import pytest

from rooflab import api

BF16_RATE = 989.4e12 * 0.80
FP8_RATE = 1978.9e12 * 0.69
HBM_RATE = 4.8e12 * 0.89
DISPATCH, GRAPH, MIN_KERNEL = 11e-6, 1.3e-6, 2e-6


def _predict(write_yaml, text, launch="graph", hw="h200", schedule="unfused"):
    return api.predict(write_yaml(text), hw, schedule, launch)


def test_big_bf16_gemm_is_compute_bound(write_yaml):
    n = 8192
    p = _predict(write_yaml, f"""
        name: t
        tensors: {{a: {{shape: [{n}, {n}], dtype: bf16}}, b: {{shape: [{n}, {n}], dtype: bf16}}}}
        ops: [{{kind: matmul, name: mm, inputs: [a, b], outputs: [c]}}]
    """)
    k = p.kernels[0]
    # 128x256 tiles: 64 x 32 = 2048 tiles on 132 SMs take 16 waves, the last one part-full
    waves = 2048 / (16 * 132)
    assert k.compute_s == pytest.approx(2 * n**3 / BF16_RATE / waves, rel=1e-12)   # 1.43 ms
    assert k.memory_s == pytest.approx(3 * n * n * 2 / HBM_RATE / waves, rel=1e-12)
    assert k.bound == "compute"
    assert k.time_s == pytest.approx(k.compute_s + GRAPH, rel=1e-12)
    assert p.totals.time_s == pytest.approx(DISPATCH + k.time_s, rel=1e-12)
    assert k.intensity == pytest.approx(2 * n**3 / (3 * n * n * 2))        # n/3 FLOP/B


def test_small_gemm_wave_quantization(write_yaml):
    # 1024³: 8 x 8 = 64 tiles of 128x128 fill 64 of 132 SMs for one wave
    n = 1024
    p = _predict(write_yaml, f"""
        name: t
        tensors: {{a: {{shape: [{n}, {n}], dtype: bf16}}, b: {{shape: [{n}, {n}], dtype: bf16}}}}
        ops: [{{kind: matmul, name: mm, inputs: [a, b], outputs: [c]}}]
    """)
    assert p.kernels[0].compute_s == pytest.approx(2 * n**3 / BF16_RATE * 132 / 64, rel=1e-12)


def test_big_add_is_memory_bound(write_yaml):
    n = 1 << 26
    p = _predict(write_yaml, f"""
        name: t
        tensors: {{x: {{shape: [{n}], dtype: bf16}}, y: {{shape: [{n}], dtype: bf16}}}}
        ops: [{{kind: add, name: add, inputs: [x, y], outputs: [z]}}]
    """)
    k = p.kernels[0]
    assert k.memory_s == pytest.approx(3 * 2 * n / HBM_RATE, rel=1e-12)        # 94.25 µs
    assert k.bound == "memory"
    assert k.time_s == pytest.approx(3 * 2 * n / HBM_RATE + GRAPH, rel=1e-12)


def test_fp8_gemm_uses_fp8_peak_and_its_efficiency(write_yaml):
    n = 8192
    p = _predict(write_yaml, f"""
        name: t
        tensors: {{a: {{shape: [{n}, {n}], dtype: fp8}}, b: {{shape: [{n}, {n}], dtype: fp8}}}}
        ops: [{{kind: qmatmul, name: mm, inputs: [a, b], outputs: [c]}}]
    """)
    assert p.kernels[0].compute_s == pytest.approx(2 * n**3 / FP8_RATE / (2048 / (16 * 132)),
                                                   rel=1e-12)


def test_eager_tiny_kernels_wait_for_the_cpu(write_yaml):
    # Ten dependent 1 kB relus: the GPU finishes each long before the CPU issues the next,
    # so the step takes ten dispatches plus the last kernel's own time.
    ops = "\n".join(f"  - {{kind: relu, name: r{i}, inputs: [x{i}], outputs: [x{i + 1}]}}"
                    for i in range(10))
    p = _predict(write_yaml, "name: t\ntensors: {x0: {shape: [256], dtype: fp32}}\nops:\n" + ops,
                 launch="eager")
    last = p.kernels[-1]
    busy = last.memory_s                       # 2 kB over HBM
    assert busy == pytest.approx(2048 / HBM_RATE)
    assert p.totals.time_s == pytest.approx(10 * DISPATCH + busy + MIN_KERNEL, rel=1e-9)
    assert all(k.bound == "launch" for k in p.kernels)
    assert p.totals.bound == "launch"
    # the same step replayed as a CUDA graph: one dispatch, then 1.3 µs per kernel
    g = _predict(write_yaml, "name: t\ntensors: {x0: {shape: [256], dtype: fp32}}\nops:\n" + ops,
                 launch="graph")
    assert g.totals.time_s == pytest.approx(DISPATCH + 10 * (busy + GRAPH), rel=1e-9)


def test_eager_long_kernels_hide_dispatch(write_yaml):
    # Two 94 µs adds: the CPU issues the second while the first runs; only the first waits.
    n = 1 << 26
    p = _predict(write_yaml, f"""
        name: t
        tensors: {{x: {{shape: [{n}], dtype: bf16}}, y: {{shape: [{n}], dtype: bf16}}}}
        ops:
          - {{kind: add, name: a1, inputs: [x, y], outputs: [z]}}
          - {{kind: add, name: a2, inputs: [z, y], outputs: [w]}}
    """, launch="eager")
    busy = 3 * 2 * n / HBM_RATE
    assert p.totals.time_s == pytest.approx(DISPATCH + 2 * (busy + MIN_KERNEL), rel=1e-9)
    assert p.kernels[1].launch_s == pytest.approx(MIN_KERNEL)


def test_all_reduce_priced_on_the_link(write_yaml):
    size = 64 * 8192 * 2
    p = _predict(write_yaml, """
        name: t
        tensors: {x: {shape: [64, 8192], dtype: bf16}}
        ops: [{kind: all_reduce, name: ar, inputs: [x], outputs: [y], world_size: 8}]
    """)
    k = p.kernels[0]
    assert k.link_bytes == 2 * 7 * size // 8
    # the spec's collective paths (h100-sxm: see tests/test_collectives.py), or by default one
    # ring at the link's efficiency: 2(n - 1) steps of 2 us, then the bus bytes
    from rooflab import collectives
    want, _ = collectives.collective_time(p.hardware.collective_paths, "all_reduce", 8, size)
    assert k.link_s == pytest.approx(want, rel=1e-12)
    assert k.bound == "link"


def test_w4a16_decode_is_bound_by_dequantization(write_yaml):
    # M=16, K=N=8192 int4 weights: 67.1 M weights unpacked once (one 16-row tile), at the
    # datasheet default of 8 ALU instructions per weight: 66.9 TFLOP/s / 2 / 8 = 4.18 T weights/s
    p = _predict(write_yaml, """
        name: t
        tensors: {x: {shape: [16, 8192], dtype: bf16}, w: {shape: [8192, 8192], dtype: int4}}
        ops: [{kind: qmatmul, name: q, group_size: 128, inputs: [x, w], outputs: [y]}]
    """)
    k = p.kernels[0]
    waves = 128 / 132                       # 16x64 tiles: 128 of them on 132 SMs
    dequant_s = 8192 * 8192 / (66.9e12 / 2 / 8)                              # 16.05 µs
    tensor_s = 2 * 16 * 8192 * 8192 / BF16_RATE
    assert k.compute_s == pytest.approx((tensor_s + dequant_s) / waves, rel=1e-12)
    assert k.bound == "compute"
    # at M=2048 the weights are unpacked once per 128-row tile: 16 times
    p = _predict(write_yaml, """
        name: t
        tensors: {x: {shape: [2048, 8192], dtype: bf16}, w: {shape: [8192, 8192], dtype: int4}}
        ops: [{kind: qmatmul, name: q, group_size: 128, inputs: [x, w], outputs: [y]}]
    """)
    waves = 512 / (4 * 132)                 # 128x256 tiles: 16 x 32 = 512 on 132 SMs, 4 waves
    tensor_s = 2 * 2048 * 8192 * 8192 / BF16_RATE
    assert p.kernels[0].compute_s == pytest.approx((tensor_s + 16 * dequant_s) / waves, rel=1e-12)


def test_causal_flash_attention_waits_for_its_longest_program(write_yaml):
    # B=1, H=32, S=512: 4 query blocks per head scan 1, 2, 3, 4 blocks of keys; 320 block units
    # on 132 SMs would take 2.42 each, but the last block of a head takes 4: busy 320 / (132 x 4)
    p = _predict(write_yaml, """
        name: t
        tensors: {q: {shape: [1, 32, 512, 128], dtype: bf16}, k: {shape: [1, 32, 512, 128], dtype: bf16},
                  v: {shape: [1, 32, 512, 128], dtype: bf16}}
        ops: [{kind: attention, name: a, causal: true, inputs: [q, k, v], outputs: [o]}]
    """)
    k = p.kernels[0]
    pairs = 32 * (512 * 513 // 2)          # visible (query, key) pairs
    tensor_s = 2 * pairs * 256 / BF16_RATE
    sfu_s = pairs / (16 * 132 * 1980e6)
    assert k.compute_s == pytest.approx((tensor_s + sfu_s) / (320 / (132 * 4)), rel=1e-12)


def test_row_kernel_with_fewer_rows_than_sms(write_yaml):
    # softmax over 64 rows of a 128,256-token vocabulary: one program per row fills 64 of 132 SMs;
    # a row (513 KB in fp32) exceeds shared memory, so its input is read twice
    p = _predict(write_yaml, """
        name: t
        tensors: {x: {shape: [64, 128256], dtype: bf16}}
        ops: [{kind: softmax, name: s, inputs: [x], outputs: [y]}]
    """)
    k = p.kernels[0]
    nbytes = 64 * 128256 * 2
    assert k.hbm_bytes == 3 * nbytes
    assert k.memory_s == pytest.approx(3 * nbytes / HBM_RATE / (64 / 132), rel=1e-12)


def test_calibrated_attention_efficiency_prices_flash_attention_only(write_yaml, tmp_path):
    # a spec with efficiency.attention = 0.64: the attention kernel's matmuls at 0.64 of the
    # bf16 peak (its exponentials still on the SFUs); a plain GEMM keeps the tensor efficiency
    from conftest import ROOT
    from rooflab import hardware
    spec = (ROOT / "hardware_specs/h200.yaml").read_text().replace(
        "  vector: {value: 0.80", "  attention: {value: 0.64, source: H200-LOCAL}\n  vector: {value: 0.80")
    (tmp_path / "h200a.yaml").write_text(spec)
    hw = hardware.load(str(tmp_path / "h200a.yaml"))
    assert hw.attention_efficiency == 0.64
    att = api.predict(write_yaml("""
        name: t
        tensors: {q: {shape: [4, 32, 8192, 128], dtype: bf16}, k: {shape: [4, 32, 8192, 128], dtype: bf16},
                  v: {shape: [4, 32, 8192, 128], dtype: bf16}}
        ops: [{kind: attention, name: a, causal: false, inputs: [q, k, v], outputs: [o]}]
    """), hw, "unfused", "graph").kernels[0]
    pairs = 4 * 32 * 8192 * 8192
    tensor_s = 2 * pairs * 256 / (989.4e12 * 0.64)                    # 6.95 ms
    sfu_s = pairs / (16 * 132 * 1980e6)                               # 2.05 ms
    assert att.compute_s == pytest.approx(tensor_s + sfu_s, rel=1e-12)
    mm = api.predict(write_yaml("""
        name: t
        tensors: {a: {shape: [8192, 8192], dtype: bf16}, b: {shape: [8192, 8192], dtype: bf16}}
        ops: [{kind: matmul, name: mm, inputs: [a, b], outputs: [c]}]
    """, "mm.yaml"), hw, "unfused", "graph").kernels[0]
    assert mm.compute_s == pytest.approx(2 * 8192**3 / BF16_RATE / (2048 / (16 * 132)), rel=1e-12)


def test_a_decode_weight_comes_from_hbm_not_from_l2(write_yaml):
    # The measured H200 spec's cuBLAS curve times one GEMM back to back, so a 4096 x 4096 bf16
    # weight (33.5 MB, under the 50 MB L2) was in L2 when it was measured. Alone, the GEMV is
    # priced by that curve; beside 1 GiB of other inputs (a decode step's other weights) the
    # weight, and x, come from HBM: their 33,562,624 B take 1 / copy rate past L2 - 1 / L2's
    # 5.2179 TB/s more. The copy curve at 2 x L2 = 100 MB, in log(bytes) between 67.1 MB
    # (0.8467 of 4.8 TB/s) and 134.2 MB (0.8695): 4.8e12 * (0.8467 + 0.0228 * log(100 /
    # 67.1) / log(2)) = 4.1272 TB/s
    import math
    gemv = """
        name: t
        tensors: {x: {shape: [1, 4096], dtype: bf16}, w: {shape: [4096, 4096], dtype: bf16}%s}
        ops: [{kind: matmul, name: mm, inputs: [x, w], outputs: [y]}%s]
    """
    hw = "hardware_specs/measured/h200.yaml"
    alone = _predict(write_yaml, gemv % ("", ""), hw=hw).kernels[0]
    step = _predict(write_yaml, gemv % (", rest: {shape: [536870912], dtype: bf16}",
                                        ", {kind: scale, name: other, inputs: [rest], "
                                        "outputs: [z]}"), hw=hw).kernels[0]
    copy_rate = 4.8e12 * (0.8467 + (0.8695 - 0.8467) * math.log(100 / 67.1) / math.log(2))
    assert copy_rate == pytest.approx(4.1272e12, rel=1e-4)
    extra_s = 33_562_624 * (1 / copy_rate - 1 / 5.2179e12)               # 1.70 µs
    assert step.memory_s - alone.memory_s == pytest.approx(extra_s, rel=1e-3)
    # the curve's terms overlap in part (the spec's gemm overlap 0.242 of the other term)
    assert step.compute_s - alone.compute_s == pytest.approx(0.242 * extra_s, rel=1e-2)
