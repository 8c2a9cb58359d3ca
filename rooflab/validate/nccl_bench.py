"""Collectives timed through torch.distributed, one process per GPU, in nccl-tests' conventions.

Each of the collective kinds rooflab prices (rooflab.collectives.KINDS) is run on `world`
processes over message sizes from 4 KB to 1 GB (powers of two), and timed as nccl-tests times
it: a few warm-up calls, then `iters` calls back to back between two barriers, the slowest
rank's time per call. A row is [size bytes, time µs, algbw GB/s, busbw GB/s], the row format of
tests/data/nccl_published.yaml (algbw = size / time; busbw = algbw x bus_factor), with `size` in
rooflab's convention (all_gather: the gathered output; reduce_scatter: its input; all_to_all:
the buffer each rank sends; send_recv: one message, each rank sending to the next in a ring).

NVLink multicast stays off in every process (NCCL_NVLS_ENABLE=0 and the lent machines' other
variables, MULTICAST_OFF): a program that uses it can take a shared host's GPUs out of service.
So NCCL runs all_reduce without NVLS here, whatever the GPU count.

`run(world, ...)` spawns the processes and returns the run document (schema
rooflab.collective-run/1) with its provenance: GPU count and name, `nvidia-smi topo -m`, NCCL
and torch versions. On a machine without GPUs, backend "gloo" runs the kinds gloo has on CPU
processes (the tests). torch is imported only here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

from rooflab.collectives import KINDS, bus_factor
from rooflab.errors import RooflabError
from rooflab.validate.collective_compare import SCHEMA
from rooflab.validate.gpu import git_sha

SIZES = tuple(4096 << k for k in range(19))          # 4 KB .. 1 GB
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
GLOO_KINDS = ("all_reduce", "send_recv")            # what gloo runs on CPU tensors here


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _op(dist, torch, kind: str, size: int, rank: int, world: int, device):
    """A zero-argument call running one `kind` of `size` bytes (rooflab's convention)."""
    elems = max(1, size // 4)
    if kind == "all_reduce":
        t = torch.ones(elems, device=device)
        return lambda: dist.all_reduce(t)
    if kind == "all_gather":
        out = torch.empty(elems // world * world, device=device)
        inp = torch.ones(elems // world, device=device)
        return lambda: dist.all_gather_into_tensor(out, inp)
    if kind == "reduce_scatter":
        inp = torch.ones(elems // world * world, device=device)
        out = torch.empty(elems // world, device=device)
        return lambda: dist.reduce_scatter_tensor(out, inp)
    if kind == "all_to_all":
        inp = torch.ones(elems // world * world, device=device)
        out = torch.empty_like(inp)
        return lambda: dist.all_to_all_single(out, inp)
    send, recv = torch.ones(elems, device=device), torch.empty(elems, device=device)
    peers = ((rank + 1) % world, (rank - 1) % world)

    def ring():
        ops = [dist.P2POp(dist.isend, send, peers[0]), dist.P2POp(dist.irecv, recv, peers[1])]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
    return ring


def _rank_main(rank: int, world: int, port: int, backend: str, kinds, sizes, warmup: int,
               iters: int, queue) -> None:
    os.environ.update(MULTICAST_OFF)
    import torch
    import torch.distributed as dist
    device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    rows: dict[str, list] = {}
    try:
        for kind in kinds:
            if kind == "send_recv" and world < 2:
                continue
            rows[kind] = []
            for size in sizes:
                fn = _op(dist, torch, kind, size, rank, world, device)
                for _ in range(warmup):
                    fn()
                if backend == "nccl":
                    torch.cuda.synchronize()
                dist.barrier()
                t0 = time.perf_counter()
                for _ in range(iters):
                    fn()
                if backend == "nccl":
                    torch.cuda.synchronize()
                per = torch.tensor([(time.perf_counter() - t0) / iters], device=device)
                dist.all_reduce(per, op=dist.ReduceOp.MAX)       # the slowest rank's time
                us = float(per.item()) * 1e6
                algbw = size / (us * 1e3)
                rows[kind].append([size, round(us, 3), float(f"{algbw:.5g}"),
                                   float(f"{algbw * bus_factor(kind, world):.5g}")])
        if rank == 0:
            queue.put(rows)
    finally:
        dist.destroy_process_group()


def provenance(world: int, backend: str, command: str) -> dict:
    import torch
    prov = {"command": command, "world": world, "backend": backend,
            "torch": torch.__version__, "multicast_off": MULTICAST_OFF, "git_sha": git_sha(),
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())}
    if backend == "nccl":
        prov["gpu"] = torch.cuda.get_device_name(0)
        prov["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))
        try:
            prov["topology"] = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True,
                                              text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            prov["topology"] = f"unavailable: {e}"
    return prov


def spawn(fn, nprocs: int, args: tuple) -> None:
    """Run fn(rank, *args) in `nprocs` spawned processes and wait for them; a process that
    fails is a RooflabError naming its rank and its error's last line."""
    import torch.multiprocessing as mp
    try:
        mp.start_processes(fn, args=args, nprocs=nprocs, join=True, start_method="spawn")
    except mp.ProcessRaisedException as e:
        lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
        raise RooflabError(f"rank {e.error_index} of {nprocs} failed: "
                           f"{lines[-1].strip() if lines else e}") from None
    except mp.ProcessExitedException as e:
        raise RooflabError(f"rank {e.error_index} of {nprocs} exited with status "
                           f"{e.exit_code}") from None


def run(world: int, backend: str = "nccl", kinds=KINDS, sizes=SIZES, warmup: int = 5,
        iters: int = 20, command: str = "") -> dict:
    """The run document of `kinds` x `sizes` on `world` processes (one per GPU with nccl):
    {schema, provenance, rows: {kind: [[size, time_us, algbw, busbw], ...]}}."""
    import torch.multiprocessing as mp
    os.environ.update(MULTICAST_OFF)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    spawn(_rank_main, world, (world, free_port(), backend, tuple(kinds), tuple(sizes), warmup,
                              iters, queue))
    return {"schema": SCHEMA, "provenance": provenance(world, backend, command),
            "rows": queue.get()}
