"""Scale benchmark: `rooflab predict -s fused` of a 100,000-op graph and `rooflab report` of a
10,000-op graph, each run as a user runs it (a fresh `python -m rooflab.cli` process, YAML
parsing, scheduling, pricing and rendering included), on two generated workloads:

  chain  one activation through a long chain of `scale` ops (the fused schedule makes it one
         kernel: every op joins the same group)
  mix    a Llama-style prefill layer (rmsnorm, q/k/v GEMMs, views, rotary, eager attention:
         QKᵀ → scale → causal mask → softmax → ·V, o_proj, residual, SwiGLU MLP), repeated
         until the graph holds the asked number of ops

    python benchmarks/bench_scale.py                  # both sizes, both workloads
    python benchmarks/bench_scale.py --predict-ops 20000 --report-ops 2000   # a quick look

Prints one line per run (wall seconds, peak memory of the child process) and exits 1 when a
run misses its target: fused predict of 100,000 ops under 20 s, report of 10,000 ops under
10 s (issue 12's figures, for a 2-core machine; smaller sizes are held to the same figures).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PREDICT_TARGET_S = 20.0       # for 100,000 ops
REPORT_TARGET_S = 10.0        # for 10,000 ops

MIX_LAYER_OPS = 28            # ops one `mix` layer adds (views included)


def chain_yaml(n_ops: int) -> tuple[str, int]:
    """A pointwise chain of `n_ops` scale ops over a bf16 [4096, 4096] activation, written out
    op by op with distinct names (as a traced graph is: nothing folds in the report)."""
    lines = [f"name: scale_chain_{n_ops}",
             f'description: "{n_ops} scale ops in a chain"',
             "tensors:", "  t0: {shape: [4096, 4096], dtype: bf16}", "ops:"]
    lines += [f"  - {{name: s{i}, kind: scale, factor: 0.5, inputs: [t{i}], outputs: [t{i + 1}]}}"
              for i in range(n_ops)]
    return "\n".join(lines) + "\n", n_ops


_MIX_WEIGHTS = """\
  attn_norm_w: {shape: [D], dtype: bf16}
  wq: {shape: [D, H * hd], dtype: bf16}
  wk: {shape: [D, H * hd], dtype: bf16}
  wv: {shape: [D, H * hd], dtype: bf16}
  wo: {shape: [H * hd, D], dtype: bf16}
  mlp_norm_w: {shape: [D], dtype: bf16}
  w_gate: {shape: [D, F], dtype: bf16}
  w_up: {shape: [D, F], dtype: bf16}
  w_down: {shape: [F, D], dtype: bf16}
"""
_MIX_LAYER = """\
- {name: attn_norm, kind: rmsnorm, eps: 1.0e-5, inputs: [x, attn_norm_w], outputs: [xn]}
- {name: q_proj, kind: matmul, inputs: [xn, wq], outputs: [q3]}
- {name: k_proj, kind: matmul, inputs: [xn, wk], outputs: [k3]}
- {name: v_proj, kind: matmul, inputs: [xn, wv], outputs: [v3]}
- {name: q_split, kind: reshape, shape: [B, S, H, hd], inputs: [q3], outputs: [q4]}
- {name: k_split, kind: reshape, shape: [B, S, H, hd], inputs: [k3], outputs: [k4]}
- {name: v_split, kind: reshape, shape: [B, S, H, hd], inputs: [v3], outputs: [v4]}
- {name: q_heads, kind: permute, dims: [0, 2, 1, 3], inputs: [q4], outputs: [q]}
- {name: k_heads, kind: permute, dims: [0, 2, 1, 3], inputs: [k4], outputs: [k]}
- {name: v_heads, kind: permute, dims: [0, 2, 1, 3], inputs: [v4], outputs: [v]}
- {name: q_rope, kind: rotary, inputs: [q, cos, sin], outputs: [q_rot]}
- {name: k_rope, kind: rotary, inputs: [k, cos, sin], outputs: [k_rot]}
- {name: qk, kind: matmul, transpose_b: true, inputs: [q_rot, k_rot], outputs: [scores]}
- {name: scale, kind: scale, factor: 0.08838834764831845, inputs: [scores], outputs: [scaled]}
- {name: mask, kind: causal_mask, inputs: [scaled], outputs: [masked]}
- {name: softmax, kind: softmax, inputs: [masked], outputs: [p]}
- {name: pv, kind: matmul, inputs: [p, v], outputs: [o]}
- {name: o_merge, kind: permute, dims: [0, 2, 1, 3], inputs: [o], outputs: [o4]}
- {name: o_flat, kind: reshape, shape: [B, S, H * hd], inputs: [o4], outputs: [o3]}
- {name: o_proj, kind: matmul, inputs: [o3, wo], outputs: [attn_out]}
- {name: attn_residual, kind: add, inputs: [x, attn_out], outputs: [h]}
- {name: mlp_norm, kind: rmsnorm, eps: 1.0e-5, inputs: [h, mlp_norm_w], outputs: [hn]}
- {name: gate, kind: matmul, inputs: [hn, w_gate], outputs: [g]}
- {name: up, kind: matmul, inputs: [hn, w_up], outputs: [u]}
- {name: silu, kind: silu, inputs: [g], outputs: [g_act]}
- {name: mul, kind: mul, inputs: [g_act, u], outputs: [m]}
- {name: down, kind: matmul, inputs: [m, w_down], outputs: [mlp_out]}
- {name: mlp_residual, kind: add, inputs: [h, mlp_out], outputs: [y]}
"""
_MIX_HEAD = """\
params: {B: 1, S: 512, D: 1024, H: 8, hd: 128, F: 2816, layers: %d}
tensors:
  x: {shape: [B, S, D], dtype: bf16}
  cos: {shape: [S, hd], dtype: bf16}
  sin: {shape: [S, hd], dtype: bf16}
"""


def mix_yaml(n_ops: int) -> tuple[str, int]:
    """Llama-style prefill layers (eager attention) as one `repeat` block, enough of them for
    about `n_ops` ops; the report folds the layers' kernels into one point each."""
    layers = max(1, round(n_ops / MIX_LAYER_OPS))
    indent = lambda text, n: "".join(" " * n + line + "\n" for line in text.splitlines())
    return (f"name: layer_mix_{layers}\n" + _MIX_HEAD % layers
            + "ops:\n  - repeat: layers\n    name: layer\n    carry: {x: y}\n    tensors:\n"
            + indent(_MIX_WEIGHTS, 4) + "    ops:\n" + indent(_MIX_LAYER, 6)), layers * MIX_LAYER_OPS


def traced_yaml(n_ops: int) -> tuple[str, int]:
    """The `mix` layers written out flat with distinct names (l0_q_proj, ...), as a traced
    model is: no kernel folds with another in the report."""
    import re
    layers = max(1, round(n_ops / MIX_LAYER_OPS))
    weights = re.findall(r"^  (\w+): (.*)$", _MIX_WEIGHTS, re.M)
    local = {w for w, _ in weights} | set(re.findall(r"outputs: \[(\w+)\]", _MIX_LAYER))
    tensors, ops = [], []
    for i in range(layers):
        tensors += [f"  l{i}_{w}: {spec}" for w, spec in weights]

        def rename(m, i=i):
            t = m.group(0)
            if t == "x":
                return f"l{i - 1}_y" if i else "x"
            return f"l{i}_{t}" if t in local else t
        for line in _MIX_LAYER.splitlines():
            head, rest = line.split("inputs:", 1)
            head = re.sub(r"name: (\w+)", lambda m: f"name: l{i}_{m.group(1)}", head)
            ops.append("  " + head + "inputs:" + re.sub(r"\b\w+\b", rename, rest))
    return (f"name: traced_mix_{layers}\n" + _MIX_HEAD % layers + "\n".join(tensors)
            + "\nops:\n" + "\n".join(ops) + "\n"), layers * MIX_LAYER_OPS


def _cli(args: list[str]) -> tuple[float, float]:
    """Run `python -m rooflab.cli ARGS` from this checkout; returns (wall seconds, the child's
    peak resident memory in MB). Exits on failure with the command's stderr."""
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "rooflab.cli", *args], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"rooflab {' '.join(args)} failed ({child.returncode}):\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--predict-ops", type=int, default=100_000)
    ap.add_argument("--report-ops", type=int, default=10_000)
    ap.add_argument("--hardware", default="h200")
    a = ap.parse_args(argv)
    predict_target, report_target = PREDICT_TARGET_S, REPORT_TARGET_S
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; "
          f"targets: fused predict of {a.predict_ops} ops < {predict_target:.1f} s, "
          f"report of {a.report_ops} ops < {report_target:.1f} s")
    missed = []
    with tempfile.TemporaryDirectory() as d:
        for shape, make in (("chain", chain_yaml), ("mix", mix_yaml), ("traced", traced_yaml)):
            for task, n, target in (("predict", a.predict_ops, predict_target),
                                    ("report", a.report_ops, report_target)):
                path = Path(d) / f"{shape}_{n}.yaml"
                text, n_ops = make(n)
                path.write_text(text)
                if task == "predict":
                    args = ["predict", str(path), "-H", a.hardware, "-s", "fused"]
                else:
                    args = ["report", str(path), "-H", a.hardware, "--compare", "unfused,fused",
                            "-o", str(Path(d) / f"{shape}_{n}.html"), "--force"]
                wall, rss = _cli(args)
                ok = wall < target
                print(f"{task:8s} {shape:6s} {n_ops:7d} ops: {wall:6.2f} s "
                      f"(target {target:.1f} s, {'ok' if ok else 'MISSED'}), "
                      f"peak RSS {rss:.0f} MB")
                if not ok:
                    missed.append(f"{task} {shape}")
    if missed:
        print("missed: " + ", ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
