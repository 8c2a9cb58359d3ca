"""Bundled data: the specs and workloads resolve from anywhere, and a built wheel carries every
file of hardware_specs/ (with measured/), workloads/, models/ and the vendored plotly.js (.ci/wheel
installs that wheel in a fresh venv and runs it)."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rooflab import bundled, hardware, workload

ROOT = Path(__file__).resolve().parent.parent


def test_a_checkout_uses_its_top_level_folders():
    assert bundled.SPEC_DIR == ROOT / "hardware_specs"
    assert bundled.WORKLOAD_DIR == ROOT / "workloads"
    assert bundled.MODEL_DIR == ROOT / "models"
    assert hardware.SPEC_DIR == bundled.SPEC_DIR and workload.WORKLOAD_DIR == bundled.WORKLOAD_DIR
    assert len(hardware.spec_paths()) == 13


def test_paths_resolve_to_bundled_files_from_outside_the_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    measured = ROOT / "hardware_specs/measured/h200.yaml"
    assert bundled.spec_file("hardware_specs/measured/h200.yaml") == measured
    assert bundled.spec_file("measured/h200.yaml") == measured
    assert bundled.workload_file("rmsnorm") == ROOT / "workloads/rmsnorm.yaml"
    assert bundled.workload_file("workloads/rmsnorm.yaml") == ROOT / "workloads/rmsnorm.yaml"
    # not bundled, or escaping the folder: the path as given, for the loader to report
    assert bundled.spec_file("measured/b200.yaml") == "measured/b200.yaml"
    assert bundled.spec_file("measured/../h200.yaml") == "measured/../h200.yaml"
    assert bundled.workload_file("nope") == "nope"
    # a file of that path on disk wins over the bundled one
    (tmp_path / "measured").mkdir()
    (tmp_path / "measured/h200.yaml").write_text("x: 1\n")
    assert bundled.spec_file("measured/h200.yaml") == "measured/h200.yaml"
    assert hardware.load("hardware_specs/measured/h200.yaml").hbm_efficiency == pytest.approx(0.89, abs=0.01)


def test_the_wheel_carries_every_bundled_file(tmp_path):
    pytest.importorskip("setuptools", minversion="68")
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("rooflab", "hardware_specs", "workloads", "models"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    r = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                        "print(build_meta.build_wheel(sys.argv[1]))", str(tmp_path)],
                       cwd=src, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    names = set(zipfile.ZipFile(tmp_path / r.stdout.split()[-1]).namelist())
    want = ({f"rooflab/bundled_specs/{p.relative_to(ROOT / 'hardware_specs').as_posix()}"
             for p in (ROOT / "hardware_specs").rglob("*.yaml")}
            | {f"rooflab/bundled_workloads/{p.name}" for p in (ROOT / "workloads").glob("*.yaml")}
            | {f"rooflab/bundled_models/{p.name}" for p in (ROOT / "models").glob("*.json")}
            | {"rooflab/report/vendor/plotly-basic.min.js", "rooflab/report/vendor/LICENSE"})
    assert {"rooflab/bundled_specs/measured/h200.yaml",
            "rooflab/bundled_specs/measured/h100-sxm.yaml"} <= want and len(want) == 15 + 26 + 8 + 2
    assert want <= names, sorted(want - names)
    assert {p.relative_to(ROOT).as_posix() for p in (ROOT / "rooflab").rglob("*.py")} <= names
