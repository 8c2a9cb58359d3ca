"""`rooflab predict`, `fusions`, `trace` and `report`: a workload priced, its fusions ranked,
a program traced, a report written."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from rooflab.cli.common import (INPUT_HELP, PHASE_HELP, app, check_output, launch_modes, names_of,
                                one_gpu, split_list, user_errors)
from rooflab.errors import RooflabError
from rooflab.terminal import printable


# ------------------------------------------------------------------------------ predict
@app.command()
@user_errors
def predict(
    workload: Annotated[str, typer.Argument(help="Workload YAML (or the name of a bundled one), hf:MODEL or py:FILE.py:FACTORY.")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name(s) or YAML path(s), comma-separated.")] = "h100-sxm",
    schedule: Annotated[Optional[str], typer.Option("--schedule", "-s", help="Fusion policy: unfused (the default), epilogue, fused, inductor (torch.compile's default), or a policy YAML.")] = None,
    compare: Annotated[Optional[str], typer.Option("--compare", help="Schedules A,B[,C...]: print each and what each later one's fusions save over A.")] = None,
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode(s): eager, graph, compiled, reduce-overhead (the last two torch.compile's; comma-separated).")] = "eager",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter: --set batch=64 (repeatable).")] = [],
    phase: Annotated[Optional[str], typer.Option("--phase", help=PHASE_HELP)] = None,
    inputs: Annotated[list[str], typer.Option("--input", help=INPUT_HELP)] = [],
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

    if html is not None:
        check_output("--html", html, force,             # fail before predicting
                     reads=(workload, hardware, schedule, compare))
    overrides = wl.parse_sets(sets)
    for flag, n in (("--tp", tp), ("--ep", ep), ("--pp", pp), ("--nodes", nodes),
                    ("--microbatches", microbatches)):
        if n < 1:
            raise RooflabError(f"{flag} {n}: expected a positive number")
    if overlap and as_json:
        raise RooflabError("--overlap with --json: the prediction schema (rooflab.prediction/1) "
                           "has no place for overlapped times; drop one of them")
    if schedule is not None and compare is not None:
        raise RooflabError("-s and --compare: --compare names every schedule printed; drop -s "
                           "or add it to --compare")
    schedule = schedule or "unfused"
    if nodes > 1 and pp == 1:
        raise RooflabError("--nodes: the nodes a pipeline's stages spread over; give --pp 2 or "
                           "more")
    if microbatches > 1 and pp == 1:
        raise RooflabError("--microbatches: micro-batches fill a pipeline; give --pp 2 or more")
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
        # a pipeline prints its stages under one schedule and launch mode: refuse what it drops
        dropped = [flag for flag, given in (("--json", as_json), ("--html", html),
                                            ("--compare", compare), ("--all", all_kernels),
                                            ("several --launch modes", "," in launch))
                   if given]
        if dropped:
            raise RooflabError(f"--pp with {dropped[0]}: a pipeline prints its stage tables only, "
                               "under one schedule (-s) and one launch mode; drop one of them")
        from rooflab.report import parallel
        gpus = [api.load_hardware(h) for h in names_of("--hardware", hardware, "h200,b200")]
        for hw in gpus:
            preds, timing = api.predict_pipeline(workload, hw, overrides, phase, schedule,
                                                 launch_modes(launch)[0], pp, nodes, microbatches)
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
    gpus = [api.load_hardware(h) for h in names_of("--hardware", hardware, "h200,b200")]
    if compare is not None and len(split_list(compare)) < 2:
        raise RooflabError(f"--compare {compare}: expected two or more schedules, like "
                           "unfused,fused (each later one is compared with the first)")
    schedules = names_of("--compare", compare, "unfused,fused") if compare is not None \
        else [schedule]
    preds, comparisons = api.predict_matrix(graph, gpus, schedules, launch_modes(launch))
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



# ------------------------------------------------------------------------------ fusions
@app.command()
@user_errors
def fusions(
    workload: Annotated[str, typer.Argument(help="Workload YAML (or the name of a bundled one), hf:MODEL or py:FILE.py:FACTORY.")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name or YAML path.")] = "h100-sxm",
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="Schedule to measure savings against (default unfused).")] = None,
    schedule: Annotated[Optional[str], typer.Option("--schedule", "-s", help="Schedule whose fusions are ranked (default fused).")] = None,
    compare: Annotated[Optional[str], typer.Option("--compare", help="BASELINE,SCHEDULE in one: inductor,fused ranks what torch.compile leaves on the table.")] = None,
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode: eager, graph, compiled or reduce-overhead (torch.compile's).")] = "graph",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter (repeatable).")] = [],
    phase: Annotated[Optional[str], typer.Option("--phase", help=PHASE_HELP)] = None,
    inputs: Annotated[list[str], typer.Option("--input", help=INPUT_HELP)] = [],
    top: Annotated[int, typer.Option("--top", help="Show this many opportunities.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
):
    """Rank a workload's fusion opportunities by the time they save."""
    from rooflab import api, compare as cmp, workload as wl
    from rooflab.report import comparison, jsonout

    if top < 0:
        raise RooflabError(f"--top {top}: expected a count of zero or more")
    if compare is not None:
        pair = names_of("--compare", compare, "inductor,fused")
        if len(pair) != 2:
            raise RooflabError(f"--compare {compare}: expected BASELINE,SCHEDULE, like inductor,fused")
        if baseline is not None or schedule is not None:
            raise RooflabError("--compare BASELINE,SCHEDULE names both; leave out --baseline "
                               "and --schedule")
        baseline, schedule = pair
    baseline, schedule = baseline or "unfused", schedule or "fused"
    hw = api.load_hardware(one_gpu(hardware, "fusions"))
    graph = api.load_workload(workload, wl.parse_sets(sets), phase, tuple(inputs))
    modes = launch_modes(launch)
    if len(modes) != 1:
        raise RooflabError(f"--launch {launch}: fusions takes one launch mode (eager, graph, "
                           "compiled or reduce-overhead)")
    launch = modes[0]
    c = cmp.compare(api.predict_graph(graph, hw, baseline, launch),
                    api.predict_graph(graph, hw, schedule, launch))
    if as_json:
        typer.echo(jsonout.comparison_json(c).model_dump_json(indent=2))
        return
    typer.echo(comparison.render_ranking(c, top))


# ------------------------------------------------------------------------------ trace
@app.command()
@user_errors
def trace(
    source: Annotated[str, typer.Argument(help="hf:MODEL_OR_CONFIG, py:FILE.py:FACTORY (or FILE.py:FACTORY).")],
    phase: Annotated[Optional[str], typer.Option("--phase", help=PHASE_HELP)] = None,
    sets: Annotated[list[str], typer.Option("--set", help="batch=, seq=, context= for hf: models; dimension values for --input expressions.")] = [],
    inputs: Annotated[list[str], typer.Option("--input", help=INPUT_HELP)] = [],
    output: Annotated[Optional[str], typer.Option("--output", "-o", help="Write the workload YAML here (default: print it).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
):
    """Trace a PyTorch program (a Hugging Face model or your own nn.Module) into a workload YAML."""
    import sys

    from rooflab import api, workload as wl
    from rooflab.trace import to_yaml

    if output:
        check_output("--output", output, force, reads=(source,))
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
@user_errors
def report(
    workload: Annotated[str, typer.Argument(help="Workload YAML (or the name of a bundled one), hf:MODEL or py:FILE.py:FACTORY.")],
    output: Annotated[str, typer.Option("--output", "-o", help="The HTML file to write.")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name(s) or YAML path(s), comma-separated.")] = "h100-sxm",
    compare: Annotated[str, typer.Option("--compare", help="Schedules, comma-separated; each after the first is compared with the first.")] = "unfused,fused",
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode(s): eager, graph, compiled, reduce-overhead (the last two torch.compile's; comma-separated).")] = "eager",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter: --set batch=64 (repeatable).")] = [],
    phase: Annotated[Optional[str], typer.Option("--phase", help=PHASE_HELP)] = None,
    inputs: Annotated[list[str], typer.Option("--input", help=INPUT_HELP)] = [],
    force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
):
    """Write an interactive HTML report: summary, roofline per GPU, time per kernel."""
    from pathlib import Path

    from rooflab import api, workload as wl
    from rooflab.report import html as html_report

    check_output("--output", output, force,           # fail before predicting
                 reads=(workload, hardware, compare))
    html_report.check_target(output, force)
    graph = api.load_workload(workload, wl.parse_sets(sets), phase, tuple(inputs))
    gpus = [api.load_hardware(h) for h in names_of("--hardware", hardware, "h200,b200")]
    schedules = names_of("--compare", compare, "unfused,fused")
    preds, comparisons = api.predict_matrix(graph, gpus, schedules, launch_modes(launch))
    html_report.write_predictions(output, preds, comparisons, force=force)
    typer.echo(printable(f"wrote {output} ({Path(output).stat().st_size / 1e6:.1f} MB)"))
