"""The `rooflab` command line: parse, call the library, render. Nothing here computes a cost."""

from __future__ import annotations

import functools
from typing import Annotated, Optional

import typer

from rooflab import __version__
from rooflab.errors import RooflabError

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
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
    return wrapper


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


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


# ------------------------------------------------------------------------------ predict
@app.command()
@_errors
def predict(
    workload: Annotated[str, typer.Argument(help="Workload YAML (or the name of a bundled one).")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name(s) or YAML path(s), comma-separated.")] = "h100-sxm",
    schedule: Annotated[str, typer.Option("--schedule", "-s", help="Fusion policy: unfused, epilogue, fused, or a policy YAML.")] = "unfused",
    compare: Annotated[Optional[str], typer.Option("--compare", help="Two schedules A,B: print both and what B's fusions save over A.")] = None,
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode(s): eager, graph (comma-separated).")] = "eager",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter: --set batch=64 (repeatable).")] = [],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (schema rooflab.prediction/1) instead of tables.")] = False,
    all_kernels: Annotated[bool, typer.Option("--all", help="One row per kernel; do not fold repeated blocks.")] = False,
    html: Annotated[Optional[str], typer.Option("--html", help="Also write an interactive HTML report here.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Let --html overwrite an existing file.")] = False,
):
    """Predict FLOPs, HBM bytes, launches and time per kernel, and the schedule's totals."""
    from rooflab import api, compare as cmp, workload as wl
    from rooflab.report import jsonout, table

    overrides = wl.parse_sets(sets)
    graph = api.load_workload(workload, overrides)
    gpus = [api.load_hardware(h) for h in _split(hardware)]
    launches = _split(launch)
    for mode in launches:
        if mode not in ("eager", "graph"):
            raise RooflabError(f"--launch {mode}: expected eager or graph")
    schedules = _split(compare) if compare else [schedule]
    if compare and len(schedules) != 2:
        raise RooflabError(f"--compare {compare}: expected two schedules, like unfused,fused")
    preds, comparisons = [], []
    for hw in gpus:
        for mode in launches:
            ps = [api.predict_graph(graph, hw, s, mode) for s in schedules]
            preds += ps
            if compare:
                comparisons.append(cmp.compare(ps[0], ps[1]))
    if html:
        from rooflab.report import html as html_report
        html_report.write_predictions(html, preds, comparisons, force=force)
    if as_json:
        out = jsonout.PredictionsJSON(predictions=[jsonout.prediction_json(p) for p in preds],
                                      comparisons=[cmp.comparison_json(c) for c in comparisons])
        typer.echo(out.dump())
        return
    blocks = [table.render(p, all_kernels=all_kernels) for p in preds]
    blocks += [cmp.render(c) for c in comparisons]
    if html:
        blocks.append(f"wrote {html}")
    typer.echo("\n\n".join(blocks))


# ------------------------------------------------------------------------------ fusions
@app.command()
@_errors
def fusions(
    workload: Annotated[str, typer.Argument(help="Workload YAML (or the name of a bundled one).")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name or YAML path.")] = "h100-sxm",
    baseline: Annotated[str, typer.Option("--baseline", help="Schedule to measure savings against.")] = "unfused",
    schedule: Annotated[str, typer.Option("--schedule", "-s", help="Schedule whose fusions are ranked.")] = "fused",
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode: eager or graph.")] = "graph",
    sets: Annotated[list[str], typer.Option("--set", help="Override a workload parameter (repeatable).")] = [],
    top: Annotated[int, typer.Option("--top", help="Show this many opportunities.")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
):
    """Rank a workload's fusion opportunities by the time they save."""
    from rooflab import api, compare as cmp, workload as wl

    graph = api.load_workload(workload, wl.parse_sets(sets))
    hw = api.load_hardware(hardware)
    if launch not in ("eager", "graph"):
        raise RooflabError(f"--launch {launch}: expected eager or graph")
    c = cmp.compare(api.predict_graph(graph, hw, baseline, launch),
                    api.predict_graph(graph, hw, schedule, launch))
    if as_json:
        typer.echo(cmp.comparison_json(c).model_dump_json(indent=2))
        return
    typer.echo(cmp.render_ranking(c, top))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
