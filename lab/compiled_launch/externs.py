"""What one more extern call costs a torch.compile'd call on the host, by kind: chains of k
GEMMs (x @ W_i, cuBLAS through ATen) and of k SDPA calls (the output the next call's query), at
sizes where the call is host-bound. The torch suite's calibration cases hold at most 8 extern
calls a case, of both kinds mixed; a decode step holds 130 to 200 (lab/compiled_steps).

    python lab/compiled_launch/externs.py OUT.json
As measure.py: per k, the module compiled (default mode), warmed, its call timed in 7 windows of
back-to-back calls (torch_run's clock), one call profiled for the kernels Inductor ran.
"""
import json
import sys

import torch
import torch.nn.functional as F

from rooflab.validate.torch_compare import inductor_kernel_counts
from rooflab.validate.torch_run import _Clock, _profile, host_constants, per_call_kernels, provenance

KS = (1, 4, 16, 32)
WINDOWS = 7
CALLS = 200


class MmChain(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(k, 256, 256) * 0.06)

    def forward(self, x):
        for w in self.w:
            x = x @ w
        return x


class SdpaChain(torch.nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, q, kv):
        for _ in range(self.k):
            q = F.scaled_dot_product_attention(q, kv, kv, is_causal=False)
        return q


def main(path: str) -> None:
    clock = _Clock(torch, "cuda")
    doc = {"provenance": provenance(torch, "cuda", " ".join(sys.argv)),
           "host": host_constants(torch, "cuda"), "cases": []}
    bf = dict(device="cuda", dtype=torch.bfloat16)
    x = torch.randn(16, 256, **bf)
    q, kv = torch.randn(1, 8, 16, 64, **bf), torch.randn(1, 8, 128, 64, **bf)
    chains = {"mm": (MmChain, (x,)), "sdpa": (SdpaChain, (q, kv))}
    with torch.no_grad():
        for kind, (cls, args) in chains.items():
            for k in KS:
                torch._dynamo.reset()
                cm = torch.compile(cls(k).to(**bf))
                call = lambda: cm(*args)          # noqa: E731
                clock.warm(call, 5)
                windows = clock.windows_us(call, CALLS, WINDOWS)
                eager = cls(k).to(**bf)
                eager_windows = clock.windows_us(lambda: eager(*args), CALLS, 3)
                per = per_call_kernels(_profile(torch, call, 3), 3) or []
                names = [p["name"] for p in per]
                doc["cases"].append({"chain": kind, "k": k,
                                     "compiled_windows_us": [round(w, 3) for w in windows],
                                     "eager_windows_us": [round(w, 3) for w in eager_windows],
                                     "counts": inductor_kernel_counts(names), "kernels": names,
                                     "kernel_us": [p["us"] for p in per]})
                print(kind, k, round(min(windows), 1), round(min(eager_windows), 1),
                      inductor_kernel_counts(names), flush=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
