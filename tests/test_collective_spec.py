"""A spec with measured collective paths (rooflab/validate/collective_spec.py, collective_fit.py,
`rooflab calibrate --collectives`): a sweep made from two known paths is fitted back to them, and
the written spec prices the measured GPU count with them and the others with the published
paths. Times by hand from rooflab/collectives.py's formula."""

import json
import re

import pytest
import yaml
from typer.testing import CliRunner

from rooflab import api
from rooflab import collectives as c
from rooflab.errors import RooflabError
from rooflab.cli import app
from rooflab.validate import collective_fit, collective_spec


def run_cli(args):
    return CliRunner().invoke(app, args)

GB = 1024 ** 3
SIZES = tuple(4096 << k for k in range(19))           # 4 KB .. 1 GB, as nccl_bench sweeps
# the machine the sweep stands for: LL at 2.5 us per ring step and 150 GB/s, Simple at 8 us, 380 GB/s
LL = c.Path("ll", frozenset(c.KINDS), 2.5e-6, 150e9, "ring")
SIMPLE = c.Path("simple", frozenset(c.KINDS), 8e-6, 380e9, "ring")


def _run(world=4, kinds=c.KINDS) -> dict:
    rows = {}
    for kind in kinds:
        rows[kind] = []
        for s in SIZES:
            t, _ = c.collective_time((LL, SIMPLE), kind, world, s)
            rows[kind].append([s, t * 1e6, s / t / 1e9, c.bus_factor(kind, world) * s / t / 1e9])
    return {"schema": "rooflab.collective-run/1", "rows": rows,
            "provenance": {"world": world, "backend": "nccl", "gpu": "NVIDIA H200",
                           "nccl": "2.28.9", "torch": "2.11.0", "date_utc": "2026-12-04T00:00:00"}}


def _write(tmp_path, doc, name="h200x4.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_the_fit_finds_the_two_paths_the_sweep_was_made_of():
    # all_reduce on 4 GPUs: LL 6 steps x 2.5 us = 15 us per call, Simple 6 x 8 = 48 us
    sizes = [r[0] for r in _run()["rows"]["all_reduce"]]
    times = [r[1] * 1e-6 for r in _run()["rows"]["all_reduce"]]
    err, paths = collective_fit.fit("all_reduce", 4, sizes, times)
    assert err < 0.01
    (lat1, bw1), (lat2, bw2) = paths
    assert lat1 == pytest.approx(15e-6, rel=0.01) and bw1 == pytest.approx(150e9, rel=0.01)
    assert lat2 == pytest.approx(48e-6, rel=0.01) and bw2 == pytest.approx(380e9, rel=0.01)


def test_measured_paths_are_pinned_to_their_kind_and_gpu_count():
    paths = collective_fit.measured_paths(_run(kinds=("all_gather",)), "CAL-NCCL-4")
    assert sorted(paths) == ["measured-all_gather-4gpu-1", "measured-all_gather-4gpu-2"]
    slow = paths["measured-all_gather-4gpu-1"]
    assert slow["kinds"] == ["all_gather"] and slow["measured_gpus"] == 4
    # 3 ring steps of an all_gather on 4 GPUs: 7.5 us per call / 3 = 2.5 us per step
    assert slow["step_latency_us"]["value"] == pytest.approx(2.5, rel=0.01)
    assert slow["busbw_gb_per_s"]["source"] == "CAL-NCCL-4"


def test_calibrate_collectives_from_a_run_writes_a_spec_that_prices_it(tmp_path):
    run = _write(tmp_path, _run())
    out = tmp_path / "h200x4.yaml"
    r = run_cli(["calibrate", "--collectives", "--from", str(run), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "fitted: median |error| 64 KB..1 GB" in r.output
    spec = yaml.safe_load(out.read_text())
    assert "NCCL 2.28.9" in spec["sources"]["CAL-NCCL-4"] and str(run) in spec["sources"]["CAL-NCCL-4"]
    hw = api.load_hardware(str(out))
    # 1 GB all_reduce on 4 GPUs: Simple, 6 x 8 us + 1.5 x 1 GiB / 380 GB/s = 4.2864 ms
    t, name = c.collective_time(hw.collective_paths, "all_reduce", 4, GB)
    assert name.startswith("measured-all_reduce-4gpu") and t == pytest.approx(4.2864e-3, rel=0.01)
    # on 8 GPUs the published paths stay: NVLS, 70.2 us + 1.75 x 1 GiB / 457 GB/s = 4.182 ms
    t, name = c.collective_time(hw.collective_paths, "all_reduce", 8, GB)
    assert name == "nvls" and t == pytest.approx(70.2e-6 + 1.75 * GB / 457e9, rel=1e-6)


@pytest.mark.parametrize("doc, problem", [
    ({"schema": "rooflab.collective-run/1", "provenance": {"world": 1}, "rows": {}},
     "a one-GPU run has no collective to fit"),
    ({"schema": "something-else"}, r"not a collective run"),
    ({"schema": "rooflab.collective-run/1", "provenance": {"world": 4},
      "rows": {"gossip": []}}, r"rows\.gossip: unknown collective"),
])
def test_bad_runs_are_one_line_naming_the_file(tmp_path, doc, problem):
    run = _write(tmp_path, doc)
    r = run_cli(["calibrate", "--collectives", "--from", str(run), "-o", str(tmp_path / "o.yaml")])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert str(run) in r.output and re.search(problem, r.output), r.output
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.yaml").exists()


def test_a_run_with_no_collective_or_no_run_is_refused(tmp_path):
    empty = _write(tmp_path, {**_run(), "rows": {}}, "empty.json")
    r = run_cli(["calibrate", "--collectives", "--from", str(empty), "-o", str(tmp_path / "o.yaml")])
    assert r.exit_code == 2 and "the run holds no collective" in r.stderr
    r = run_cli(["calibrate", "--collectives", "--from", ",", "-o", str(tmp_path / "o.yaml")])
    assert r.exit_code == 2 and "no collective run to fit" in r.stderr
    assert not (tmp_path / "o.yaml").exists()


def test_a_refit_replaces_the_base_spec_s_own_measurement(tmp_path):
    first = tmp_path / "first.yaml"
    assert run_cli(["calibrate", "--collectives", "--from", str(_write(tmp_path, _run())),
                    "-o", str(first)]).exit_code == 0
    second = tmp_path / "second.yaml"
    assert run_cli(["calibrate", "--collectives", "--base", str(first), "--from",
                    str(_write(tmp_path, _run(kinds=("all_gather",)), "ag.json")),
                    "-o", str(second)]).exit_code == 0
    paths = yaml.safe_load(second.read_text())["interconnect"]["collectives"]
    assert sorted(n for n in paths if n.startswith("measured")) == [
        "measured-all_gather-4gpu-1", "measured-all_gather-4gpu-2"]


def test_two_runs_on_one_gpu_count_are_refused(tmp_path):
    a, b = _write(tmp_path, _run(), "a.json"), _write(tmp_path, _run(), "b.json")
    r = run_cli(["calibrate", "--collectives", "--from", f"{a},{b}", "-o", str(tmp_path / "o.yaml")])
    assert r.exit_code == 2 and "a second run on 4 GPUs" in r.output


def test_gpu_counts_measured():
    assert collective_spec.worlds(8) == [2, 4, 8]
    assert collective_spec.worlds(6) == [2, 4, 6]
    assert collective_spec.worlds(2) == [2]
    with pytest.raises(RooflabError, match="needs at least 2 GPUs; this machine has 1"):
        collective_spec.worlds(1)


def test_measure_saves_one_run_per_gpu_count_on_cpu_processes(tmp_path):
    pytest.importorskip("torch")
    files = collective_spec.measure(tmp_path / "runs", "cpu", "2026-12-04", "test",
                                    log=lambda m: None, backend="gloo", gpu_count=2,
                                    sizes=(4096, 65536))
    assert [f.name for f in files] == ["cpux2-2026-12-04.json"]
    doc = collective_spec.read_run(files[0])
    assert doc["provenance"]["world"] == 2 and set(doc["rows"]) == {"all_reduce", "send_recv"}
