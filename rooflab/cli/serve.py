"""`rooflab serve` and `rooflab sweep`: serving answers (TTFT, TPOT, fit) and parameter sweeps."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from rooflab.cli.common import app, check_outputs, launch_modes, names_of, split_list, user_errors
from rooflab.errors import RooflabError
from rooflab.terminal import printable


_SIZES_HELP = ("comma-separated, or a range doubling from its start to its end: 1,8,32 or "
               "1..256 or 1k..32k")


def _serve_args(model, hardware, batch, input_tokens, output_tokens, sets):
    from rooflab import api, serve, workload as wl
    gpus = [api.load_hardware(h) for h in names_of("--hardware", hardware, "h200,b200")]
    return (gpus, serve.parse_sizes("--batch", batch), serve.parse_sizes("--input", input_tokens),
            serve.parse_sizes("--output", output_tokens), wl.parse_sets(sets))


@app.command("serve")
@user_errors
def serve_cmd(
    model: Annotated[str, typer.Argument(help="hf:MODEL, or a decode workload YAML declaring batch and context (with seq, or --prefill).")],
    hardware: Annotated[str, typer.Option("--hardware", "-H", help="GPU spec name(s) or YAML path(s), comma-separated.")] = "h200",
    batch: Annotated[str, typer.Option("--batch", "-b", help="Batch sizes: " + _SIZES_HELP + ".")] = "1,8,32,64",
    input_tokens: Annotated[str, typer.Option("--input", help="Prompt lengths (tokens): " + _SIZES_HELP + ".")] = "2048",
    output_tokens: Annotated[str, typer.Option("--output", help="Generated tokens per request: " + _SIZES_HELP + ".")] = "256",
    schedule: Annotated[str, typer.Option("--schedule", "-s", help="Fusion policy of both phases.")] = "fused",
    launch: Annotated[str, typer.Option("--launch", "-l", help="Launch mode of both phases: eager, graph, compiled or reduce-overhead.")] = "graph",
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
        title = ("the batch with the most tokens/s "
                 + " and ".join(f"{n} <= {t}" for n, t in (("TPOT", max_tpot), ("TTFT", max_ttft))
                                if t))
        if not len(table):
            title += ": no configuration meets the limit"
    typer.echo(table.to_json() if as_json else serving.render(table, title))


def _duration(option: str, text: str | None) -> float | None:
    """Seconds from "50ms", "0.05s" or "50us". A bare number is refused: TPOTs are quoted in
    milliseconds and TTFTs in seconds, so either reading of "50" would surprise someone."""
    if text is None:
        return None
    t = text.strip().lower().replace("\u03bc", "\u00b5")      # Greek mu, as the micro sign
    for unit, scale in (("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("s", 1.0)):
        if t.endswith(unit):
            t, factor = t[: -len(unit)], scale
            break
    else:
        raise RooflabError(f"{option} {text!r}: expected a time with a unit (ms, us or s), "
                           "as in 50ms or 0.05s")
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
        axes.append([wl.parse_sets([f"{key}={v}"]) for v in split_list(vals) or [""]])
    return [{k: v for d in combo for k, v in d.items()} for combo in itertools.product(*axes)]


@app.command("sweep")
@user_errors
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

    outputs = [(o, p) for o, p in (("--csv", csv_path), ("--json", json_path), ("--html", html))
               if p is not None]
    check_outputs(outputs, force, reads=(model, hardware, prefill, schedules))
    gpus, batches, inputs, outs, _ = _serve_args(model, hardware, batch, input_tokens,
                                                 output_tokens, [])
    variants = _variants(sets)
    table = serve.sweep(model, gpus, batches, inputs, outs, names_of("--schedule", schedules, "unfused,fused"),
                        launch_modes(launches), prefill_source=prefill, variants=variants, kv=kv,
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
