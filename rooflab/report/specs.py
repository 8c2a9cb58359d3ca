"""Text views of hardware specs: `rooflab hardware list` and `rooflab hardware show`."""

from __future__ import annotations

from rooflab import hardware
from rooflab.hardware import Hardware
from rooflab.report.table import grid
from rooflab.terminal import printable


def _tf(hw: Hardware, fam: str) -> str:
    v = hw.tensor_flops_per_s.get(fam)
    return f"{v / 1e12:g}" if v else "-"


def render_list() -> str:
    rows = []
    for name in hardware.spec_paths():
        hw = hardware.load(name)
        rows.append([name, hw.display_name, _tf(hw, "bf16"), _tf(hw, "fp8"), _tf(hw, "fp4"),
                     f"{hw.vector_flops_per_s['fp32'] / 1e12:g}", f"{hw.hbm_bytes / 1e9:g}",
                     f"{hw.hbm_bytes_per_s / 1e12:g}", f"{hw.l2_bytes / 1e6:g}",
                     f"{hw.link_bytes_per_s / 1e9:g}"])
    cols = ["name", "GPU", "bf16 TF", "fp8 TF", "fp4 TF", "fp32 vec TF", "HBM GB", "HBM TB/s",
            "L2 MB", "link GB/s"]
    return ("Dense peaks in TFLOP/s (no 2:4 sparsity); link = interconnect, one direction.\n\n"
            + grid(cols, rows, left={0, 1}))            # grid escapes the cells


def render_show(hw: Hardware) -> str:
    spec = hw.spec
    lines = [f"{spec.display_name} ({spec.name}): {spec.architecture}",
             f"file: {hw.source_file}", ""]
    rows = []

    def add(what, fig, unit):
        rows.append([what, f"{fig.value:g} {unit}", fig.source, fig.note or ""])

    for fam, fig in spec.tensor_tflops.items():
        peak = fig.value
        add(f"tensor {fam} (dense)", fig, "TFLOP/s" if fam != "int8" else "TOP/s")
        if peak >= 1000:
            rows[-1][1] = f"{peak:g} TFLOP/s = {peak / 1000:g} PFLOP/s"
    for fam, fig in spec.vector_tflops.items():
        add(f"vector {fam}", fig, "TFLOP/s")
    m = spec.memory
    add("HBM capacity", m.hbm_gb, "GB")
    if m.usable_gb:
        add("memory one process can allocate", m.usable_gb, "GB")
    add("HBM bandwidth", m.hbm_tb_per_s, "TB/s")
    add("L2", m.l2_mb, "MB")
    if m.l2_tb_per_s:
        add("L2 bandwidth", m.l2_tb_per_s, "TB/s")
    add("shared memory per block", m.smem_per_sm_kb, "KB")
    add("SMs / CUs", spec.sm_count, "")
    add("boost clock", spec.boost_clock_mhz, "MHz")
    add(f"interconnect ({spec.interconnect.name}), per direction", spec.interconnect.gb_per_s, "GB/s")
    if spec.sfu_per_clk_per_sm:
        add("special-function results per clock per SM", spec.sfu_per_clk_per_sm, "")
    if spec.dequant_gweights_per_s:
        add("int weights dequantized in a GEMM", spec.dequant_gweights_per_s, "G weights/s")
    else:
        rows.append(["int weights dequantized in a GEMM", f"{hw.dequant_rate / 1e9:g} G weights/s",
                     "derived", "fp32 instruction rate / 8 instructions per weight (ASSUMED)"])
    add("eager dispatch per op", spec.launch.eager_dispatch_us, "µs")
    add("graph launch per kernel", spec.launch.graph_launch_us, "µs")
    if spec.launch.graph_warm_launch_us:
        add("graph launch per kernel reading from L2", spec.launch.graph_warm_launch_us, "µs")
    add("minimum kernel", spec.launch.min_kernel_us, "µs")
    for label, fig in (("eager GEMM call", spec.launch.gemm_dispatch_us),
                       ("eager view call (no kernel)", spec.launch.view_dispatch_us),
                       ("nn.Module call beyond its ops", spec.launch.module_call_us)):
        if fig:
            add(label, fig, "µs")
    if spec.launch.triton_launch_us:
        add("Triton launch from Python (validation)", spec.launch.triton_launch_us, "µs")
    e = spec.efficiency
    add("achieved: tensor", e.tensor, "of peak")
    for fam, fig in e.tensor_by_dtype.items():
        add(f"achieved: tensor {fam}", fig, "of peak")
    if e.attention:
        add("achieved: tensor inside FlashAttention", e.attention, "of peak")
    add("achieved: vector", e.vector, "of peak")
    add("achieved: HBM", e.hbm, "of peak")
    add("achieved: interconnect", e.interconnect, "of peak")
    lines += grid(["figure", "value", "source", "note"], rows, left={0, 1, 2, 3}).split("\n")
    lines.append("")
    paths = ", ".join(spec.tensor_tflops) or "none"
    lines.append(f"tensor-core GEMM paths: {paths}")
    lines.append(f"fused weight-only dequant-in-GEMM: {', '.join(spec.weight_only_gemm) or 'none'}")
    ridge = hw.tensor_flops_per_s.get("bf16", 0) / hw.hbm_bytes_per_s
    if ridge:
        lines.append(f"ridge point (dense bf16 peak / HBM bandwidth): {ridge:.0f} FLOP/byte")
    lines.append("")
    lines.append("sources:")
    for key, text in spec.sources.items():
        lines.append(f"  [{key}] {text}")
    return "\n".join(printable(line) for line in lines)     # a spec file's text, escaped
