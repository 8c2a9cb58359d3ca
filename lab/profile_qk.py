#!/usr/bin/env python3
"""QKᵀ of the naive-attention suite case (B*H=64, S=2048, D=128) by bmm.py's kernel and by cuBLAS,
each launched a few times, for a profiler (ncu) to compare their memory-system counters:

    ncu --metrics <list> --launch-skip 2 --launch-count 4 python3 lab/profile_qk.py

Round 15 (lab/results/h200-2026-12-02-round15-ncu-qk.log) used the metrics
gpu__time_duration.sum, dram__bytes_read.sum, dram__bytes_write.sum,
dram__throughput.avg.pct_of_peak_sustained_elapsed, lts__throughput.avg.pct_of_peak_sustained_elapsed,
lts__t_bytes.sum, sm__throughput.avg.pct_of_peak_sustained_elapsed,
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed, launch__grid_size,
launch__block_size, launch__cluster_dim_x, launch__shared_mem_per_block_dynamic
(the first two launches skipped are torch.randn's).
"""
import torch

from rooflab.validate.kernels import bmm

q, k = (torch.randn(64, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
for _ in range(3):
    bmm.launch_bmm(q, k, True)
    torch.bmm(q, k.transpose(1, 2))
torch.cuda.synchronize()
