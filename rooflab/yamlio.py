"""Read YAML files with line numbers, and turn pydantic errors into one-line RooflabErrors."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rooflab.errors import RooflabError


class Located:
    """Parsed YAML plus the node tree, so a path like ('ops', 3, 'kind') maps to a line."""

    def __init__(self, data: Any, node: yaml.Node | None, file: str):
        self.data = data
        self.node = node
        self.file = file

    def line_of(self, loc: tuple) -> int | None:
        """1-based line of the deepest node along `loc` that exists, or None."""
        node, line = self.node, None
        for key in loc:
            if node is None:
                break
            line = node.start_mark.line + 1
            if isinstance(node, yaml.MappingNode):
                node = next((v for k, v in node.value if k.value == str(key)), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int):
                node = node.value[key] if 0 <= key < len(node.value) else None
            else:
                node = None
        if node is not None:
            line = node.start_mark.line + 1
        return line

    def error(self, problem: str, loc: tuple = (), place: str | None = None) -> RooflabError:
        return RooflabError(problem, file=self.file, line=self.line_of(loc),
                            place=place if place is not None else format_loc(loc))


def load_yaml(path: str | Path, what: str) -> Located:
    """Read a YAML mapping from `path`; every failure is a RooflabError naming the file."""
    path = Path(path)
    name = str(path)
    if not path.exists():
        raise RooflabError(f"{what} file not found", file=name)
    if path.is_dir():
        raise RooflabError(f"is a directory, expected a {what} YAML file", file=name)
    raw = path.read_bytes()
    if b"\0" in raw:
        raise RooflabError(f"binary file, expected a {what} YAML file", file=name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RooflabError(f"not UTF-8 text (byte {e.start}), expected a {what} YAML file",
                           file=name) from None
    if not text.strip():
        raise RooflabError(f"empty file, expected a {what} YAML file", file=name)
    try:
        data, node = _parse(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        raise RooflabError(f"malformed YAML: {problem}", file=name,
                           line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise RooflabError(f"expected a mapping at the top of the {what} file, "
                           f"got {type(data).__name__}", file=name, line=1)
    return Located(data, node, name)


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml when present: ~10x faster


def _parse(text: str):
    """Compose the node tree once (it keeps line marks) and build the data from it."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node


def format_loc(loc: tuple) -> str:
    out = ""
    for key in loc:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def raise_first(err: ValidationError, doc: Located, tags: set[str] = frozenset()) -> None:
    """Raise the first pydantic error of `err` as a RooflabError at its YAML line.

    `tags` are discriminator values that pydantic inserts into `loc`; they are dropped so
    the place reads `ops[2].axis`, not `ops[2].softmax.axis`.
    """
    e = err.errors()[0]
    loc = tuple(k for i, k in enumerate(e["loc"])
                if not (isinstance(k, str) and k in tags and i > 0))
    msg = e["msg"]
    if e["type"] == "extra_forbidden":
        msg = f"unknown field '{loc[-1]}'"
        loc = loc[:-1] + (loc[-1],)
    elif e["type"] == "missing":
        msg = f"missing required field '{loc[-1]}'"
    n_more = len(err.errors()) - 1
    if n_more:
        msg += f" (and {n_more} more problem{'s' if n_more > 1 else ''})"
    raise doc.error(msg, loc) from None


def did_you_mean(name: str, choices) -> str:
    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
