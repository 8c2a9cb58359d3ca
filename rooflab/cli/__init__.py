"""The `rooflab` command line: parse, call the library, render. Nothing here computes a cost.

One module per group of commands (catalog, predict, validate, calibrate, serve), all on the one
Typer app of `common`; importing them registers their commands, in the order `--help` lists them.
"""

# the order --help lists the commands in
from rooflab.cli import catalog, predict, validate, calibrate, serve  # noqa: F401, I001
from rooflab.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    """Run the command line and exit: 0 on success, 2 on a usage or input error (one line on
    stderr, like every other user mistake), 130 on Ctrl-C."""
    # A 100,000-op graph is millions of long-lived objects without cycles; at the default
    # thresholds the cyclic collector rescans them over and over (two thirds of the run).
    import gc
    import sys

    import typer

    from rooflab.terminal import printable
    gc.set_threshold(50_000, 1000, 1000)
    try:
        # not standalone: Typer would box a usage error in a 4-line panel
        status = app(prog_name="rooflab", standalone_mode=False)
    except typer.TyperException as e:  # click's usage errors (Typer >= 0.29 vendors click)
        # no arguments at all: the help is already on stdout
        if type(e).__name__ != "NoArgsIsHelpError":
            ctx = getattr(e, "ctx", None)
            command = ctx.command_path if ctx is not None else "rooflab"
            typer.echo(f"error: {command}: {printable(e.format_message())} "
                       f"(see {command} -h)", err=True)
        sys.exit(e.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(1)
    # a command's return value is not a status; typer.Exit(n) comes back as n
    sys.exit(status if isinstance(status, int) else 0)
