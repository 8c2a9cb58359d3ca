"""The bundled datasheet specs as a calibration finds them."""

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
