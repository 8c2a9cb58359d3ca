"""`rooflab calibrate`: measure a GPU (or its collectives across GPUs) and write a spec citing
the measurements."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from rooflab.cli.common import app, check_output, user_errors
from rooflab.errors import RooflabError
from rooflab.terminal import printable


@app.command()
@user_errors
def calibrate(
    gpu: Annotated[bool, typer.Option("--gpu", help="Measure the CUDA GPU.")] = False,
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Calibrated spec YAML to write (default: hardware_specs/measured/ and the base spec's name, with --collectives its name-collectives.yaml).")] = None,
    base: Annotated[Optional[str], typer.Option("--base", help="Datasheet spec the calibrated one starts from (default: the bundled spec of the GPU measured: h100-sxm on an H100 SXM).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing spec.")] = False,
    torch_suite: Annotated[bool, typer.Option("--torch/--no-torch", help="Also time the torch suite's calibration cases: eager PyTorch's kernel-family curves, torch.compile's host figures.")] = True,
    from_file: Annotated[Optional[str], typer.Option("--from", help="Rebuild the spec from a calibration's raw figures, a JSON file under reports/calibration/ (its -torch.json beside it is read too), with the current code; no GPU.")] = None,
    torch_run: Annotated[Optional[str], typer.Option("--torch-run", help="With --from: another torch-suite run to take the GPU-side figures from (kernel-family curves, SDPA backends); host figures stay the raw lease's own.")] = None,
    collectives: Annotated[bool, typer.Option("--collectives", help="Measure NCCL's collectives on 2, 4, ... and all GPUs here and write the base spec with the fitted paths (with --from: rebuild it from collective runs RUN,RUN...).")] = False,
):
    """Measure bandwidths, GEMM peaks and launch costs (and eager PyTorch's kernel families),
    or with --collectives the collectives across this machine's GPUs; write a spec that cites
    the measurements."""
    import sys
    from pathlib import Path

    from rooflab import hardware as hwmod

    if collectives:
        return _calibrate_collectives(gpu, output, base or "h200", force, from_file, torch_run)
    if torch_run and not from_file:
        raise RooflabError("--torch-run goes with --from (a rebuild from raw figures)")
    if not gpu and not from_file:
        raise RooflabError("calibrate measures only with --gpu (or rebuilds a spec --from a "
                           "calibration's raw figures)")
    from rooflab.validate.calspec import torch_run_path
    # what is read: the raw figures, the torch run beside them, another torch run, the base
    reads = (from_file, from_file and str(torch_run_path(from_file)), torch_run, base)
    if output is not None:                          # before any measuring
        check_output("--output", output, force, reads=reads)
    if from_file:
        from rooflab.validate import calspec
        base_hw = hwmod.load(base or _datasheet(calspec.raw_gpu(from_file), from_file))
        out = _spec_output(output, base_hw, force, reads)
        spec, provenance = calspec.spec_and_provenance(base_hw.spec, from_file, torch_run)
        out.write_text(calspec.spec_text(base_hw.spec, spec, provenance))
        typer.echo(printable(f"wrote {out} from {from_file}"))
        if "HOST-BOUND" in spec["memory"]["hbm_curve"].get("note", ""):
            typer.echo(printable(f"warning: {spec['memory']['hbm_curve']['note']}"), err=True)
        return
    from rooflab.validate import gpu as vgpu
    vgpu.require("calibrate")
    base_hw = hwmod.load(base or _datasheet(vgpu.name(), "this machine"))
    out = _spec_output(output, base_hw, force, reads)
    from rooflab.validate import calibrate as cal
    from rooflab.validate.calspec import unused_raw_path
    prov = vgpu.provenance("rooflab " + " ".join(sys.argv[1:]))
    raw = unused_raw_path(Path("reports/calibration") / f"{vgpu.slug()}-{prov['date'][:10]}.json")
    cal.calibrate(base_hw.spec, out, raw, prov, log=lambda m: typer.echo(m, err=True),
                  torch_suite=torch_suite)
    typer.echo(printable(f"wrote {out} and {raw}"))


def _spec_output(output: str | None, base_hw, force: bool, reads: tuple):
    """The Path the calibrated spec is written to: --output, else
    hardware_specs/measured/<base spec's name>.yaml (an H100 SXM's is h100-sxm.yaml), checked
    against the files the command reads (`reads`)."""
    from pathlib import Path
    path = output if output is not None else f"hardware_specs/measured/{base_hw.name}.yaml"
    check_output("--output", path, force, reads=reads)
    return Path(path)


def _datasheet(device_name: str, where: str) -> str:
    """The bundled datasheet spec of the GPU `device_name` (measured on `where`)."""
    from rooflab.bundled import datasheet_for_device
    name = datasheet_for_device(device_name)
    if name is None:
        raise RooflabError(f"{where}: no bundled datasheet spec is a {device_name}; pass "
                           "--base with the spec of this GPU")
    return name


def _calibrate_collectives(gpu: bool, output: str | None, base: str, force: bool,
                           from_file: str | None, torch_run: str | None) -> None:
    import sys
    from pathlib import Path

    from rooflab import hardware as hwmod
    from rooflab.validate import collective_spec

    if torch_run:
        raise RooflabError("--torch-run does not go with --collectives")
    if not gpu and not from_file:
        raise RooflabError("calibrate --collectives measures only with --gpu (or rebuilds a "
                           "spec --from collective runs RUN,RUN...)")
    if output is None:                 # the one-GPU spec stays; this one is named for its base
        output = f"hardware_specs/measured/{Path(base).stem}-collectives.yaml"
    check_output("--output", output, force, reads=(from_file, base))
    base_hw = hwmod.load(base)
    log = lambda m: typer.echo(printable(m), err=True)  # noqa: E731
    if from_file:
        files = [f for f in from_file.split(",") if f]
        for f in files:
            collective_spec.read_run(f)
    else:
        from rooflab.validate import gpu as vgpu
        vgpu.require("calibrate")
        collective_spec.worlds(vgpu.device_count())        # at least 2 GPUs, before any work
        files = collective_spec.measure(Path("reports/validation/collectives"), vgpu.slug(),
                                        vgpu.today(), "rooflab " + " ".join(sys.argv[1:]), log)
    collective_spec.write(base_hw.spec, Path(output), files, log)
    typer.echo(printable(f"wrote {output} from {', '.join(map(str, files))}"))
