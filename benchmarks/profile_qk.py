#!/usr/bin/env python3
"""QKᵀ of the naive-attention suite case (B*H=64, S=2048, D=128) by bmm.py's kernel and by cuBLAS,
each launched a few times, for a profiler (ncu) to compare their memory-system counters:

    ncu --metrics <list> python3 benchmarks/profile_qk.py
"""
import torch

from rooflab.validate.kernels import bmm

q, k = (torch.randn(64, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
for _ in range(3):
    bmm.launch_bmm(q, k, True)
    torch.bmm(q, k.transpose(1, 2))
torch.cuda.synchronize()
