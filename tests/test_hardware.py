"""The bundled datasheet specs as a calibration finds them."""

import pytest

def test_the_datasheet_spec_of_a_gpu_as_torch_names_it():
    # calibrate starts from the spec of the GPU it measures (an H100 measured against the
    # H200's datasheet gave a spec named h200)
    from rooflab.bundled import datasheet_for_device
    assert datasheet_for_device("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert datasheet_for_device("NVIDIA H100 PCIe") == "h100-pcie"
    assert datasheet_for_device("NVIDIA H200") == "h200"
    assert datasheet_for_device("NVIDIA A100-SXM4-80GB") == "a100-sxm-80gb"
    assert datasheet_for_device("NVIDIA L4") == "l4"
    assert datasheet_for_device("NVIDIA GeForce RTX 4090") == "rtx4090"
    assert datasheet_for_device("Tesla T4") is None


def test_fp4_without_its_own_efficiency_takes_fp8s():
    # b200.yaml lists an fp8 efficiency (0.59) and none for fp4: FP4 is priced at 0.59 of its
    # 9000 TFLOP/s peak (5310), twice FP8's 4500 x 0.59 = 2655, not at the bf16/general 0.75
    from rooflab.hardware import load
    b200 = load("b200")
    assert b200.tensor_rate("fp8") == pytest.approx(4500e12 * 0.59)
    assert b200.tensor_rate("fp4") == pytest.approx(9000e12 * 0.59)
    assert b200.tensor_rate("bf16") == pytest.approx(2250e12 * b200.tensor_efficiency)
