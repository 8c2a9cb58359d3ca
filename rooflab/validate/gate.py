"""The committed validation runs and the spec each is gated against.

A run `reports/validation/<gpu>-<date>.json` was measured right after a calibration on the same
machine, `reports/calibration/<gpu>-<date>.json` (the same file stem). Its kernel times are only
comparable with the ceilings and launch costs measured in that session: a later calibration of
the same GPU (another day, driver, clock or lent machine) may differ by a few per cent. So every
run is gated against its own calibration, rebuilt with the current code from the raw figures
and the GPU's datasheet spec `hardware_specs/<gpu>.yaml`. The calibrated spec that ships,
`hardware_specs/measured/<gpu>.yaml`, must be exactly the one its `calibrated_from` calibration
rebuilds to, and that calibration must have a committed run: so the shipped spec is gated too.

The GPU of a run is the stem of the spec its provenance names (`hardware_specs/measured/h200.yaml`
or `h200`: h200); the file name must start with it, and the calibration must come from the same
device (`provenance.gpu`) no later than the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from rooflab.errors import RooflabError
from rooflab.hardware import Hardware, load_file, to_core
from rooflab.hardware_spec import HardwareFile
from rooflab.validate.calspec import write_spec
from rooflab.validate.records import ValidationFile, load
from rooflab.yamlio import load_yaml, raise_first


@dataclass(frozen=True)
class CommittedRun:
    path: Path                # reports/validation/<gpu>-<date>.json
    gpu: str                  # the spec name, e.g. "h200"
    calibration: Path         # reports/calibration/<same stem>.json
    run: ValidationFile

    @property
    def date(self) -> str:
        """When the run was measured (ISO 8601, UTC)."""
        return self.run.provenance.date


def run_files(root: Path) -> list[Path]:
    """The committed validation runs of the checkout `root`, by file name."""
    return sorted((root / "reports" / "validation").glob("*.json"))


def committed_run(root: Path, path: Path) -> CommittedRun:
    """One committed run with its GPU and calibration; a run whose GPU, file name and
    calibration do not agree is a RooflabError naming the file."""
    vf = load(path)
    gpu = Path(vf.provenance.hardware_spec).stem
    if not path.name.startswith(f"{gpu}-"):
        raise RooflabError(f"provenance.hardware_spec names GPU '{gpu}'; the file name must "
                           f"start with '{gpu}-'", file=str(path))
    cal = root / "reports" / "calibration" / path.name
    if not cal.is_file():
        raise RooflabError(f"no calibration {cal.relative_to(root).as_posix()}: a run is gated "
                           "against the calibration it was measured after; commit it",
                           file=str(path))
    prov = json.loads(cal.read_text())["provenance"]
    if prov["gpu"] != vf.provenance.gpu or prov["date"] > vf.provenance.date:
        raise RooflabError(f"calibration {cal.name} ({prov['gpu']}, {prov['date']}) is not of "
                           f"this run's device before it ({vf.provenance.gpu}, "
                           f"{vf.provenance.date})", file=str(path))
    return CommittedRun(path, gpu, cal, vf)


def committed_runs(root: Path) -> list[CommittedRun]:
    """Every committed run of the checkout `root` (`committed_run`), by GPU then date."""
    return sorted((committed_run(root, p) for p in run_files(root)), key=lambda r: (r.gpu, r.date))


def newest_by_gpu(runs: list[CommittedRun]) -> dict[str, CommittedRun]:
    """The most recently measured run of each GPU (by provenance date, not file name)."""
    return {r.gpu: r for r in sorted(runs, key=lambda r: r.date)}


def calibrated_spec(root: Path, gpu: str, calibration: Path) -> Hardware:
    """The spec `rooflab calibrate` writes from `calibration`'s raw figures on the datasheet spec
    `hardware_specs/<gpu>.yaml` of the checkout `root`, as the current code writes it."""
    base_path = root / "hardware_specs" / f"{gpu}.yaml"
    doc = load_yaml(base_path, "hardware spec")
    try:
        base = HardwareFile.model_validate(doc.data)
    except ValidationError as err:
        raise_first(err, doc)
    raw = json.loads(calibration.read_text())
    spec = write_spec(base, raw["measured"], raw["provenance"],
                      calibration.relative_to(root).as_posix())
    return to_core(HardwareFile.model_validate(spec), str(calibration))


def shipped_spec(root: Path, gpu: str) -> tuple[Hardware, Path]:
    """The calibrated spec that ships, `hardware_specs/measured/<gpu>.yaml`, and the calibration
    file it names as its source (`calibrated_from`)."""
    path = root / "hardware_specs" / "measured" / f"{gpu}.yaml"
    hw = load_file(path)
    cited = load_yaml(path, "hardware spec").data.get("calibrated_from")
    if not cited:
        raise RooflabError("a calibrated spec names its calibration in `calibrated_from`",
                           file=str(path))
    return hw, root / cited


# figures a measured spec takes from other runs than its calibration (the torch suite's family
# curves, row floors, cuBLAS GEMM curves and SDPA backends, its host fits, the Hugging Face
# host fit), which a calibration's raw figures do not rebuild; `spec`: the file they were read
# from
_FROM_OTHER_RUNS = dict(family_curves={}, family_row_floors={}, family_per_index_s={},
                        attention_backend_efficiency={}, attention_backend_fixed_s={},
                        gemm_flops_curve=(), gemm_overlap=0.0,
                        module_call_s=0.0, graph_replay_call_s=None, eager_call_s_by_kind={},
                        gemm_dispatch_s=None, view_dispatch_s=0.0, compiled_call_s=None,
                        compiled_launch_s=None, compiled_extern_s=None,
                        compiled_graph_call_s=None, graph_gap_s=None, spec=None)


def same_figures(a: Hardware, b: Hardware) -> bool:
    """Whether two specs hold the same calibration figures (they may come from different files;
    the figures of _FROM_OTHER_RUNS are not compared)."""
    return replace(a, source_file="", **_FROM_OTHER_RUNS) == \
        replace(b, source_file="", **_FROM_OTHER_RUNS)
