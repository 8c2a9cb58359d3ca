"""Hardware specs: every bundled file loads, every figure cites a source, dense not sparse."""

import pytest

from rooflab import hardware

NAMES = list(hardware.spec_paths())

# Dense datasheet peaks in TFLOP/s (shared/reference/hardware-datasheets.md). NVIDIA quotes
# 2:4-sparse tensor figures; the dense one is half. A spec holding the sparse figure fails here.
DENSE = {
    "a100-sxm-80gb": {"bf16": 312, "tf32": 156, "int8": 624},
    "h100-sxm": {"bf16": 989.4, "fp8": 1978.9, "tf32": 494.7},
    "h100-pcie": {"bf16": 756, "fp8": 1513},
    "h200": {"bf16": 989.4, "fp8": 1978.9},
    "b200": {"bf16": 2250, "fp8": 4500, "fp6": 4500, "fp4": 9000},
    "gb200": {"bf16": 2500, "fp8": 5000, "fp4": 10000},
    "l40s": {"bf16": 362.05, "fp8": 733},
    "l4": {"bf16": 121, "fp8": 242.5},
    "rtx4090": {"bf16": 165.2},
    "rtx5090": {"bf16": 209.5, "fp4": 1676},
    "mi300x": {"bf16": 1307.4, "fp8": 2614.9},
    "mi325x": {"bf16": 1307.4, "fp8": 2614.9},
    "mi355x": {"fp8": 5033},
}
REQUIRED = {"a100-sxm-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "gb200", "l40s", "l4",
            "rtx4090", "rtx5090", "mi300x", "mi325x", "mi355x"}


def test_all_required_gpus_are_bundled():
    assert REQUIRED <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_spec_loads_and_name_matches_file(name):
    hw = hardware.load(name)
    assert hw.name == name
    assert hw.spec.sources, "a spec must list its sources"


@pytest.mark.parametrize("name", sorted(DENSE))
def test_dense_peaks(name):
    hw = hardware.load(name)
    for fam, tflops in DENSE[name].items():
        assert hw.tensor_flops_per_s[fam] == pytest.approx(tflops * 1e12), fam


@pytest.mark.parametrize("name", ["a100-sxm-80gb", "h100-sxm", "h100-pcie", "h200", "l40s", "l4",
                                  "rtx4090", "mi300x", "mi325x"])
def test_no_fp4_path_where_there_are_no_fp4_tensor_cores(name):
    assert not hardware.load(name).has_gemm_path("fp4")


def test_a100_has_no_fp8_and_mi355x_no_tf32():
    assert not hardware.load("a100-sxm-80gb").has_gemm_path("fp8")
    assert not hardware.load("mi355x").has_gemm_path("tf32")


@pytest.mark.parametrize("name", NAMES)
def test_efficiencies_are_fractions_and_bandwidths_plausible(name):
    hw = hardware.load(name)
    assert 0 < hw.hbm_efficiency <= 1 and 0 < hw.tensor_efficiency <= 1
    assert 0.2e12 <= hw.hbm_bytes_per_s <= 10e12
    # dense bf16 never exceeds 2.6 PFLOP/s on any bundled GPU (sparse would be 5)
    assert hw.tensor_flops_per_s.get("bf16", 0) <= 2.6e15
