"""What kernel Inductor generates for the suite's layer_norm and rms_norm cases, and how fast it
runs: the compiled layer_norm of 32768x4096 bf16 ran 13 % (H100) to 27 % (H200) slower than the
model's one-pass price, the rms_norm of the same shape within 7 %.

For each case: the generated Triton source (run_and_get_code), whether each kernel is a
persistent or a looped reduction, its loads of the input, Welford or not, its R block; the
kernel's device time from the profiler (median over calls, no L2 flush: every case here is
larger than L2 or host-bound), and the bytes the model prices (input + weight + output).
    python lab/inductor_norms/study.py OUT_DIR
"""
import json
import re
import statistics
import sys
from pathlib import Path

import torch
from torch._inductor.utils import run_and_get_code

from rooflab.validate import torch_suite

CALLS = 20


def features(code: str) -> list[dict]:
    """One dict per Triton kernel in the generated module's source."""
    out = []
    for src in re.split(r"\n(?=@triton_heuristics\.)", code)[1:]:
        head = src.split("\n", 1)[0]
        name = re.search(r"def (triton_\w+)\(", src)
        block = re.search(r"R0?_BLOCK\s*:\s*tl\.constexpr\s*=\s*(\d+)", src)
        out.append({"kind": head.split("(")[0].removeprefix("@triton_heuristics."),
                    "name": name.group(1) if name else "",
                    "loads_in_ptr0": src.count("tl.load(in_ptr0"),
                    "welford": "welford" in src,
                    "r_block": int(block.group(1)) if block else None,
                    "loops": src.count("for r0_offset in") + src.count("for roffset in")})
    return out


def kernel_us(fn) -> list[dict]:
    """Device time per kernel name, median over CALLS calls (µs)."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
    by: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            by.setdefault(e.name, []).append(e.device_time)
    return [{"name": n, "us": round(statistics.median(v), 2), "count": len(v)}
            for n, v in by.items()]


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in torch_suite.select("^(layer_norm|rms_norm)_"):
        try:
            mod = case.build("cuda")
            inputs = case.make_inputs("cuda")
            torch._dynamo.reset()
            cm = torch.compile(mod)
            with torch.no_grad():
                _, codes = run_and_get_code(cm, *inputs)
                compiled = kernel_us(lambda: cm(*inputs))
                eager = kernel_us(lambda: mod(*inputs))
        except Exception as e:      # noqa: BLE001 -- one case's failure is recorded, not fatal
            rows.append({"id": case.id, "error": str(e).splitlines()[0][:300]})
            print(case.id, "ERROR", rows[-1]["error"], flush=True)
            continue
        (out / f"{case.id}.py").write_text("\n\n".join(codes))
        moved = sum(i.nbytes for i in case.inputs) + case.inputs[0].nbytes
        rows.append({"id": case.id, "split": case.split, "moved_bytes": moved,
                     "kernels": [k for c in codes for k in features(c)],
                     "compiled_kernels": compiled, "eager_kernels": eager})
        print(case.id, [(k["kind"], k["loads_in_ptr0"], k["welford"], k["r_block"])
                        for k in rows[-1]["kernels"]],
              [(k["name"][:40], k["us"]) for k in compiled], flush=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "triton": __import__("triton").__version__}
    (out / "study.json").write_text(json.dumps({"meta": meta, "cases": rows}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
