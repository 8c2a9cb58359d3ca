"""`rooflab hardware list|show` and `rooflab models`: what specs and model configs there are."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from rooflab.cli.common import app, hardware_app, user_errors
from rooflab.errors import RooflabError
from rooflab.terminal import printable


@hardware_app.command("list")
@user_errors
def hardware_list():
    """One line per bundled GPU spec: dense peaks, memory and bandwidth."""
    from rooflab.report import specs
    typer.echo(specs.render_list())


@hardware_app.command("show")
@user_errors
def hardware_show(name: Annotated[str, typer.Argument(help="Spec name (see `hardware list`) or a YAML path.")]):
    """Every figure of one spec, with its source."""
    from rooflab import hardware
    from rooflab.report import specs
    typer.echo(specs.render_show(hardware.load(name)))


# ------------------------------------------------------------------------------ models
@app.command("models")
@user_errors
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
    typer.echo("Weights as each checkpoint stores them, KV cache at the config's dtype; active = "
               "parameters one token uses (MoE: top-k of the routed experts).\n\n"
               + grid(cols, rows, left={0, 1, 7}))
    for i in infos:
        if i.quantization_note:
            typer.echo(printable(f"note: {i.quantization_note}"))  # from the user's file
