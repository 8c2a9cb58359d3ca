"""Sweep rooflab/validate/kernels/bmm_pingpong.py (the Gluon ping-pong QKᵀ kernel) on the GPU:
units of SHARE column tiles sharing one block of Q, Q_SLOTS / K_SLOTS / EPI shared-memory slots.

    PYTHONPATH=. python3 lab/gluon_qk_shared.py                 # compile each config for sm_90
    lab/gluon_qk_shared.sh [B*H S]                             # time them, one process each
    PYTHONPATH=. python3 lab/gluon_qk_shared.py --case B*H S SHARE NPROG [Q K EPI REPEAT]

Rounds 22-23 (lab/gpu_tune.md): with a shared ring of 3 K slots the kernel faulted at full
size (a consumer could pass a slot's barrier one phase early); with each K slot owned by one
consumer every configuration ran exact, and SHARE = 2 was fastest (173-174 µs against 178-179 for
bmm.py and 169-172 for cuBLAS at B*H = 64, S = 2048). The strided-pair unit layout that round 23
also tried (benchmarks/gluon_qk_shared.py at commit 45766d8) is not kept: it did not help.
"""

from __future__ import annotations

import sys

import torch

CONFIGS = [  # (SHARE, Q_SLOTS, K_SLOTS, EPI)
    (2, 2, 2, 1), (4, 2, 2, 1), (8, 2, 2, 1), (16, 2, 2, 1), (16, 1, 4, 1), (16, 1, 2, 2),
]


def one_case(batch: int, seq: int, share: int, nprog: int, q_slots: int = 2, k_slots: int = 2,
             epi: int = 1, repeat: int = 1) -> None:
    """One shape and configuration (share 0: cuBLAS and bmm.py instead), checked against torch.bmm before and after timing, then timed as the suite times
    kernels, `repeat` times. Each case runs in a process of its own, so that a fault ends that
    case only."""
    from rooflab.validate.kernels import bmm, bmm_pingpong
    from rooflab.validate.timing import bench_kernel
    torch.manual_seed(0)
    q = torch.randn(batch, seq, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, seq, 128, device="cuda", dtype=torch.bfloat16)
    nbytes = 2 * (q.numel() + k.numel() + batch * seq * seq)
    ref = torch.bmm(q, k.transpose(1, 2))

    def rel(c):
        torch.cuda.synchronize()
        return ((c.float() - ref.float()).norm() / ref.float().norm()).item()

    if share == 0:
        cases = [("cublas", lambda: torch.bmm(q, k.transpose(1, 2))),
                 ("bmm.py", lambda: bmm.launch_bmm(q, k, True))]
    else:
        cases = [(f"bmm_pingpong SHARE={share} Q_SLOTS={q_slots} K_SLOTS={k_slots} EPI={epi} "
                  f"nprog={nprog}", lambda: bmm_pingpong.launch_bmm_nt(
                      q, k, share, q_slots, k_slots, epi, nprog))]
    for _ in range(repeat):
        for name, fn in cases:
            err = rel(fn())
            p50, p20, p80, how = bench_kernel(fn)
            err_after = rel(fn())
            print(f"{name} B={batch} S={seq}: err {err:.2e} (after timing {err_after:.2e}) "
                  f"{p50 * 1e6:.1f} us (p20 {p20 * 1e6:.1f}, p80 {p80 * 1e6:.1f}) "
                  f"{nbytes / p50 / 1e12:.2f} TB/s {how}", flush=True)


if __name__ == "__main__":
    if "--case" in sys.argv:
        one_case(*[int(x) for x in sys.argv[sys.argv.index("--case") + 1:]])
    else:
        from rooflab.validate.kernels import bmm_pingpong
        for cfg in CONFIGS:
            ck = bmm_pingpong.compile_sm90(64, 2048, 2048, share=cfg[0], q_slots=cfg[1],
                                           k_slots=cfg[2], epi=cfg[3])
            print(f"(SHARE, Q_SLOTS, K_SLOTS, EPI) = {cfg}: {ck.metadata.shared} bytes of shared memory")
