"""A calibrated hardware spec from a calibration's raw figures. `write_spec` is plain data, no
torch, so CI can rebuild the spec each committed validation run was measured against
(rooflab/validate/gate.py); `spec_from_raw` adds what the calibration's torch-suite run gives
(ATen family curves, torch.compile's host figures), which traces modules and so needs torch.
`rooflab calibrate --gpu` (calibrate.py) measures the figures and writes the spec with these;
`rooflab calibrate --from` rebuilds it."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rooflab.hardware_spec import HardwareFile


def host_bound_sizes(curve: list[tuple[float, float]]) -> list[float]:
    """The MB sizes of a copy curve ([[MB moved, TB/s], ...], each size twice the one before)
    whose time did not grow with their bytes: at least 3/4 of the next size's time where a
    bandwidth-bound copy takes about half. There the host, not HBM, set the time (a loaded
    host that launches a graph slower than the GPU copies)."""
    times = [mb / bw for mb, bw in curve]
    return [mb for (mb, _), t, t_next in zip(curve, times, times[1:]) if t >= 0.75 * t_next]


def write_spec(base: HardwareFile, m: dict, provenance: dict, raw_path: str) -> dict:
    """The base spec with its measured figures replaced; every replaced figure cites `CAL`."""
    spec = base.model_dump(exclude_none=True)
    date = provenance["date"][:10]
    spec["name"] = base.name
    spec["display_name"] = f"{base.display_name} (calibrated {date})"
    spec["calibrated_from"] = raw_path
    spec["sources"]["CAL"] = (f"rooflab calibrate --gpu on {provenance['gpu']}, {provenance['date']}, "
                              f"torch {provenance['torch']}, triton {provenance['triton']}: {raw_path}")

    def fig(value, note):
        return {"value": round(value, 4), "source": "CAL", "note": note}

    peak_bw = base.memory.hbm_tb_per_s.value
    spec["efficiency"]["hbm"] = fig(min(1.0, m["copy_tb_per_s"] / peak_bw),
                                    f"copy {m['copy_tb_per_s']:.3f} TB/s of {peak_bw}")
    spec["memory"]["l2_tb_per_s"] = fig(m["l2_tb_per_s"], "16 MiB resident read")
    if provenance.get("total_memory_gb"):
        spec["memory"]["usable_gb"] = fig(provenance["total_memory_gb"],
                                          "torch.cuda total_memory")
    bound = host_bound_sizes(m["copy_curve_mb_tb_per_s"])
    spec["memory"]["hbm_curve"] = {
        "points": [[round(mb, 1), round(min(1.0, bw / peak_bw), 4)] for mb, bw in m["copy_curve_mb_tb_per_s"]],
        "source": "CAL", "note": "Triton copy, L2 flushed, time beyond min_kernel_us" + (
            "; HOST-BOUND at " + ", ".join(f"{mb:.0f}" for mb in bound) + " MB (their time "
            "did not grow with their bytes): calibrate again on an idle host" if bound else "")}
    g = m["gemm_tflops"]
    bf16_peak = base.tensor_tflops["bf16"].value
    best, note = g["bf16"], f"bf16 8192³ {g['bf16']:.0f} TFLOP/s (cuBLAS)"
    triton_tf = m.get("triton_gemm_bf16_12288_tflops", 0.0)
    if triton_tf > best:
        best, note = triton_tf, (f"bf16 12288³ {triton_tf:.0f} TFLOP/s (the validation suite's "
                                 f"Triton GEMM; cuBLAS 8192³ {g['bf16']:.0f})")
    spec["efficiency"]["tensor"] = fig(min(1.0, best / bf16_peak), note)
    by = dict(spec["efficiency"].get("tensor_by_dtype", {}))
    for fam in ("fp16", "tf32", "fp8"):
        if fam in base.tensor_tflops and fam in g:
            peak = base.tensor_tflops[fam].value
            by[fam] = fig(min(1.0, g[fam] / peak), f"8192³ {g[fam]:.0f} TFLOP/s")
    spec["efficiency"]["tensor_by_dtype"] = by
    if "attention" in m and base.sfu_per_clk_per_sm:
        # the efficiency that, with the model's SFU term for the exponentials and the fixed
        # kernel cost, reproduces the measured time (rooflab.cost prices them the same way)
        a = m["attention"]
        sfu_rate = base.sfu_per_clk_per_sm.value * base.sm_count.value * base.boost_clock_mhz.value * 1e6
        busy = a["s"] - m["min_kernel_us"] * 1e-6 - a["exps"] / sfu_rate
        b_, h_, s_, d_ = a["shape_bhsd"]
        spec["efficiency"]["attention"] = fig(
            min(1.0, a["flops"] / busy / (bf16_peak * 1e12)),
            f"Triton FlashAttention B={b_} H={h_} S={s_} D={d_} non-causal, "
            f"{a['flops'] / a['s'] / 1e12:.0f} TFLOP/s with its exponentials")
    if "dequant_gweights_per_s" in m:
        spec["dequant_gweights_per_s"] = fig(m["dequant_gweights_per_s"],
                                             "W4A16 Triton kernel, M=16, K=N=16384, group 128")
    spec["launch"]["eager_dispatch_us"] = fig(m["eager_dispatch_us"], "tiny eager PyTorch op")
    spec["launch"]["graph_launch_us"] = fig(m["graph_launch_us"], "per 4 MiB copy kernel in a CUDA "
                                            "graph, beyond its transfer time")
    if "graph_tiny_us" in m:
        spec["launch"]["graph_warm_launch_us"] = fig(m["graph_tiny_us"], "per tiny add_ in a "
                                                     "CUDA graph replayed back to back (in L2)")
    spec["launch"]["min_kernel_us"] = fig(m["min_kernel_us"], "256 KiB Triton copy after an L2 flush, "
                                          "replayed as a one-kernel CUDA graph")
    spec["launch"]["triton_launch_us"] = fig(m["triton_launch_us"], "tiny Triton kernel launched from Python")
    HardwareFile.model_validate(spec)
    return spec


def unused_raw_path(path: Path) -> Path:
    """`path`, or the first of <stem>-2, <stem>-3, ... where neither the raw figures nor their
    torch run (torch_run_path) exist: a second calibration of the same day keeps the first."""
    n = 1
    candidate = path
    while candidate.exists() or torch_run_path(candidate).exists():
        n += 1
        candidate = path.with_name(f"{path.stem}-{n}{path.suffix}")
    return candidate


def torch_run_path(raw_path: str | Path) -> Path:
    """Where a calibration's torch-suite run lies: beside its raw figures, <raw>-torch.json."""
    raw_path = Path(raw_path)
    return raw_path.with_name(raw_path.stem + "-torch.json")


def spec_from_raw(base: HardwareFile, raw_path: str | Path,
                  torch_run: str | Path | None = None) -> dict:
    """The calibrated spec `rooflab calibrate --gpu` wrote from a calibration's raw figures,
    as the current code writes it: write_spec, plus the torch-suite run beside them where there
    is one (its family curves, SDPA backends and launch figures:
    rooflab.validate.torch_fit.add_to_spec; that part needs torch). `torch_run`: another
    torch-suite run whose GPU-side figures (family curves, SDPA backends, citing
    CAL-TORCH-KERNELS) replace those; the launch figures stay the raw lease's own, because
    host costs differ from one machine to the next."""
    from rooflab.validate import torch_compare, torch_fit
    raw = json.loads(Path(raw_path).read_text())
    spec = write_spec(base, raw["measured"], raw["provenance"], str(raw_path))
    beside = torch_run_path(raw_path)
    if beside.is_file():
        spec = torch_fit.add_to_spec(spec, json.loads(beside.read_text()), str(beside))
    if torch_run:
        # another lease's GPU-side figures; host figures stay with the raw's own lease
        spec = torch_fit.add_to_spec(spec, torch_compare.load(torch_run), str(torch_run),
                                     "CAL-TORCH-KERNELS", host=False)
    return spec


def raw_gpu(raw_path: str | Path) -> str:
    """The GPU a calibration's raw figures were measured on, as torch names it; RooflabError
    naming the file when it is not a calibration's raw figures."""
    from rooflab.errors import RooflabError
    try:
        return str(json.loads(Path(raw_path).read_text())["provenance"]["gpu"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise RooflabError(f"not a calibration's raw figures ({type(e).__name__}: {e})",
                           file=str(raw_path)) from None


def spec_and_provenance(base: HardwareFile, raw_path: str | Path,
                        torch_run: str | Path | None = None) -> tuple[dict, dict]:
    """spec_from_raw's spec and the calibration's provenance; RooflabError naming the file
    when it is not a calibration's raw figures."""
    from rooflab.errors import RooflabError
    try:
        provenance = json.loads(Path(raw_path).read_text())["provenance"]
        return spec_from_raw(base, raw_path, torch_run), provenance
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise RooflabError(f"not a calibration's raw figures ({type(e).__name__}: {e})",
                           file=str(raw_path)) from None


def spec_text(base: HardwareFile, spec: dict, provenance: dict) -> str:
    """The calibrated spec's YAML file: a header saying what was measured, then `spec`."""
    header = (f"# {base.display_name}, calibrated by `rooflab calibrate --gpu` on "
              f"{provenance['date']}.\n# Figures citing CAL (and CAL-TORCH: the torch suite) were "
              f"measured; the rest are the datasheet spec's ({base.name}).\n")
    return header + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)
