"""Collectives priced by rooflab/collectives.py: bytes and times worked out by hand."""

import math

import pytest

from rooflab import collectives as c

# two paths, as a spec lists them: a ring at 2 us per step and 360 GB/s of bus bandwidth, and
# a switch reduction (all_reduce only) at 12 us and 470 GB/s
RING = c.Path("ring", frozenset(c.KINDS), 2e-6, 360e9, "ring")
NVLS = c.Path("nvls", frozenset({"all_reduce"}), 12e-6, 470e9, "switch")
PATHS = (RING, NVLS)
KB, MB, GB = 8 * 1024, 1024 ** 2, 1024 ** 3


@pytest.mark.parametrize("kind, size, want_s, path", [
    # all_reduce on 8: ring 14 steps x 2 us + 2*7/8 * size / 360e9; switch 12 us + same / 470e9
    # 8 KB: ring 14 x 2 us + 1.75 * 8192 / 360e9 = 28.04 us; switch 12.03 us: the switch
    ("all_reduce", KB, 12e-6 + 1.75 * KB / 470e9, "nvls"),
    ("all_reduce", MB, 12e-6 + 1.75 * MB / 470e9, "nvls"),                   # 15.90 us
    ("all_reduce", GB, 12e-6 + 1.75 * GB / 470e9, "nvls"),                   # 4.010 ms
    # all_gather / reduce_scatter / all_to_all: 7 steps + 7/8 * size / 360e9 (ring only)
    ("all_gather", KB, 7 * 2e-6 + 0.875 * KB / 360e9, "ring"),
    ("reduce_scatter", MB, 7 * 2e-6 + 0.875 * MB / 360e9, "ring"),
    ("all_to_all", GB, 7 * 2e-6 + 0.875 * GB / 360e9, "ring"),
    ("all_gather", GB, 7 * 2e-6 + 0.875 * GB / 360e9, "ring"),               # 2.624 ms
    # send/recv: one step and the whole message
    ("send_recv", KB, 2e-6 + KB / 360e9, "ring"),
    ("send_recv", MB, 2e-6 + MB / 360e9, "ring"),
    ("send_recv", GB, 2e-6 + GB / 360e9, "ring"),                            # 2.985 ms
])
def test_collective_time_by_hand(kind, size, want_s, path):
    t, chosen = c.collective_time(PATHS, kind, 8, size)
    assert t == pytest.approx(want_s, rel=1e-12) and chosen == path


def test_bus_bytes_are_nccl_tests_factors():
    assert c.bus_factor("all_reduce", 8) == 1.75
    assert c.bus_factor("all_gather", 8) == c.bus_factor("all_to_all", 8) == 0.875
    assert c.bus_factor("send_recv", 8) == 1.0
    # busbw at 1 GB on the ring: 1.75 * GB / t, close to the path's 360 GB/s
    t = 14 * 2e-6 + 1.75 * GB / 360e9
    assert c.busbw((RING,), "all_reduce", 8, GB) == pytest.approx(1.75 * GB / t)


def test_steps_grow_with_gpus_per_scaling():
    assert [c.steps("ring", "all_reduce", n) for n in (2, 4, 8, 16)] == [2, 6, 14, 30]
    assert [c.steps("tree", "all_reduce", n) for n in (2, 4, 8, 16)] == [2, 4, 6, 8]
    assert c.steps("switch", "all_reduce", 8) == c.steps("ring", "send_recv", 64) == 1
    assert c.steps("tree", "all_gather", 72) == math.ceil(math.log2(72)) == 7


def test_one_gpu_moves_nothing_and_a_missing_path_is_an_error():
    assert c.collective_time(PATHS, "all_reduce", 1, GB) == (0.0, "none")
    with pytest.raises(ValueError):
        c.collective_time((NVLS,), "all_gather", 8, MB)


def test_arrays_of_sizes_take_each_its_fastest_path():
    import numpy as np
    sizes = np.array([1024.0, GB])
    t, names = c.collective_time(PATHS, "all_reduce", 8, sizes)
    # 1 KB: ring 28.0 us vs switch 12.0 us; 1 GB: switch
    assert list(names) == ["nvls", "nvls"]
    t2, names2 = c.collective_time((RING,), "all_reduce", 8, sizes)
    assert t2[0] == pytest.approx(28e-6 + 1.75 * 1024 / 360e9)


# a Ring/Simple all_reduce path at 3 us per step and 400 GB/s, that NCCL leaves to the switch
SIMPLE = c.Path("ring-allreduce", frozenset({"all_reduce"}), 3e-6, 400e9, "ring",
                yields_to_switch=True)


def test_a_path_that_yields_to_the_switch_runs_only_without_it():
    # with the switch: 12 us + 1.75 GB / 470e9 = 4.010 ms on nvls, the 400 GB/s ring unused
    t, name = c.collective_time(PATHS + (SIMPLE,), "all_reduce", 8, GB)
    assert name == "nvls" and t == pytest.approx(12e-6 + 1.75 * GB / 470e9, rel=1e-12)
    # multicast off: 14 x 3 us + 1.75 GB / 400e9 = 4.739 ms beats the 360 GB/s ring's 5.248 ms
    t, name = c.collective_time(c.without_switch(PATHS + (SIMPLE,)), "all_reduce", 8, GB)
    assert name == "ring-allreduce" and t == pytest.approx(42e-6 + 1.75 * GB / 400e9, rel=1e-12)
    # an 8 KB all_reduce without the switch: ring 28.04 us against 42.04 us: the ring
    assert c.collective_time(c.without_switch(PATHS + (SIMPLE,)), "all_reduce", 8, KB)[1] == "ring"


def test_measured_paths_alone_price_their_kind_and_gpu_count():
    # fitted on a measured 4-GPU all_gather sweep: 30 us per step (slower than every other path)
    slow = c.Path("measured", frozenset({"all_gather"}), 30e-6, 100e9, "ring", measured_gpus=4)
    paths = PATHS + (slow,)
    # 4 GPUs: 3 steps x 30 us + 3/4 x 1 MB / 100e9 = 97.86 us, though the ring would take 8.2 us
    t, name = c.collective_time(paths, "all_gather", 4, MB)
    assert name == "measured" and t == pytest.approx(90e-6 + 0.75 * MB / 100e9, rel=1e-12)
    # other GPU counts and kinds keep the other paths
    assert c.collective_time(paths, "all_gather", 8, MB)[1] == "ring"
    assert c.collective_time(paths, "reduce_scatter", 4, MB)[1] == "ring"


def test_a_switch_path_competes_beside_measured_paths():
    # measured with multicast off: an 8-GPU all_reduce ring at 3 us per step and 350 GB/s; the
    # published switch path still prices 1 GB: 12 us + 1.75 GB / 470e9 = 4.010 ms < 5.411 ms
    ring = c.Path("measured", frozenset({"all_reduce"}), 3e-6, 350e9, "ring", measured_gpus=8)
    t, name = c.collective_time(PATHS + (ring,), "all_reduce", 8, GB)
    assert name == "nvls" and t == pytest.approx(12e-6 + 1.75 * GB / 470e9, rel=1e-12)
    # without the switch the measurement alone: 14 x 3 us + 1.75 GB / 350e9 = 5.411 ms
    t, name = c.collective_time(c.without_switch(PATHS + (ring,)), "all_reduce", 8, GB)
    assert name == "measured" and t == pytest.approx(42e-6 + 1.75 * GB / 350e9, rel=1e-12)
