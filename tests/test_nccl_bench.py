"""Collectives through torch.distributed (rooflab/validate/nccl_bench.py) and their comparison
with the collective model (rooflab/validate/collective_compare.py). On CPU processes with gloo;
on one GPU with NCCL where there is one. Times by hand from the model's formulas."""

import pytest

from rooflab.collectives import Path
from rooflab.errors import RooflabError
from rooflab.validate import collective_compare as cc

torch = pytest.importorskip("torch")

from rooflab.validate import nccl_bench  # noqa: E402


def _doc(rows, world=8, multicast_off=True):
    prov = {"world": world}
    if multicast_off:
        prov["multicast_off"] = nccl_bench.MULTICAST_OFF
    return {"schema": nccl_bench.SCHEMA, "provenance": prov, "rows": rows}


def test_two_cpu_processes_run_and_time_their_collectives():
    doc = nccl_bench.run(2, "gloo", nccl_bench.GLOO_KINDS, sizes=(4096, 65536), warmup=1,
                         iters=2, command="test")
    cc.check(doc)
    assert doc["provenance"]["world"] == 2 and doc["provenance"]["multicast_off"]
    assert set(doc["rows"]) == {"all_reduce", "send_recv"}
    for kind, rows in doc["rows"].items():
        assert [r[0] for r in rows] == [4096, 65536]
        for size, us, algbw, bus in rows:
            assert algbw == pytest.approx(size / (us * 1e3), rel=1e-3)
            # nccl-tests' bus factors: all_reduce 2(n-1)/n = 1 at n = 2, send/recv 1
            assert bus == pytest.approx(algbw, rel=1e-3)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_nccl_with_one_rank_on_the_gpu():
    doc = nccl_bench.run(1, "nccl", ("all_reduce",), sizes=(4096, 1 << 20), warmup=2,
                         iters=5, command="test")
    assert doc["provenance"]["nccl"] and "send_recv" not in doc["rows"]
    assert [r[0] for r in doc["rows"]["all_reduce"]] == [4096, 1 << 20]


def test_compare_by_hand():
    # one ring path, 2 us a step and 100 GB/s: an 8-GPU all_reduce of 1 MiB takes
    # 14 x 2 us + 1.75 x 1048576 B / 100 GB/s = 28 + 18.35 = 46.35 us; measured 50 us: -7.3 %
    from dataclasses import replace
    from rooflab import api
    ring = Path("ring", frozenset({"all_reduce"}), 2e-6, 100e9)
    nvls = Path("nvls", frozenset({"all_reduce"}), 1e-6, 1e12, scaling="switch", min_gpus=5)
    hw = replace(api.load_hardware("h200"), collective_paths=(ring, nvls))
    (row,) = cc.compare(_doc({"all_reduce": [[1048576, 50.0, 20.97, 36.7]]}), hw)
    assert row.path == "ring"                       # multicast off: no switch path
    assert row.predicted_us == pytest.approx(46.35, abs=0.01)
    assert row.error == pytest.approx(46.35 / 50 - 1, abs=1e-4)
    (on,) = cc.compare(_doc({"all_reduce": [[1048576, 50.0, 20.97, 36.7]]},
                            multicast_off=False), hw)
    assert on.path == "nvls"                        # 1 us + 1.835 us
    assert cc.summary([row])["all_reduce"] == pytest.approx(abs(row.error))
    assert cc.summary([row], lo=2 << 20) == {}      # 1 MiB is outside 2 MiB .. 1 GiB


def test_fit_path_recovers_a_ring():
    # times made from 2.5 us a step and 300 GB/s on 8 GPUs come back exactly
    sizes = [4096 << k for k in range(0, 19, 3)]
    times = [14 * 2.5e-6 + 1.75 * s / 300e9 for s in sizes]
    lat, bw = cc.fit_path(sizes, times, "all_reduce", 8)
    assert lat == pytest.approx(2.5e-6, rel=1e-6) and bw == pytest.approx(300e9, rel=1e-6)
    # a sweep with no latency at all fits none, not a negative one
    lat, bw = cc.fit_path(sizes, [s / 100e9 for s in sizes], "send_recv", 2)
    assert lat == pytest.approx(0.0, abs=1e-12) and bw == pytest.approx(100e9, rel=1e-6)


@pytest.mark.parametrize("doc, message", [
    ({"schema": "other"}, "not a collective run"),
    (_doc({}, world=0), "provenance.world must be a GPU count"),
    (_doc({"all_sum": []}), "rows.all_sum: unknown collective"),
    (_doc({"all_reduce": [[1024, 2.0]]}), "each [size, time_us, algbw, busbw]"),
    (_doc({"all_reduce": [["1 KB", 2.0, 1.0, 1.0]]}), "each [size, time_us, algbw, busbw]"),
    (_doc({"all_reduce": []}), "one or more rows"),
    (_doc([]), "rows must map each collective to its rows"),
    ({"schema": nccl_bench.SCHEMA, "provenance": [], "rows": {}}, "provenance.world must be"),
])
def test_a_bad_run_is_one_line(doc, message):
    with pytest.raises(RooflabError, match=message.replace("[", r"\[").replace("]", r"\]")):
        cc.check(doc, "run.json")
