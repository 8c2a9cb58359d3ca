"""The `rooflab` command line: parse, call the library, render. Nothing here computes a cost.

One module per group of commands (catalog, predict, validate, calibrate, serve), all on the one
Typer app of `common`; importing them registers their commands, in the order `--help` lists them.
"""

# the order --help lists the commands in
from rooflab.cli import catalog, predict, validate, calibrate, serve  # noqa: F401, I001
from rooflab.cli.common import app

__all__ = ["app", "main"]


def main() -> None:
    # A 100,000-op graph is millions of long-lived objects without cycles; at the default
    # thresholds the cyclic collector rescans them over and over (two thirds of the run).
    import gc
    gc.set_threshold(50_000, 1000, 1000)
    app()
