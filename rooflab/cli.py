"""The `rooflab` command line: parse, call the library, render. Nothing here computes a cost."""

from __future__ import annotations

import functools
import os
import stat
from typing import Annotated, Optional

import typer

from rooflab import __version__
from rooflab.errors import RooflabError
from rooflab.terminal import printable

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  context_settings={"help_option_names": ["-h", "--help"]},
                  help="Roofline / memory-traffic simulator: what would fusing this buy me, "
                       "on this GPU?")
hardware_app = typer.Typer(no_args_is_help=True, help="List and show GPU specs.")
app.add_typer(hardware_app, name="hardware")


def _errors(fn):
    """User mistakes become one line on stderr and exit status 2, never a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RooflabError as e:
            typer.echo(f"error: {printable(str(e))}", err=True)
            raise typer.Exit(2) from None
    return wrapper


# hf:/py: sources (rooflab/trace/source.py) take these beside --set
_PHASE_HELP = "hf: sources: the step traced, decode (one token against --set context) or prefill (--set seq)."
_CALIBRATED_SPEC = "hardware_specs/measured/h200.yaml"
_INPUT_HELP = "py: sources: a forward input, name=[dims]:dtype, like x=[16,4096]:bf16 (repeatable)."


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _names(option: str, value: str, example: str) -> list[str]:
    """The comma-separated names of `option`; RooflabError when there are none."""
    names = _split(value)
    if not names:
        raise RooflabError(f"{option} {value!r}: expected one or more names, like {example}")
    return names


def _check_output(option: str, path: str, force: bool, make_parents: bool = False) -> None:
    """Refuse, before any work, an output path that could not be written or would lose a
    file: a name too long, a folder that is missing (unless `make_parents`) or is a file, a
    target that is a folder or not a regular file (even with --force), or one that exists
    without --force."""
    where = f"{option} {path}"
    if not path:
        raise RooflabError(f"{option}: expected a file name")
    max_name = 255
    try:
        max_name = os.pathconf(os.path.dirname(os.path.abspath(path)) or "/", "PC_NAME_MAX")
    except (OSError, ValueError):
        pass
    if any(len(os.fsencode(part)) > max_name for part in path.split(os.sep)) \
            or len(os.fsencode(os.path.abspath(path))) > 4095:
        raise RooflabError(f"{option} {path[:40]}… ({len(path)} characters): file name too long")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        if e.errno == 20:                 # ENOTDIR: some folder on the way is a file
            raise RooflabError(f"{where}: a part of the path is a file, not a folder") from None
        raise RooflabError(f"{where}: {e.strerror or e}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise RooflabError(f"{where}: is a folder; give a file name")
        if not stat.S_ISREG(st.st_mode):
            raise RooflabError(f"{where}: exists and is not a regular file; not replacing it")
        if not force:
            raise RooflabError(f"{where}: exists; pass --force to overwrite it")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent) and make_parents:
        parent = os.path.dirname(parent)
    if not os.path.exists(parent):
        raise RooflabError(f"{where}: folder {os.path.dirname(path)} does not exist")
    if not os.path.isdir(parent):
        raise RooflabError(f"{where}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK):
        raise RooflabError(f"{where}: folder {parent} is not writable")


def _launches(value: str) -> list[str]:
    from rooflab.cost import LAUNCH_MODES
    modes = _names("--launch", value, "eager,graph")
    for mode in modes:
        if mode not in LAUNCH_MODES:
            raise RooflabError(f"--launch {mode}: expected one of {', '.join(LAUNCH_MODES)}")
    return modes


def _version(value: bool):
    if value:
        typer.echo(f"rooflab {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False):
    pass


# ------------------------------------------------------------------------------ hardware
@hardware_app.command("list")
@_errors
def hardware_list():
    """One line per bundled GPU spec: dense peaks, memory and bandwidth."""
    from rooflab.report import specs
    typer.echo(specs.render_list())


@hardware_app.command("show")
@_errors
def hardware_show(name: Annotated[str, typer.Argument(help="Spec name (see `hardware list`) or a YAML path.")]):
    """Every figure of one spec, with its source."""
    from rooflab import hardware
    from rooflab.report import specs
    typer.echo(specs.render_show(hardware.load(name)))


# ------------------------------------------------------------------------------ models
@app.command("models")
@_errors
def models(
    configs: Annotated[Optional[list[str]], typer.Argument(metavar="MODEL", help="Bundled names or config.json paths (default: every bundled model).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (schema rooflab.models/1).")] = False,
):
    """The bundled Hugging Face models (`hf:NAME`): parameters, weight and KV-cache bytes.
    Counted on the model transformers builds on the meta device (needs the trace extra)."""
    import dataclasses
    import json

    from rooflab.report.table import grid
    from rooflab.trace import zoo

    try:
        infos = [zoo.model_info(c) for c in (configs or zoo.bundled_names())]
    except zoo.MissingExtra as e:
        raise RooflabError(f"{e} (bundled models: {', '.join(zoo.bundled_names())})") from None
    if as_json:
        typer.echo(json.dumps({"schema": "rooflab.models/1",
                               "models": [dataclasses.asdict(i) for i in infos]}, indent=2))
        return
    rows = [[i.name, i.architecture, f"{i.params / 1e9:.2f}", f"{i.active_params / 1e9:.2f}",
             f"{i.weight_bytes / 1e9:.1f}", f"{i.kv_bytes_per_token:,}", str(i.layers), i.repo]
            for i in infos]
    cols = ["name", "architecture", "params B", "active B", "weights GB", "KV B/token", "layers",
            "repository"]
    typer.echo("Weights and KV cache at each config's dtype; active = parameters one token uses "
               "(MoE: top-k of the routed experts).\n\n" + grid(cols, rows, left={0, 1, 7}))


# ------------------------------------------------------------------------------ predict
@app.command()
@_errors
def predict(
    workload: Annotated[str, typer.Argument(help="Workload YAML (or the name of a bundled one), hf:MODEL or py:FILE.py:FACTORY.")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name(s) or YAML path(s), comma-separated.")] = "h100-sxm",
    schedule: Annotated[str, typer.Option("--schedule", "-s", help="Fusion policy: unfused, epilogue, fused, inductor (torch.compile's default), or a policy YAML.")] = "unfused",
    compare: Annotated[Optional[str], typer.Option("--compare", help="Schedules A,B[,C...]: print each and what each later one's fusions save over A.")] = None,
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode(s): eager, graph, compiled (torch.compile; comma-separated).")] = "eager",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter: --set batch=64 (repeatable).")] = [],
    phase: Annotated[str, typer.Option("--phase", help=_PHASE_HELP)] = "decode",
    inputs: Annotated[list[str], typer.Option("--input", help=_INPUT_HELP)] = [],
    tp: Annotated[int, typer.Option("--tp", help="hf: sources: tensor-parallel GPUs (the model sharded, collectives added).")] = 1,
    ep: Annotated[int, typer.Option("--ep", help="hf: sources: expert-parallel GPUs of a MoE (experts split, all-to-all added).")] = 1,
    pp: Annotated[int, typer.Option("--pp", help="hf: sources: pipeline stages (layers cut into stages, send/recv between).")] = 1,
    nodes: Annotated[int, typer.Option("--nodes", help="With --pp: nodes the stages spread over (stage boundaries between nodes use the network).")] = 1,
    microbatches: Annotated[int, typer.Option("--microbatches", help="With --pp: micro-batches the batch is cut into.")] = 1,
    sp: Annotated[bool, typer.Option("--sp", help="With --tp: sequence parallelism (reduce-scatter + all-gather in place of each all-reduce; norms on tokens / tp rows).")] = False,
    overlap: Annotated[bool, typer.Option("--overlap", help="Hide each collective behind the compute of its layer that does not depend on it (rooflab/overlap.py).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (schema rooflab.prediction/1) instead of tables.")] = False,
    all_kernels: Annotated[bool, typer.Option("--all", help="One row per kernel; do not fold repeated blocks.")] = False,
    html: Annotated[Optional[str], typer.Option("--html", help="Also write an interactive HTML report here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Let --html overwrite an existing file.")] = False,
):
    """Predict FLOPs, HBM bytes, launches and time per kernel, and the schedule's totals."""
    from rooflab import api, workload as wl
    from rooflab.report import comparison, jsonout, table

    if html:
        _check_output("--html", html, force)             # fail before predicting
    overrides = wl.parse_sets(sets)
    for flag, n in (("--tp", tp), ("--ep", ep), ("--pp", pp), ("--nodes", nodes),
                    ("--microbatches", microbatches)):
        if n < 1:
            raise RooflabError(f"{flag} {n}: expected a positive number")
    if overlap and as_json:
        raise RooflabError("--overlap with --json: the prediction schema (rooflab.prediction/1) "
                           "has no place for overlapped times; drop one of them")
    if sp and tp == 1:
        raise RooflabError("--sp: sequence parallelism splits the tensor-parallel group's "
                           "tokens; give --tp 2 or more")
    if tp > 1 or pp > 1 or ep > 1:
        if not workload.startswith("hf:"):
            raise RooflabError("--tp/--ep/--pp shard hf: models; a workload file is priced as "
                               "written (write it per GPU, with a tp parameter, as "
                               "workloads/tp_layer_allreduce.yaml does)")
        overrides.update({k: v for k, v in (("tp", tp), ("ep", ep), ("sp", int(sp))) if v > 1
                          or (k == "sp" and v)})
    if pp > 1:
        from rooflab.report import parallel
        gpus = [api.load_hardware(h) for h in _names("--hardware", hardware, "h200,b200")]
        for hw in gpus:
            preds, timing = api.predict_pipeline(workload, hw, overrides, phase, schedule,
                                                 _launches(launch)[0], pp, nodes, microbatches)
            text = parallel.render(preds, timing, tp)
            if overlap:
                from rooflab import overlap as ovl
                from rooflab.trace.pipeline import PipelineTime
                ovs = [ovl.overlap(p) for p in preds]
                over = PipelineTime(tuple(o.time_s for o in ovs), microbatches)
                from rooflab.units import format_time
                text += "\n" + printable(
                    f"overlap: on, {format_time(sum(o.hidden_s for o in ovs))} of "
                    f"{format_time(sum(o.link_s for o in ovs))} link time hidden (one micro-batch "
                    f"through every stage); step {format_time(timing.time_s)} -> "
                    f"{format_time(over.time_s)}")
            typer.echo(text)
        return
    graph = api.load_workload(workload, overrides, phase, tuple(inputs))
    gpus = [api.load_hardware(h) for h in _names("--hardware", hardware, "h200,b200")]
    schedules = _split(compare) if compare is not None else [schedule]
    if compare is not None and len(schedules) < 2:
        raise RooflabError(f"--compare {compare}: expected two or more schedules, like "
                           "unfused,fused (each later one is compared with the first)")
    preds, comparisons = api.predict_matrix(graph, gpus, schedules, _launches(launch))
    if html:
        from rooflab.report import html as html_report
        html_report.write_predictions(html, preds, comparisons, force=force)
    if as_json:
        out = jsonout.PredictionsJSON(predictions=[jsonout.prediction_json(p) for p in preds],
                                      comparisons=[jsonout.comparison_json(c) for c in comparisons])
        typer.echo(out.dump())
        return
    blocks = [table.render(p, all_kernels=all_kernels) for p in preds]
    if overlap:
        from rooflab import overlap as ovl
        blocks = [b + "\n" + printable(ovl.summary(ovl.overlap(p))) for b, p in zip(blocks, preds)]
    blocks += [comparison.render(c) for c in comparisons]
    if html:
        blocks.append(printable(f"wrote {html}"))
    typer.echo("\n\n".join(blocks))


# ------------------------------------------------------------------------------ validate
@app.command()
@_errors
def validate(
    workload: Annotated[Optional[str], typer.Argument(help="A workload YAML; default: the built-in suite.")] = None,
    gpu: Annotated[bool, typer.Option("--gpu", help="Run the kernels on the CUDA GPU.")] = False,
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="Spec the predictions use (a calibrated one is best).")] = "h200",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter (repeatable).")] = [],
    phase: Annotated[str, typer.Option("--phase", help=_PHASE_HELP)] = "decode",
    inputs: Annotated[list[str], typer.Option("--input", help=_INPUT_HELP)] = [],
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Results JSON (default reports/validation/<gpu>-<date>.json).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the Triton source of every kernel; run nothing.")] = False,
    from_file: Annotated[Optional[str], typer.Option("--from", help="Re-check a results JSON with the current model (no GPU).")] = None,
    cases: Annotated[Optional[str], typer.Option("--cases", help="Only suite cases whose name contains this text (or one of its comma-separated parts).")] = None,
    html: Annotated[Optional[str], typer.Option("--html", help="Also write an HTML report of the results.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")] = False,
    compare: Annotated[str, typer.Option("--compare", help="Schedules to run (always both, kept for symmetry with predict).")] = "unfused,fused",
    backend: Annotated[str, typer.Option("--backend", help="triton: rooflab's own kernels (unfused and fused); torch: the torch suite as eager PyTorch, CUDA graphs and torch.compile run it.")] = "triton",
    split: Annotated[Optional[str], typer.Option("--split", help="--backend torch: only the calibration or the validation cases.")] = None,
    tp: Annotated[Optional[str], typer.Option("--tp", help="--backend torch with an hf: model: time its tensor-parallel step at these degrees (2,4,8; one process per GPU) and compare it with the prediction.")] = None,
):
    """Check predictions against kernels timed on the GPU (or re-check saved results)."""
    import sys
    from pathlib import Path

    from rooflab import api, workload as wl
    from rooflab.trace import source
    from rooflab.validate import accuracy, steps, suite

    if backend not in ("triton", "torch"):
        raise RooflabError(f"--backend {backend}: expected triton or torch")
    if output and not from_file and not dry_run:
        _check_output("--output", output, force, make_parents=True)
    if html:
        _check_output("--html", html, force)
    hw = api.load_hardware(hardware)
    from rooflab.validate import torch_compare, tp_compare
    if tp or from_file and tp_compare.is_run_file(from_file):
        _validate_tp(hw, workload, gpu, from_file, output, force, phase, wl.parse_sets(sets), tp)
        return
    if from_file and torch_compare.is_run_file(from_file) or backend == "torch":
        _validate_torch(hw, workload, gpu, from_file, output, cases, split, force, inputs,
                        wl.parse_sets(sets))
        return
    if workload:
        graph = api.load_workload(workload, wl.parse_sets(sets), phase, tuple(inputs))
        if source.is_program(workload):
            from rooflab.trace import to_yaml
            doc = to_yaml.document(graph)
        else:
            doc = wl.load_yaml_data(workload)
        chosen = [suite.Case(graph.name, {**doc, "params": {**doc.get("params", {}), **graph.params}},
                             "workload")]
    else:
        # case names hold commas themselves ("add_rmsnorm/T=64,D=4096"): a text naming whole
        # cases is taken as it is, anything else as comma-separated parts
        everything = suite.builtin()
        whole = [c for c in everything if cases and cases in c.name]
        wanted = _split(cases) if cases else []
        chosen = whole or [c for c in everything if not wanted or any(w in c.name for w in wanted)]
    from rooflab.validate import serving as serving_runs
    if from_file and serving_runs.is_serve_file(from_file):
        # measured generation (lab/serve_h200): TTFT and TPOT against rooflab serve
        typer.echo(serving_runs.render(serving_runs.compare(serving_runs.load(from_file), hw)))
        return
    if from_file and steps.is_steps_file(from_file):
        # measured whole steps of Hugging Face models (lab/hf_eager): trace and re-predict each
        typer.echo(steps.render(steps.compare(steps.load(from_file), hw)))
        return
    if from_file:
        from rooflab.validate import records
        vf = records.load(from_file)
        typer.echo(accuracy.render(accuracy.evaluate(vf, hw), hw))
        if html:
            _write_validation_html(html, accuracy.repredicted(vf, hw), force)
        return
    if dry_run:
        from rooflab.validate import dryrun
        dryrun.dry_run(chosen, hw, typer.echo)
        return
    if not gpu:
        raise RooflabError("validate runs kernels only with --gpu (or use --dry-run, or --from FILE)")
    from rooflab.validate import gpu as vgpu
    vgpu.require("validate")
    from rooflab.validate import run as vrun
    out = Path(output or f"reports/validation/{vgpu.slug()}-{vgpu.today()}.json")
    if out.exists() and not force:
        raise RooflabError(f"{out} exists; pass --force to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        vf = vrun.run_suite(chosen, hw, hardware, "rooflab " + " ".join(sys.argv[1:]), out,
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
        wanted = _split(cases) if cases else []
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
        model = workload[3:]
        _, config, path = zoo.resolve_config(model)
        for n in tps:
            zoo.shard_config(config, n, str(path))      # a degree that does not divide: now
        if not gpu:
            raise RooflabError("validate --tp runs the step only with --gpu (or use --from FILE)")
        from rooflab.validate import gpu as vgpu
        vgpu.require("validate")
        import torch
        if max(tps) > torch.cuda.device_count():
            raise RooflabError(f"--tp {tp}: this machine has {torch.cuda.device_count()} GPU(s)")
        from rooflab.validate import tp_run
        from rooflab.validate.calspec import unused_raw_path
        out = Path(output) if output else unused_raw_path(
            Path("reports/validation/tp") / f"{vgpu.slug()}-{vgpu.today()}.json")
        if out.exists() and not force:
            raise RooflabError(f"{out} exists; pass --force to overwrite it")
        doc = tp_run.run(model, tps, tp_run.cases(phase, sets), phase,
                         command="rooflab " + " ".join(sys.argv[1:]))
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


@app.command()
@_errors
def calibrate(
    gpu: Annotated[bool, typer.Option("--gpu", help="Measure the CUDA GPU.")] = False,
    output: Annotated[str, typer.Option("--output", "-o", help="Calibrated spec YAML to write (with --collectives: measured/h200-collectives.yaml by default).")] = _CALIBRATED_SPEC,
    base: Annotated[str, typer.Option("--base", help="Datasheet spec the calibrated one starts from.")] = "h200",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing spec.")] = False,
    torch_suite: Annotated[bool, typer.Option("--torch/--no-torch", help="Also time the torch suite's calibration cases: eager PyTorch's kernel-family curves, torch.compile's host figures.")] = True,
    from_file: Annotated[Optional[str], typer.Option("--from", help="Rebuild the spec from a calibration's raw figures (reports/calibration/<gpu>-<date>.json and its -torch.json) with the current code; no GPU.")] = None,
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
        return _calibrate_collectives(gpu, output, base, force, from_file, torch_run)
    if torch_run and not from_file:
        raise RooflabError("--torch-run goes with --from (a rebuild from raw figures)")
    if not gpu and not from_file:
        raise RooflabError("calibrate measures only with --gpu (or rebuilds a spec --from a "
                           "calibration's raw figures)")
    _check_output("--output", output, force)
    out = Path(output)
    if out.exists() and not force:
        raise RooflabError(f"{out} exists; pass --force to overwrite it")
    base_hw = hwmod.load(base)
    if from_file:
        from rooflab.validate import calspec
        spec, provenance = calspec.spec_and_provenance(base_hw.spec, from_file, torch_run)
        out.write_text(calspec.spec_text(base_hw.spec, spec, provenance))
        typer.echo(printable(f"wrote {out} from {from_file}"))
        if "HOST-BOUND" in spec["memory"]["hbm_curve"].get("note", ""):
            typer.echo(printable(f"warning: {spec['memory']['hbm_curve']['note']}"), err=True)
        return
    from rooflab.validate import gpu as vgpu
    vgpu.require("calibrate")
    from rooflab.validate import calibrate as cal
    from rooflab.validate.calspec import unused_raw_path
    prov = vgpu.provenance("rooflab " + " ".join(sys.argv[1:]))
    raw = unused_raw_path(Path("reports/calibration") / f"{vgpu.slug()}-{prov['date'][:10]}.json")
    cal.calibrate(base_hw.spec, out, raw, prov, log=lambda m: typer.echo(m, err=True),
                  torch_suite=torch_suite)
    typer.echo(printable(f"wrote {out} and {raw}"))


def _calibrate_collectives(gpu: bool, output: str, base: str, force: bool,
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
    if output == _CALIBRATED_SPEC:      # the one-GPU spec stays; this one names its GPU count
        output = output.replace(".yaml", "-collectives.yaml")
    _check_output("--output", output, force)
    base_hw = hwmod.load(base)
    log = lambda m: typer.echo(printable(m), err=True)  # noqa: E731
    if from_file:
        files = [f for f in from_file.split(",") if f]
        for f in files:
            collective_spec.read_run(f)
    else:
        from rooflab.validate import gpu as vgpu
        vgpu.require("calibrate")
        import torch
        collective_spec.worlds(torch.cuda.device_count())        # at least 2 GPUs, before work
        files = collective_spec.measure(Path("reports/validation/collectives"), vgpu.slug(),
                                        vgpu.today(), "rooflab " + " ".join(sys.argv[1:]), log)
    collective_spec.write(base_hw.spec, Path(output), files, log)
    typer.echo(printable(f"wrote {output} from {', '.join(map(str, files))}"))


# ------------------------------------------------------------------------------ fusions
@app.command()
@_errors
def fusions(
    workload: Annotated[str, typer.Argument(help="Workload YAML (or the name of a bundled one), hf:MODEL or py:FILE.py:FACTORY.")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name or YAML path.")] = "h100-sxm",
    baseline: Annotated[str, typer.Option("--baseline", help="Schedule to measure savings against.")] = "unfused",
    schedule: Annotated[str, typer.Option("--schedule", "-s", help="Schedule whose fusions are ranked.")] = "fused",
    compare: Annotated[Optional[str], typer.Option("--compare", help="BASELINE,SCHEDULE in one: inductor,fused ranks what torch.compile leaves on the table.")] = None,
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode: eager, graph or compiled.")] = "graph",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter (repeatable).")] = [],
    phase: Annotated[str, typer.Option("--phase", help=_PHASE_HELP)] = "decode",
    inputs: Annotated[list[str], typer.Option("--input", help=_INPUT_HELP)] = [],
    top: Annotated[int, typer.Option("--top", help="Show this many opportunities.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
):
    """Rank a workload's fusion opportunities by the time they save."""
    from rooflab import api, compare as cmp, workload as wl
    from rooflab.report import comparison, jsonout

    if top < 0:
        raise RooflabError(f"--top {top}: expected a count of zero or more")
    if compare is not None:
        pair = _split(compare)
        if len(pair) != 2:
            raise RooflabError(f"--compare {compare}: expected BASELINE,SCHEDULE, like inductor,fused")
        baseline, schedule = pair
    graph = api.load_workload(workload, wl.parse_sets(sets), phase, tuple(inputs))
    hw = api.load_hardware(hardware)
    modes = _launches(launch)
    if len(modes) != 1:
        raise RooflabError(f"--launch {launch}: fusions takes one launch mode, eager, graph or compiled")
    launch = modes[0]
    c = cmp.compare(api.predict_graph(graph, hw, baseline, launch),
                    api.predict_graph(graph, hw, schedule, launch))
    if as_json:
        typer.echo(jsonout.comparison_json(c).model_dump_json(indent=2))
        return
    typer.echo(comparison.render_ranking(c, top))


# ------------------------------------------------------------------------------ trace
@app.command()
@_errors
def trace(
    source: Annotated[str, typer.Argument(help="hf:MODEL_OR_CONFIG, py:FILE.py:FACTORY (or FILE.py:FACTORY).")],
    phase: Annotated[str, typer.Option("--phase", help=_PHASE_HELP)] = "decode",
    sets: Annotated[list[str], typer.Option("--set", help="batch=, seq=, context= for hf: models; dimension values for --input expressions.")] = [],
    inputs: Annotated[list[str], typer.Option("--input", help=_INPUT_HELP)] = [],
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write the workload YAML here (default: print it).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
):
    """Trace a PyTorch program (a Hugging Face model or your own nn.Module) into a workload YAML."""
    import sys

    from rooflab import api, workload as wl
    from rooflab.trace import to_yaml

    if output:
        _check_output("--output", output, force)
    if not source.startswith(("hf:", "py:")) and ":" in source and source.split(":")[0].endswith(".py"):
        source = "py:" + source
    graph = api.load_workload(source, wl.parse_sets(sets), phase, tuple(inputs))
    text = to_yaml.dump(graph, to_yaml.header(graph, "rooflab trace " + " ".join(sys.argv[2:])))
    if not output:
        typer.echo(text, nl=False)
        return
    with open(output, "w") as f:
        f.write(text)
    for line in [*to_yaml.summary(graph).splitlines(), f"wrote {output}"]:
        typer.echo(printable(line))


# ------------------------------------------------------------------------------ report
@app.command()
@_errors
def report(
    workload: Annotated[str, typer.Argument(help="Workload YAML (or the name of a bundled one), hf:MODEL or py:FILE.py:FACTORY.")],
    output: Annotated[str, typer.Option("--output", "-o", help="The HTML file to write.")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name(s) or YAML path(s), comma-separated.")] = "h100-sxm",
    compare: Annotated[str, typer.Option("--compare", help="Schedules, comma-separated; each after the first is compared with the first.")] = "unfused,fused",
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode(s): eager, graph, compiled (torch.compile; comma-separated).")] = "eager",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter: --set batch=64 (repeatable).")] = [],
    phase: Annotated[str, typer.Option("--phase", help=_PHASE_HELP)] = "decode",
    inputs: Annotated[list[str], typer.Option("--input", help=_INPUT_HELP)] = [],
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
):
    """Write an interactive HTML report: summary, roofline per GPU, time per kernel."""
    from pathlib import Path

    from rooflab import api, workload as wl
    from rooflab.report import html as html_report

    _check_output("--output", output, force)           # fail before predicting
    html_report.check_target(output, force)
    graph = api.load_workload(workload, wl.parse_sets(sets), phase, tuple(inputs))
    gpus = [api.load_hardware(h) for h in _names("--hardware", hardware, "h200,b200")]
    schedules = _split(compare)
    if not schedules:
        raise RooflabError(f"--compare {compare!r}: expected schedules, like unfused,fused")
    preds, comparisons = api.predict_matrix(graph, gpus, schedules, _launches(launch))
    html_report.write_predictions(output, preds, comparisons, force=force)
    typer.echo(printable(f"wrote {output} ({Path(output).stat().st_size / 1e6:.1f} MB)"))


# ------------------------------------------------------------------------------ serving
_SIZES_HELP = "comma-separated, or a range of powers of two: 1,8,32 or 1..256 or 1k..32k"


def _serve_args(model, hardware, batch, input_tokens, output_tokens, sets):
    from rooflab import api, serve, workload as wl
    gpus = [api.load_hardware(h) for h in _names("--hardware", hardware, "h200,b200")]
    return (gpus, serve.parse_sizes("--batch", batch), serve.parse_sizes("--input", input_tokens),
            serve.parse_sizes("--output", output_tokens), wl.parse_sets(sets))


@app.command("serve")
@_errors
def serve_cmd(
    model: Annotated[str, typer.Argument(help="hf:MODEL, or a decode workload YAML declaring batch and context (with seq, or --prefill).")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name(s) or YAML path(s), comma-separated.")] = "h200",
    batch: Annotated[str, typer.Option("--batch", "-b", help="Batch sizes: " + _SIZES_HELP + ".")] = "1,8,32,64",
    input_tokens: Annotated[str, typer.Option("--input", help="Prompt lengths (tokens): " + _SIZES_HELP + ".")] = "2048",
    output_tokens: Annotated[str, typer.Option("--output", help="Generated tokens per request: " + _SIZES_HELP + ".")] = "256",
    schedule: Annotated[str, typer.Option("--schedule", "-s", help="Fusion policy of both phases.")] = "fused",
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode of both phases: eager, graph or compiled.")] = "graph",
    kv: Annotated[str, typer.Option("--kv", help="growing: each decode step attends over the tokens cached so far; static: over input+output (a static cache).")] = "growing",
    prefill: Annotated[Optional[str], typer.Option("--prefill", help="A prefill workload YAML (batch, seq) when MODEL's YAML has no seq.")] = None,
    chunk: Annotated[Optional[int], typer.Option("--chunk", help="Chunked prefill: this many prompt tokens per step, each against the cache so far.")] = None,
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel GPUs per model copy (hf: models are sharded).")] = 1,
    ep: Annotated[int, typer.Option("--ep", help="Expert-parallel groups of a MoE (hf: models): experts split, tokens exchanged; each group serves its own batch.")] = 1,
    dp: Annotated[int, typer.Option("--dp", help="Data-parallel replicas of the whole group, each serving its own batch: throughput x N, latency unchanged.")] = 1,
    max_tpot: Annotated[Optional[str], typer.Option("--max-tpot", help="Pick, per GPU and length, the batch with the most tokens/s under this TPOT (50ms, 0.05s).")] = None,
    max_ttft: Annotated[Optional[str], typer.Option("--max-ttft", help="Likewise under this TTFT.")] = None,
    sets: Annotated[list[str], typer.Option("--set", help="Override another workload parameter (repeatable).")] = [],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (schema rooflab.serve/1, docs/serving.md).")] = False,
):
    """TTFT, TPOT, latency, tokens/s and memory fit of serving a model, per batch size."""
    from rooflab import serve
    from rooflab.report import serving

    gpus, batches, inputs, outputs, overrides = _serve_args(model, hardware, batch, input_tokens,
                                                            output_tokens, sets)
    limits = (_duration("--max-tpot", max_tpot), _duration("--max-ttft", max_ttft))
    table = serve.serve(model, gpus, batches, inputs, outputs, schedule, launch,
                        prefill_source=prefill, sets=overrides, kv=kv, chunk=chunk, tp=tp, ep=ep,
                        dp=dp)
    title = ""
    if any(v is not None for v in limits):
        table = serve.best_under(table, *limits)
        title = (f"{table.meta['model']}: the batch with the most tokens/s "
                 + " and ".join(f"{n} <= {t}" for n, t in (("TPOT", max_tpot), ("TTFT", max_ttft))
                                if t))
        if not len(table):
            title += ": no configuration meets the limit"
    typer.echo(table.to_json() if as_json else serving.render(table, title))


def _duration(option: str, text: str | None) -> float | None:
    """Seconds from "50ms", "0.05s", "50us" or a bare number of seconds."""
    if text is None:
        return None
    t = text.strip().lower()
    for unit, scale in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0)):
        if t.endswith(unit):
            t, factor = t[: -len(unit)], scale
            break
    else:
        factor = 1.0
    try:
        v = float(t) * factor
    except ValueError:
        raise RooflabError(f"{option} {text!r}: expected a time like 50ms or 0.05s") from None
    if not v > 0 or v == float("inf"):
        raise RooflabError(f"{option} {text!r}: must be a positive time")
    return v


def _variants(sets: list[str]) -> list[dict]:
    """Every combination of the --set values, a comma giving several: --set kv_dtype=bf16,fp8
    --set D=4096 is two variants."""
    import itertools

    from rooflab import workload as wl
    axes = []
    for item in sets:
        key, sep, vals = item.partition("=")
        if not sep:
            raise RooflabError(f"--set {item}: expected name=value")
        axes.append([wl.parse_sets([f"{key}={v}"]) for v in _split(vals) or [""]])
    return [{k: v for d in combo for k, v in d.items()} for combo in itertools.product(*axes)]


@app.command("sweep")
@_errors
def sweep_cmd(
    model: Annotated[str, typer.Argument(help="hf:MODEL, or a decode workload YAML declaring batch and context (with seq, or --prefill).")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name(s) or YAML path(s), comma-separated.")] = "h200",
    batch: Annotated[str, typer.Option("--batch", "-b", help="Batch sizes: " + _SIZES_HELP + ".")] = "1..256",
    input_tokens: Annotated[str, typer.Option("--input", "--context", help="Prompt lengths (tokens): " + _SIZES_HELP + ".")] = "2048",
    output_tokens: Annotated[str, typer.Option("--output", help="Generated tokens per request: " + _SIZES_HELP + ".")] = "256",
    schedules: Annotated[str, typer.Option("--schedule", "-s", help="Fusion policies, comma-separated.")] = "fused",
    launches: Annotated[str, typer.Option("--launch", "-l", help="Launch modes, comma-separated.")] = "graph",
    kv: Annotated[str, typer.Option("--kv", help="growing or static (see serve).")] = "growing",
    prefill: Annotated[Optional[str], typer.Option("--prefill", help="A prefill workload YAML (batch, seq) when MODEL's YAML has no seq.")] = None,
    chunk: Annotated[Optional[int], typer.Option("--chunk", help="Chunked prefill: this many prompt tokens per step.")] = None,
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel GPUs per model copy (hf: models are sharded).")] = 1,
    ep: Annotated[int, typer.Option("--ep", help="Expert-parallel groups of a MoE (hf: models): experts split, tokens exchanged; each group serves its own batch.")] = 1,
    dp: Annotated[int, typer.Option("--dp", help="Data-parallel replicas of the whole group, each serving its own batch: throughput x N, latency unchanged.")] = 1,
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter; commas sweep it: --set kv_dtype=bf16,fp8 (repeatable).")] = [],
    csv_path: Annotated[Optional[str], typer.Option("--csv", help="Write the table as CSV here.")] = None,
    json_path: Annotated[Optional[str], typer.Option("--json", help="Write the table as JSON (rooflab.serve/1) here.")] = None,
    html: Annotated[Optional[str], typer.Option("--html", help="Write an interactive HTML report here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Let the outputs overwrite existing files.")] = False,
):
    """serve over a grid: batch x input x GPU x schedule x launch, priced at once (numpy)."""
    from pathlib import Path

    from rooflab import serve
    from rooflab.report import serving

    outputs = [(o, p) for o, p in (("--csv", csv_path), ("--json", json_path), ("--html", html)) if p]
    for option, path in outputs:
        _check_output(option, path, force)
    gpus, batches, inputs, outs, _ = _serve_args(model, hardware, batch, input_tokens,
                                                 output_tokens, [])
    variants = _variants(sets)
    table = serve.sweep(model, gpus, batches, inputs, outs, _names("--schedule", schedules, "unfused,fused"),
                        _launches(launches), prefill_source=prefill, variants=variants, kv=kv,
                        chunk=chunk, tp=tp, ep=ep, dp=dp)
    for option, path in outputs:
        if option == "--html":
            from rooflab.report import html as html_report
            html_report.write_sweep(path, table, force=force)
        else:
            Path(path).write_text(table.to_csv() if option == "--csv" else table.to_json(),
                                  encoding="utf-8")
    if not outputs or len(table) <= 200:
        typer.echo(serving.render(table))
    for option, path in outputs:
        typer.echo(printable(f"wrote {path}"))


def main() -> None:
    # A 100,000-op graph is millions of long-lived objects without cycles; at the default
    # thresholds the cyclic collector rescans them over and over (two thirds of the run).
    import gc
    gc.set_threshold(50_000, 1000, 1000)
    app()


if __name__ == "__main__":
    main()
