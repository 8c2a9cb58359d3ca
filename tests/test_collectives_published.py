"""The bundled specs' collective paths against published collective benchmarks (issue 16).

For each spec with a published all_reduce table (tests/data/nccl_published.yaml: every sweep names
its source, commit and lines), the time rooflab/collectives.py gives with the spec's
`interconnect.collectives` paths is compared with the published time at every size from 8 KB to
1 GB (2^13 .. 2^30 bytes). Where the source prints busbw only, the published time is
size x bus factor / busbw (nccl-tests doc/PERFORMANCE.md). The paths were fitted to these tables
by lab/collectives/fit.py; the worst errors are pinned as fitted, and docs/collectives.md lists
them row by row.
"""

from pathlib import Path

import numpy as np
import pytest
import yaml

from rooflab import collectives as c
from rooflab import hardware

DATA = yaml.safe_load((Path(__file__).parent / "data" / "nccl_published.yaml").read_text())
LO, HI = 8 * 1024, 1024 ** 3
SPECS = Path(__file__).resolve().parents[1] / "hardware_specs"


def published(system: str, sweep: int, kind: str, n: int):
    """(sizes, seconds) of one published sweep, 8 KB .. 1 GB."""
    rows = DATA[system]["sweeps"][sweep][kind]
    sizes, times = [], []
    for size, t_us, _, bus in rows:
        if LO <= size <= HI:
            sizes.append(float(size))
            times.append(t_us * 1e-6 if t_us is not None
                         else c.bus_factor(kind, n) * size / (bus * 1e9))
    return np.array(sizes), np.array(times)


# spec, published system, sweep, GPU count (None: the data file's), tolerance, worst error as
# fitted (signed, at the size it occurs), why the tolerance is what it is
CASES = [
    ("h100-sxm", "h100-sxm-8", 0, None, 0.15, (-0.1216, 16 * 2 ** 20)),
    ("h200", "h200-8", 0, None, 0.15, (+0.0455, 2 ** 19)),
    (str(SPECS / "measured" / "h200.yaml"), "h200-8", 0, None, 0.15, (+0.0455, 2 ** 19)),
    # a torch.distributed sweep (all_reduce_bench.py), not nccl-tests: torch's per-call overhead
    # is in the published times, and so in the fitted latencies
    ("b200", "b200-8", 0, None, 0.15, (+0.1394, 2 * 2 ** 20)),
    # NVL72 across 72 GPUs: only 512 MiB and 1 GiB are published within 8 KB .. 1 GB
    ("gb200", "gb200-nvl72", 0, None, 0.15, (+0.0004, 2 ** 29)),
    # Azure ND GB200 v6: the source does not give the GPU count; read as the 4 GPUs of one VM
    # (its 8 GiB Ring busbw, 680 GB/s, matches B200's 4-GPU Ring 673 GB/s)
    ("gb200", "gb200-azure-nd-v6", 0, 4, 0.15, (-0.1024, 2 ** 15)),
    # A100 cannot reach 15 %: the published table is not concave in size (1.0-4.2 MiB all take
    # ~101 us, then 16 MiB takes 2.07x the time of 8 MiB for 2x the bytes), and a fastest-of-paths
    # alpha-beta time is concave, so no set of paths meets every row. 17.4 % is the best the fit
    # found with two or three ring paths (lab/collectives/fit.py a100-sxm-8 all_reduce); the check
    # is at that error, not at a round number above it.
    ("a100-sxm-80gb", "a100-sxm-8", 0, None, 0.175, (-0.1742, 16 * 2 ** 20)),
]


@pytest.mark.parametrize("spec, system, sweep, gpus, tol, worst", CASES,
                         ids=[f"{Path(c_[0]).stem}-{c_[1]}" for c_ in CASES])
def test_all_reduce_matches_published(spec, system, sweep, gpus, tol, worst):
    hw = hardware.load(spec)
    n = gpus or int(DATA[system]["gpus"])
    sizes, times = published(system, sweep, "all_reduce", n)
    assert sizes.min() <= 2 ** 30 and len(sizes) >= 2
    model, _ = c.collective_time(hw.collective_paths, "all_reduce", n, sizes)
    err = model / times - 1
    bad = [(int(s), f"{e:+.1%}") for s, e in zip(sizes, err) if abs(e) > tol]
    assert not bad, f"{spec} vs {system}: rows beyond {tol:.0%}: {bad}"
    i = int(np.abs(err).argmax())
    assert (round(float(err[i]), 4), int(sizes[i])) == pytest.approx(worst, abs=1e-4)


def test_h100_8kb_and_1gb_by_hand():
    """h100-sxm at 8 GPUs: ll 14 x 1.42 us + 1.75 x 8192 / 3.4 GB/s = 24.1 us against the
    published 8192 x 1.75 / 0.53 GB/s = 27.0 us; nvls at 1 GiB 40.1 us + 1.75 x 2^30 / 420 GB/s
    = 4514 us against 2^30 x 1.75 / 466.35 GB/s = 4029 us (+12.0 %)."""
    paths = hardware.load("h100-sxm").collective_paths
    t, name = c.collective_time(paths, "all_reduce", 8, 8192)
    assert name == "ll" and t == pytest.approx(14 * 1.42e-6 + 1.75 * 8192 / 3.4e9)
    assert t == pytest.approx(24.10e-6, abs=0.01e-6)
    t, name = c.collective_time(paths, "all_reduce", 8, 2 ** 30)
    assert name == "nvls" and t == pytest.approx(40.1e-6 + 1.75 * 2 ** 30 / 420e9)
    assert t / (2 ** 30 * 1.75 / 466.35e9) - 1 == pytest.approx(0.120, abs=0.001)


def test_other_kinds_use_the_inferred_ring_where_nvls_cannot():
    """all_gather has no published 8x H100 sweep: it runs on the ring path inferred from 8x H200
    (361 GB/s): at 1 GiB 7 x 2.12 us + 0.875 x 2^30 / 361 GB/s = 2617 us."""
    paths = hardware.load("h100-sxm").collective_paths
    t, name = c.collective_time(paths, "all_gather", 8, 2 ** 30)
    assert name == "ring" and t == pytest.approx(7 * 2.12e-6 + 0.875 * 2 ** 30 / 361e9)


def test_l40s_has_no_published_table():
    """No published nccl-tests table for an L40S PCIe box was found (the data file says why);
    its path is an inference and nothing here checks it against a benchmark."""
    assert "missing" in DATA["l40s-pcie-8"] and "sweeps" not in DATA["l40s-pcie-8"]
    pytest.skip("l40s: " + " ".join(DATA["l40s-pcie-8"]["missing"].split()[:12]) + " ...")


@pytest.mark.parametrize("spec", ["h100-sxm", "h200", "b200", "gb200"])
def test_network_path_is_one_400g_nic_per_gpu(spec):
    """Across nodes: one 400 Gb/s NIC per GPU, 46 GB/s busbw (nccl-tests #290)."""
    (p,) = hardware.load(spec).network_paths
    assert p.busbw_bytes_per_s == 46e9 and p.scaling == "ring"


@pytest.mark.parametrize("spec, first_nvls", [("h100-sxm", 5), ("h200", 5), ("b200", 6),
                                              ("gb200", 5)])
def test_nvls_only_from_the_gpu_count_nccl_uses_it_at(spec, first_nvls):
    """NCCL runs an all_reduce on NVLS from 5 GPUs (H100/H200, GB200 partitions) or 6 (B200),
    Ring below: at 1 GiB the nvls path is taken from `first_nvls` GPUs on, never below."""
    paths = hardware.load(spec).collective_paths
    assert c.collective_time(paths, "all_reduce", first_nvls, 2 ** 30)[1] == "nvls"
    for n in range(2, first_nvls):
        assert c.collective_time(paths, "all_reduce", n, 2 ** 30)[1] != "nvls"


def test_h100_two_gpu_all_reduce_by_hand():
    """2x H100, 512 KiB (a TP=2 block's output, [2, 64, 2048] bf16): Ring, 2 steps x 2.12 us +
    2 (2-1)/2 x 524,288 B / 361 GB/s = 4.24 + 1.452 = 5.692 us; the 8-GPU NVLS path would have
    said 40.1 + 1.248 = 41.35 us."""
    paths = hardware.load("h100-sxm").collective_paths
    t, name = c.collective_time(paths, "all_reduce", 2, 524288)
    assert name == "ring-allreduce" and t == pytest.approx(5.692e-6, abs=0.001e-6)
