"""`rooflab validate`: predictions against kernels, steps and runs timed on the GPU (or saved
runs re-checked)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Callable, Optional

import typer

from rooflab.cli.common import (INPUT_HELP, PHASE_HELP, app, check_outputs, one_gpu, split_list,
                                user_errors)
from rooflab.errors import RooflabError
from rooflab.terminal import printable


@app.command()
@user_errors
def validate(
    workload: Annotated[Optional[str], typer.Argument(help="A workload YAML; default: the built-in suite.")] = None,
    gpu: Annotated[bool, typer.Option("--gpu", help="Run the kernels on the CUDA GPU.")] = False,
    hardware: Annotated[Optional[str], typer.Option("--hardware", "-H", help="Spec the predictions use (a calibrated one is best; default: with --from, the calibrated spec of the run's GPU where one ships, else h200).")] = None,
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter (repeatable).")] = [],
    phase: Annotated[Optional[str], typer.Option("--phase", help=PHASE_HELP)] = None,
    inputs: Annotated[list[str], typer.Option("--input", help=INPUT_HELP)] = [],
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Results JSON (default reports/validation/<gpu>-<date>.json).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the Triton source of every kernel; run nothing.")] = False,
    from_file: Annotated[Optional[str], typer.Option("--from", help="Re-check a results JSON with the current model (no GPU).")] = None,
    cases: Annotated[Optional[str], typer.Option("--cases", help="Only suite cases whose name contains this text (or one of its comma-separated parts).")] = None,
    html: Annotated[Optional[str], typer.Option("--html", help="Also write an HTML report of the results.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")] = False,
    compare: Annotated[str, typer.Option("--compare", help="Schedules to run (always both, kept for symmetry with predict).")] = "unfused,fused",
    backend: Annotated[str, typer.Option("--backend", help="triton: rooflab's own kernels (unfused and fused); torch: the torch suite as eager PyTorch, CUDA graphs and torch.compile run it.")] = "triton",
    split: Annotated[Optional[str], typer.Option("--split", help="--backend torch: only the calibration or the validation cases.")] = None,
    tp: Annotated[Optional[str], typer.Option("--tp", help="With an hf: model: time its tensor-parallel step at these degrees (2,4,8; one process per GPU, NCCL) and compare it with the prediction.")] = None,
):
    """Check predictions against kernels timed on the GPU (or re-check saved results)."""
    import sys
    from pathlib import Path

    from rooflab import api, workload as wl
    from rooflab.trace import source
    from rooflab.validate import accuracy, steps, suite

    if backend not in ("triton", "torch"):
        raise RooflabError(f"--backend {backend}: expected triton or torch")
    workload = source.as_program(workload) if workload else workload
    if dry_run and html:
        raise RooflabError("--dry-run prints the kernels' source and runs nothing: it has no "
                           "results for --html")
    check_outputs([(o, p) for o, p in (("--output", None if from_file or dry_run else output),
                                        ("--html", html)) if p is not None], force,
                  make_parents=("--output",), reads=(workload, from_file, hardware))
    if from_file and output:
        raise RooflabError("--output names where a run on the GPU writes its results; --from "
                           "re-checks a saved run and writes none (--html writes a report)")
    if from_file and cases:
        raise RooflabError("--cases picks the cases to run on the GPU; --from re-checks the "
                           "whole run")
    spec, note_for = _spec_for(hardware, from_file)
    hw = api.load_hardware(one_gpu(spec, "validate"))
    note = note_for(hw)

    def no_html(run_kind: str) -> None:
        if html:
            raise RooflabError(f"--html: the HTML report is of Triton-backend runs; {run_kind} "
                               "has none (drop --html)")

    def no_split() -> None:
        if split:
            raise RooflabError(f"--split {split}: the torch suite's calibration or validation "
                               "cases, with --backend torch (or --from a torch run)")

    def run() -> None:
        from rooflab.validate import torch_compare, tp_compare
        if tp or from_file and tp_compare.is_run_file(from_file):
            no_html("a tensor-parallel run")
            no_split()
            _validate_tp(hw, workload, gpu, from_file, output, force,
                         "decode" if phase is None else phase, wl.parse_sets(sets), tp)
            return
        if from_file and torch_compare.is_run_file(from_file) or backend == "torch":
            no_html("a torch-backend run")
            _validate_torch(hw, workload, gpu, from_file, output, cases, split, force, inputs,
                            wl.parse_sets(sets))
            return
        no_split()
        if workload:
            graph = api.load_workload(workload, wl.parse_sets(sets), phase, tuple(inputs))
            if source.is_program(workload):
                from rooflab.trace import to_yaml
                doc = to_yaml.document(graph)
            else:
                doc = wl.load_yaml_data(workload)
            params = {**doc.get("params", {}), **graph.params}
            chosen = [suite.Case(graph.name, {**doc, "params": params}, "workload")]
        else:
            # case names hold commas themselves ("add_rmsnorm/T=64,D=4096"): a text naming whole
            # cases is taken as it is, anything else as comma-separated parts
            everything = suite.builtin()
            whole = [c for c in everything if cases and cases in c.name]
            wanted = split_list(cases) if cases else []
            chosen = whole or [c for c in everything
                               if not wanted or any(w in c.name for w in wanted)]
            if not chosen:
                raise RooflabError(f"--cases {cases}: no suite case matches")
        from rooflab.validate import serving as serving_runs
        if from_file and serving_runs.is_serve_file(from_file):
            # measured generation (lab/serve_h200): TTFT and TPOT against rooflab serve
            no_html("a serving run")
            typer.echo(serving_runs.render(serving_runs.compare(serving_runs.load(from_file), hw)))
            return
        if from_file and steps.is_steps_file(from_file):
            # measured whole steps of Hugging Face models (lab/hf_eager): trace and re-predict each
            no_html("a run of whole steps")
            typer.echo(steps.render(steps.compare(steps.load(from_file), hw)))
            return
        if from_file:
            from rooflab.validate import records
            vf = records.load(from_file)
            try:
                summary = accuracy.evaluate(vf, hw)
            except RooflabError as e:       # a case the run holds does not predict: name the run
                raise RooflabError(f"{from_file}: {e}") from None
            typer.echo(accuracy.render(summary, hw))
            if html:
                _write_validation_html(html, accuracy.repredicted(vf, hw), force)
            return
        if dry_run:
            from rooflab.validate import dryrun
            dryrun.dry_run(chosen, hw, typer.echo)
            return
        if not gpu:
            raise RooflabError("validate runs kernels only with --gpu (or use --dry-run, or "
                               "--from FILE)")
        from rooflab.validate import gpu as vgpu
        vgpu.require("validate")
        from rooflab.validate import run as vrun
        out = Path(output or f"reports/validation/{vgpu.slug()}-{vgpu.today()}.json")
        if out.exists() and not force:
            raise RooflabError(f"{out} exists; pass --force to overwrite it")
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            vf = vrun.run_suite(chosen, hw, spec, "rooflab " + " ".join(sys.argv[1:]), out,
                                log=lambda m: typer.echo(m, err=True))
        except vrun.ValidationFailed as e:
            from rooflab.validate import records
            typer.echo(accuracy.render(accuracy.evaluate(records.load(out), hw), hw))
            raise RooflabError(f"{len(e.failures)} case(s) failed (the rest are in {out}): "
                               + "; ".join(e.failures)) from None
        typer.echo(accuracy.render(accuracy.evaluate(vf, hw), hw))
        typer.echo(printable(f"wrote {out}"))
        if html:
            _write_validation_html(html, vf, force)

    run()
    if note:        # after the results: a run that fails says only why
        typer.echo(printable(note), err=True)


def _spec_for(hardware: str | None, from_file: str | None) -> tuple[str, Callable]:
    """(the spec a validation prices on, a function of the loaded spec giving a note for the
    user or ""): `-H` where given, else the spec of the GPU that the --from run names (its
    calibrated one where one ships), else h200. The note says which spec a --from run took, or
    that the spec `-H` names is another GPU's than the run's."""
    from rooflab.bundled import SPEC_DIR, datasheet_for_device
    from rooflab.validate.common import run_gpu
    gpu = run_gpu(from_file) if from_file else None
    name = datasheet_for_device(gpu) if gpu else None
    if hardware is not None:
        return hardware, lambda hw: (
            f"note: {from_file} was measured on {gpu}; -H {hardware} is another GPU's spec "
            f"({hw.name})"
            if name and hw.name != name else "")
    if gpu and not name:
        return "h200", lambda hw: (f"note: no bundled spec is the run's GPU ({gpu}); priced on "
                                   "h200, -H picks another")
    if not name:
        return "h200", lambda hw: ""
    chosen = f"measured/{name}.yaml" if (SPEC_DIR / "measured" / f"{name}.yaml").exists() \
        else name
    return chosen, lambda hw: (f"note: priced on {chosen}, the spec of the run's GPU ({gpu}); "
                               "-H picks another")


def _validate_torch(hw, workload, gpu: bool, from_file, output, cases, split, force,
                    inputs=(), sets=None) -> None:
    """validate --backend torch: run the torch suite (or a user's py: module) on the GPU, or
    read a run with --from, and print it against the predictions."""
    import sys
    from pathlib import Path

    from rooflab.validate import torch_compare, torch_suite
    user = ()
    if workload:
        if not workload.startswith("py:"):
            raise RooflabError("--backend torch runs the built-in torch suite or a py: module, "
                               "not a workload file or hf: model; measured steps of hf: models "
                               "come from lab/hf_eager/measure.py (validate --from)")
        user = (torch_suite.program_case(workload, tuple(inputs), sets),)
    if split not in (None, "calibration", "validation"):
        raise RooflabError(f"--split {split}: expected calibration or validation")
    if from_file:
        doc = torch_compare.load(from_file)
    else:
        if not gpu:
            raise RooflabError("validate runs kernels only with --gpu (or use --from FILE)")
        from rooflab.validate import gpu as vgpu
        vgpu.require("validate")
        from rooflab.validate import torch_run
        wanted = split_list(cases) if cases else []
        chosen = list(user) or [c for c in torch_suite.select(split=split)
                                if not wanted or any(w in c.id for w in wanted)]
        if not chosen:
            raise RooflabError(f"--cases {cases}: no torch suite case matches")
        out = Path(output or f"reports/validation/torch/{vgpu.slug()}-{vgpu.today()}.json")
        if out.exists() and not force:
            raise RooflabError(f"{out} exists; pass --force to overwrite it")
        doc = torch_run.run_to_file(chosen, out, "rooflab " + " ".join(sys.argv[1:]),
                                    log=lambda m: typer.echo(printable(m), err=True))
    for line in torch_compare.report(doc, hw, split, user).splitlines():
        typer.echo(printable(line))
    if not from_file:
        typer.echo(printable(f"wrote {out}"))


def _validate_tp(hw, workload, gpu: bool, from_file, output, force, phase: str, sets: dict,
                 tp: str | None) -> None:
    """validate --tp: time an hf: model's tensor-parallel step on this machine's GPUs, or read
    such a run with --from, and print it against the prediction at each degree."""
    import json
    import sys
    from pathlib import Path

    from rooflab.validate import tp_compare
    if from_file:
        doc = tp_compare.load(from_file)
    else:
        if not workload or not workload.startswith("hf:"):
            raise RooflabError("--tp times a tensor-parallel step of an hf: model "
                               "(validate --gpu --backend torch hf:llama3-8b --tp 2,4,8)")
        tps = _tp_degrees(tp)
        from rooflab.trace import zoo
        from rooflab.validate import tp_run
        model = workload[3:]
        _, config, path = zoo.resolve_config(model)
        sizes = tp_run.cases(phase, sets)
        layers = sets.get("layers", 0)
        for n in tps:                   # a layer count or degree that does not fit: now
            zoo.shard_config(zoo.first_layers(config, layers, str(path)), n, str(path))
        if not gpu:
            raise RooflabError("validate --tp runs the step only with --gpu (or use --from FILE)")
        from rooflab.validate import gpu as vgpu
        vgpu.require("validate")
        if max(tps) > vgpu.device_count():
            raise RooflabError(f"--tp {tp}: this machine has {vgpu.device_count()} GPU(s)")
        from rooflab.validate.calspec import unused_raw_path
        out = Path(output) if output else unused_raw_path(
            Path("reports/validation/tp") / f"{vgpu.slug()}-{vgpu.today()}.json")
        if out.exists() and not force:
            raise RooflabError(f"{out} exists; pass --force to overwrite it")
        doc = tp_run.run(model, tps, sizes, phase,
                         command="rooflab " + " ".join(sys.argv[1:]), layers=layers)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=1) + "\n")
    for line in tp_compare.render(tp_compare.compare(doc, hw)).splitlines():
        typer.echo(printable(line))
    if not from_file:
        typer.echo(printable(f"wrote {out}"))


def _tp_degrees(text: str | None) -> list[int]:
    try:
        tps = [int(t) for t in (text or "").split(",") if t.strip()]
    except ValueError:
        tps = []
    if not tps or any(t < 1 for t in tps):
        raise RooflabError(f"--tp {text}: expected GPU counts, like 2,4,8")
    return tps


def _write_validation_html(path: str, vf, force: bool) -> None:
    from rooflab.report import html as html_report
    html_report.write_validation(path, vf, force=force)
    typer.echo(printable(f"wrote {path}"))
