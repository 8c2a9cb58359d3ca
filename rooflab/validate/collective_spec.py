"""A hardware spec whose collective paths were measured on this machine's GPUs.

`rooflab calibrate --gpu --collectives` times every collective kind through NCCL on 2, 4, ...
and all the GPUs here (`measure`: one rooflab.collective-run/1 document per GPU count, saved
under reports/validation/collectives/), then writes a spec (`spec_with_collectives`): the base
spec with, per kind and GPU count, the paths that sweep fits (rooflab.validate.collective_fit),
each pinned to its GPU count (`measured_gpus`), so that on those counts the measurement alone
prices its kind and the published paths stay for the counts not measured. Each run is a source
of the spec, with its GPU, GPU count, NCCL and torch versions and file; the topology
(`nvidia-smi topo -m`) is in the run file. `rooflab calibrate --collectives --from RUN,...`
rebuilds the spec from saved runs, without a GPU.

NVLink multicast is off in every measuring process (nccl_bench.MULTICAST_OFF), so the measured
all_reduce is NCCL's without NVLS; the spec's notes say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rooflab.errors import RooflabError
from rooflab.hardware_spec import HardwareFile
from rooflab.validate import collective_compare
from rooflab.validate.collective_fit import measured_paths


def worlds(gpu_count: int) -> list[int]:
    """The GPU counts a calibration measures on a machine with `gpu_count` GPUs: the powers of
    two from 2, and the whole machine."""
    if gpu_count < 2:
        raise RooflabError(f"calibrate --collectives needs at least 2 GPUs; this machine has "
                           f"{gpu_count}")
    out = [w for w in (2, 4, 8, 16, 32, 64) if w <= gpu_count]
    return out if out[-1] == gpu_count else out + [gpu_count]


def measure(run_dir: Path, slug: str, date: str, command: str, log=print,
            backend: str = "nccl", gpu_count: int | None = None, sizes=None) -> list[Path]:
    """Time the collectives on each of worlds(gpu_count) (default: every GPU torch sees) and
    save each run under `run_dir` as <slug>x<world>-<date>.json (never over an earlier file);
    returns the files."""
    from rooflab.validate import nccl_bench
    from rooflab.validate.calspec import unused_raw_path
    if gpu_count is None:
        import torch
        gpu_count = torch.cuda.device_count()
    kinds = nccl_bench.KINDS if backend == "nccl" else nccl_bench.GLOO_KINDS
    files = []
    for world in worlds(gpu_count):
        log(f"collectives on {world} GPUs: {', '.join(kinds)}, 4 KB..1 GB")
        doc = nccl_bench.run(world, backend, kinds, sizes or nccl_bench.SIZES, command=command)
        path = unused_raw_path(run_dir / f"{slug}x{world}-{date}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1) + "\n")
        files.append(path)
    return files


def read_run(path: str | Path) -> dict:
    """The collective run document in `path`; RooflabError naming the file otherwise."""
    try:
        return collective_compare.check(json.loads(Path(path).read_text()), str(path))
    except (OSError, ValueError) as e:
        raise RooflabError(f"cannot read a collective run ({type(e).__name__}: {e})",
                           file=str(path)) from None


def source_line(doc: dict, path: str) -> str:
    """What a spec cites for the paths fitted to one run."""
    p = doc["provenance"]
    return (f"rooflab calibrate --gpu --collectives: {p.get('gpu', p.get('backend'))} x "
            f"{p['world']}, NCCL {p.get('nccl', 'n/a')}, torch {p.get('torch')}, "
            f"{p.get('date_utc')}, NVLink multicast off; topology in the run file: {path}")


def spec_with_collectives(base: HardwareFile, run_files: list[str | Path]) -> dict:
    """`base` (as a spec dict) with the paths each run fits added to interconnect.collectives,
    each run cited as CAL-NCCL-<GPU count>."""
    if not run_files:
        raise RooflabError("no collective run to fit")
    spec = base.model_dump(exclude_none=True)
    counts = []
    for path in run_files:
        doc = read_run(path)
        world = doc["provenance"]["world"]
        if world < 2 or not doc["rows"]:
            raise RooflabError("a one-GPU run has no collective to fit" if world < 2 else
                               "the run holds no collective", file=str(path))
        if world in counts:
            raise RooflabError(f"a second run on {world} GPUs; give one per GPU count",
                               file=str(path))
        counts.append(world)
        key = f"CAL-NCCL-{world}"
        spec["sources"][key] = source_line(doc, str(path))
        paths = spec["interconnect"].setdefault("collectives", {})
        for name in [n for n, p in paths.items() if p.get("measured_gpus") == world]:
            del paths[name]             # a base spec's own measurement on this count goes
        paths.update(measured_paths(doc, key))
    spec["display_name"] = (f"{base.display_name} (collectives measured on "
                            f"{', '.join(map(str, sorted(counts)))} GPUs)")
    return spec


def spec_text(base: HardwareFile, spec: dict, run_files: list[str | Path]) -> str:
    """The spec's YAML file: a header saying what was measured, then `spec`."""
    header = (f"# {base.display_name} with collective paths measured by `rooflab calibrate "
              f"--collectives` from\n# {', '.join(map(str, run_files))}.\n# Paths citing "
              "CAL-NCCL-<n> were fitted to those runs (NVLink multicast off); the rest are "
              f"the base spec's ({base.name}).\n")
    return header + yaml.safe_dump(spec, sort_keys=False, allow_unicode=True)


def write(base: HardwareFile, out: Path, run_files: list[str | Path], log=print) -> dict:
    """Write the spec the runs fit to `out`, and log per run the base spec's error and the
    fitted paths' error (median |error| 64 KB..1 GB, by kind); returns the spec."""
    from rooflab.hardware import to_core
    spec = spec_with_collectives(base, run_files)
    fitted = to_core(HardwareFile.model_validate(spec))
    for path in run_files:
        doc = read_run(path)
        for label, hw in ((f"{base.name} as specified", to_core(base)), ("fitted", fitted)):
            med = collective_compare.summary(collective_compare.compare(doc, hw))
            log(f"{Path(path).name}: {label}: median |error| 64 KB..1 GB "
                + ", ".join(f"{k} {v:.1%}" for k, v in med.items()))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(spec_text(base, spec, run_files))
    return spec
