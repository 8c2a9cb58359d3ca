"""What one more Triton kernel costs a torch.compile'd call on the host: chains of k reductions
over alternating axes (a column sum, a broadcast product, a row sum, ...), which Inductor cannot
fuse into fewer than about k kernels, at a size where the call is host-bound.

    python lab/compiled_launch/measure.py OUT.json
For k in KS: the module compiled (default mode), warmed, its call timed in 7 windows of
back-to-back calls (torch_run's clock, as the torch suite times a compiled call), one call
profiled (kernel names); the slope of the call time over the Triton kernels Inductor launched is
the host cost of a launch in its generated wrapper.
"""
import json
import sys

import torch

from rooflab.validate.torch_run import _Clock, _profile, host_constants, per_call_kernels, provenance

KS = (1, 2, 4, 8, 16, 32)
WINDOWS = 7
CALLS = 200


class Alternating(torch.nn.Module):
    """k reductions, each over the other axis of the previous one's broadcast product."""

    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x):
        for i in range(self.k):
            x = x * x.sum(dim=i % 2, keepdim=True)
        return x


def main(path: str) -> None:
    clock = _Clock(torch, "cuda")
    doc = {"provenance": provenance(torch, "cuda", " ".join(sys.argv)),
           "host": host_constants(torch, "cuda"), "cases": []}
    x = torch.randn(16, 1024, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        for k in KS:
            torch._dynamo.reset()
            cm = torch.compile(Alternating(k))
            clock.warm(lambda: cm(x), 5)
            windows = clock.windows_us(lambda: cm(x), CALLS, WINDOWS)
            per = per_call_kernels(_profile(torch, lambda: cm(x), 3), 3) or []
            names = [p["name"] for p in per]
            doc["cases"].append({"k": k, "compiled_windows_us": [round(w, 3) for w in windows],
                                 "kernels": names, "kernel_us": [p["us"] for p in per]})
            print(k, round(min(windows), 1), len(names), flush=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
