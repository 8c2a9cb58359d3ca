"""Read YAML files with line numbers, and turn pydantic errors into one-line RooflabErrors."""

from __future__ import annotations

import difflib
import os
import stat
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


# Largest YAML file read (bytes): a flat 100,000-op workload is about 10 MB.
MAX_FILE_BYTES = 64 * 1024 * 1024
# Largest node count the document would have with its aliases expanded (a "billion laughs"
# file of nested aliases is small on disk but huge once built).
MAX_NODES = 10_000_000


def read_file(path: str | Path, what: str) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES; RooflabError naming the file
    for a missing, special (FIFO, device), unreadable or oversized one. Never blocks."""
    name = str(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise RooflabError(f"{what} file not found", file=name) from None
    except IsADirectoryError:
        raise RooflabError(f"is a directory, expected a {what} YAML file", file=name) from None
    except OSError as e:
        raise RooflabError(f"cannot read the {what} file: {e.strerror or e}", file=name) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise RooflabError(f"is a directory, expected a {what} YAML file", file=name)
        if not stat.S_ISREG(st.st_mode):
            raise RooflabError(f"not a regular file (a FIFO, device or socket), expected a "
                               f"{what} YAML file", file=name)
        if st.st_size > MAX_FILE_BYTES:
            raise RooflabError(f"file is {st.st_size} bytes; a {what} file may have at most "
                               f"{MAX_FILE_BYTES} ({MAX_FILE_BYTES >> 20} MiB)", file=name)
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise RooflabError(f"cannot read the {what} file: {e.strerror or e}", file=name) from None
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:          # grew while we read it
        raise RooflabError(f"a {what} file may have at most {MAX_FILE_BYTES} bytes", file=name)
    return raw


def load_yaml(path: str | Path, what: str) -> Located:
    """Read a YAML mapping from `path`; every failure is a RooflabError naming the file.
    Duplicate keys in a mapping are refused (YAML would silently keep the last)."""
    path = Path(path)
    name = str(path)
    raw = read_file(path, what)
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
    except RooflabError as e:
        raise e.with_file(name) from None
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
    """Compose the node tree once (it keeps line marks), check it, and build the data from it."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_nodes(node)
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return data, node


def _check_nodes(root: yaml.Node) -> None:
    """Refuse duplicate mapping keys and documents that expand past MAX_NODES; a RooflabError
    (without the file, which the caller adds) at the second key's line."""
    size: dict[int, int] = {}          # node id -> nodes under it, aliases expanded
    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        kids = ([n for kv in node.value for n in kv] if isinstance(node, yaml.MappingNode)
                else node.value if isinstance(node, yaml.SequenceNode) else [])
        if done:
            n = 1 + sum(size[id(k)] for k in kids)
            if n > MAX_NODES:
                raise RooflabError(f"the document expands to more than {MAX_NODES} nodes "
                                   "(aliases repeat their anchor)", line=node.start_mark.line + 1)
            size[id(node)] = n
            continue
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for k, _ in node.value:
                if not isinstance(k, yaml.ScalarNode) or k.value == "<<":
                    continue
                key = (k.tag, k.value)
                if key in seen:
                    raise RooflabError(f"duplicate key '{k.value}' (first at line {seen[key]}); "
                                       "YAML would keep only the last",
                                       line=k.start_mark.line + 1)
                seen[key] = k.start_mark.line + 1
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in size)


def format_loc(loc: tuple) -> str:
    out = ""
    for key in loc:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def raise_first(err: ValidationError, doc: Located, tags: set[str] = frozenset(),
                prefix: tuple = ()) -> None:
    """Raise the first pydantic error of `err` as a RooflabError at its YAML line.

    `tags` are discriminator values that pydantic inserts into `loc`; they are dropped so
    the place reads `ops[2].axis`, not `ops[2].softmax.axis`. `prefix`: the place in `doc` of
    the item that was validated (an op inside `ops`).
    """
    e = err.errors()[0]
    loc = prefix + tuple(k for i, k in enumerate(e["loc"])
                         if not (isinstance(k, str) and k in tags and i > 0))
    msg = e["msg"]
    alternatives = _union_alternatives(err.errors(), e)
    if len(alternatives) > 1:
        # a value no member of a union accepts: pydantic reports one error per member
        loc = loc[:-1]
        msg = f"expected {' or '.join(_TYPE_WORDS.get(a, a) for a in alternatives)}, " \
              f"got {e.get('input')!r}"
    elif e["type"] == "value_error":
        # a validator's own message; one that opens with the place it is about
        # ("launch.min_kernel_us: ...") is reported at that place's line
        msg = msg.removeprefix("Value error, ")
        head, sep, rest = msg.partition(": ")
        keys = head.replace("[", ".").replace("]", "").split(".") if sep and " " not in head \
            else []
        path = tuple(int(k) if k.isascii() and k.isdecimal() else k for k in keys)
        if path and doc.line_of(loc + path[:1]) != doc.line_of(loc):
            loc, msg = loc + path, rest
    elif e["type"] in _EXPECTED:
        msg = f"expected {_EXPECTED[e['type']]}, got {e.get('input')!r}"
    elif e["type"] in _BOUNDS:
        word, key = _BOUNDS[e["type"]]
        msg = f"must be {word} {e.get('ctx', {}).get(key)}, got {e.get('input')!r}"
    elif e["type"] in ("too_short", "too_long"):
        ctx = e.get("ctx", {})
        n = ctx.get("min_length") if e["type"] == "too_short" else ctx.get("max_length")
        msg = f"expected {'at least' if e['type'] == 'too_short' else 'at most'} {n} " \
              f"item{'s' if n != 1 else ''}, got {ctx.get('actual_length')}"
    elif e["type"] == "extra_forbidden":
        msg = f"unknown field '{loc[-1]}'"
        loc = loc[:-1] + (loc[-1],)
    elif e["type"] == "missing":
        msg = f"missing required field '{loc[-1]}'"
    n_more = len(err.errors()) - max(1, len(alternatives))
    if n_more:
        msg += f" (and {n_more} more problem{'s' if n_more > 1 else ''})"
    raise doc.error(msg, loc) from None


# pydantic's error type of a value of the wrong type -> what was expected
_EXPECTED = {"int_type": "an integer", "int_from_float": "an integer", "float_type": "a number",
             "string_type": "a string", "bool_type": "true or false", "list_type": "a list",
             "dict_type": "a mapping", "model_type": "a mapping",
             "model_attributes_type": "a mapping", "int_parsing": "an integer",
             "float_parsing": "a number", "bool_parsing": "true or false"}
_BOUNDS = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
           "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}
_TYPE_WORDS = {"int": "an integer", "str": "a name or expression", "float": "a number",
               "bool": "true or false", "list": "a list", "dict": "a mapping"}


def _union_alternatives(errors: list[dict], first: dict) -> list[str]:
    """The union members (pydantic's type tags, like 'int' and 'str') that each refused the
    value `first` reports on; [] when `first` is not one of such a group."""
    tag = first["loc"][-1] if first["loc"] else None
    if not (isinstance(tag, str) and (tag in _TYPE_WORDS or "[" in tag)):
        return []
    group = [x for x in errors
             if x["loc"][:-1] == first["loc"][:-1] and x.get("input") is first.get("input")
             and isinstance(x["loc"][-1], str)
             and (x["loc"][-1] in _TYPE_WORDS or "[" in x["loc"][-1])]
    # each member refuses in its own way; keys that merely share a tag's name ({int: 7, str: 7}
    # under a mapping of records) fail alike
    if len({x["type"] for x in group}) < 2:
        return []
    return [x["loc"][-1] for x in group]


def did_you_mean(name: str, choices) -> str:
    """" (did you mean 'x'?)" naming the choices that start with `name` (h100: h100-pcie,
    h100-sxm), else the closest one; "" when none is close."""
    names = [str(c) for c in choices]
    close = sorted(c for c in names if c.startswith(str(name))) if name else []
    if not 0 < len(close) <= 3:
        close = difflib.get_close_matches(str(name), names, n=1)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
