"""What every `rooflab` command shares: the Typer app, the one-line error rule, option parsing
and the output-path check."""

from __future__ import annotations

import functools
import os
import stat
from typing import Annotated

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


def user_errors(fn):
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
PHASE_HELP = "hf: sources: the step traced, decode (the default: one token against --set context), prefill (--set seq) or extend."
CALIBRATED_SPEC = "hardware_specs/measured/h200.yaml"
# "\\[" keeps rich, which renders the help, from reading [dims] as a style tag
INPUT_HELP = "py: sources: a forward input, name=\\[dims]:dtype, like x=[16,4096]:bf16 (repeatable)."


def split_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def names_of(option: str, value: str, example: str) -> list[str]:
    """The comma-separated names of `option`; RooflabError when there are none, one is empty
    (a stray comma) or one is named twice."""
    names = split_list(value)
    if not names:
        raise RooflabError(f"{option} {value!r}: expected one or more names, like {example}")
    if len(names) != len(value.split(",")):
        raise RooflabError(f"{option} {value!r}: an empty name between commas")
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice:
        raise RooflabError(f"{option} {value!r}: {twice} is named twice")
    return names


def one_gpu(value: str, command: str) -> str:
    """The one GPU spec `command` runs on; RooflabError for a comma-separated list."""
    names = split_list(value)
    if len(names) > 1:
        raise RooflabError(f"--hardware {value}: {command} takes one GPU (predict, report, "
                           "serve and sweep compare several)")
    return names[0] if names else value


def check_outputs(outputs: list[tuple[str, str]], force: bool,
                  make_parents: tuple[str, ...] = (), reads: tuple[str | None, ...] = ()) -> None:
    """check_output of each (option, path), the options in `make_parents` making their
    missing folders, and refuse two options naming one file (the second would write over the
    first)."""
    seen: dict[str, str] = {}
    for option, path in outputs:
        check_output(option, path, force, option in make_parents, reads)
        key = os.path.realpath(path)
        if key in seen:
            raise RooflabError(f"{option} {path}: {seen[key]} writes that file too; give each "
                               "output its own file")
        seen[key] = option


def read_files(reads: tuple[str | None, ...]) -> list[str]:
    """The files on disk that a command's arguments `reads` name: workload, spec and run paths
    and comma-separated lists of them, py:FILE.py:FACTORY sources, hf:CONFIG.json or hf:FOLDER
    (its config.json). A bare name (h200, fused, llama3-8b) names a bundled file, not one here,
    as the loaders read it."""
    files = []
    for arg in reads:
        for part in split_list(arg or ""):
            if part.startswith("hf:"):
                part = part[3:]
                part = os.path.join(part, "config.json") if os.path.isdir(part) else part
            elif part.removeprefix("py:").rpartition(":")[0].endswith(".py"):
                part = part.removeprefix("py:").rpartition(":")[0]
            path_like = os.sep in part or part.endswith((".yaml", ".yml", ".json", ".py"))
            if path_like and os.path.isfile(part):
                files.append(part)
    return files


def check_output(option: str, path: str, force: bool, make_parents: bool = False,
                 reads: tuple[str | None, ...] = ()) -> None:
    """Refuse, before any work, an output path that could not be written or would lose a
    file: a name too long, a folder that is missing (unless `make_parents`) or is a file, a
    target that is a folder, not a regular file or one of the files the command reads
    (`reads`: its input arguments, read_files) even with --force, or one that exists without
    --force."""
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
        read = next((f for f in read_files(reads) if os.path.samefile(f, path)), None)
        if read is not None:
            raise RooflabError(f"{where}: is {read}, which this command reads; not writing "
                               "over it, even with --force")
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


def launch_modes(value: str) -> list[str]:
    from rooflab.launch import LAUNCH_MODES
    modes = names_of("--launch", value, "eager,graph")
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
