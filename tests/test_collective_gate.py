"""The CI gate over committed collective runs (reports/validation/collectives/<gpu>x<n>-<date>.json):
each run is checked and re-predicted on its GPU's datasheet spec, the published-figure model
issue 17 checks (target: median |error| <= 15 % from 64 KB to 1 GB). No multi-GPU run is
committed yet; `test_the_gate_reads_a_committed_tree` checks the gate itself on a made-up tree."""

import json
from pathlib import Path

import pytest

from rooflab import api
from rooflab.errors import RooflabError
from rooflab.validate import collective_compare as cc

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = cc.committed_runs(ROOT)


@pytest.mark.parametrize("path, gpu, doc", COMMITTED, ids=[p.name for p, _, _ in COMMITTED])
def test_committed_collective_runs_against_the_published_model(path, gpu, doc):
    rows = cc.compare(doc, api.load_hardware(gpu))
    assert rows and all(r.measured_us > 0 for r in rows)
    print(cc.render(rows))


def _tree(tmp_path, name, world):
    d = tmp_path / "reports" / "validation" / "collectives"
    d.mkdir(parents=True, exist_ok=True)
    rows = {"all_reduce": [[1048576, 50.0, 20.97, 36.7]]}
    (d / name).write_text(json.dumps({"schema": cc.SCHEMA, "rows": rows,
                                      "provenance": {"world": world,
                                                     "multicast_off": {"NCCL_NVLS_ENABLE": "0"}}}))
    return tmp_path


def test_the_gate_reads_a_committed_tree(tmp_path):
    ((path, gpu, doc),) = cc.committed_runs(_tree(tmp_path, "h200x8-2026-12-05.json", 8))
    assert gpu == "h200" and doc["provenance"]["world"] == 8
    # 8-GPU all_reduce of 1 MiB without NVLS on the h200 spec: Ring/Simple (yields_to_switch)
    # 14 x 2.12 us + 1.75 x 1048576 / 361 GB/s = 29.68 + 5.083 = 34.76 us; ll: 29.68 + 5.94
    (row,) = cc.compare(doc, api.load_hardware(gpu))
    assert row.path == "ring-allreduce" and row.predicted_us == pytest.approx(34.76, abs=0.01)


@pytest.mark.parametrize("name, world, problem", [
    ("h200-2026-12-05.json", 8, "file name is <gpu>x<GPU count>-<date>.json"),
    ("h200x4-2026-12-05.json", 8, "provenance.world is 8; the file name says 4 GPUs"),
])
def test_a_misnamed_run_is_refused(tmp_path, name, world, problem):
    with pytest.raises(RooflabError, match=problem.replace(".", r"\.")):
        cc.committed_runs(_tree(tmp_path, name, world))
