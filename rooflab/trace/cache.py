"""Traces of Hugging Face models kept on disk, so that the next command on the same model and
step loads the graph instead of importing transformers and tracing again (DeepSeek-V3: about
12 s to trace, well under 1 s to load).

A trace is keyed by everything that could change it: the config file's bytes, the phase and
sizes, the torch and transformers versions installed, and the source of rooflab itself (a
changed rule or op kind is a new key). Entries live in $ROOFLAB_CACHE_DIR, else
~/.cache/rooflab/traces; ROOFLAB_NO_CACHE=1 turns the cache off. A cache that cannot be read or
written is skipped, never an error.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from importlib import metadata
from pathlib import Path

from rooflab.graph import Graph

_PACKAGE = Path(__file__).resolve().parent.parent


def cache_dir() -> Path | None:
    """Where traces are kept; None when the cache is turned off."""
    if os.environ.get("ROOFLAB_NO_CACHE"):
        return None
    base = os.environ.get("ROOFLAB_CACHE_DIR")
    return Path(base) if base else Path.home() / ".cache" / "rooflab" / "traces"


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    h = hashlib.sha256()
    for f in sorted(_PACKAGE.rglob("*.py")):
        h.update(str(f.relative_to(_PACKAGE)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "-"


def key(config_file: Path, phase: str, sizes: dict[str, int]) -> str:
    """The cache key of one traced step."""
    h = hashlib.sha256()
    for part in (config_file.read_bytes(), phase.encode(), repr(sorted(sizes.items())).encode(),
                 _version("torch").encode(), _version("transformers").encode(),
                 _code_digest().encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:32]


def load(k: str) -> Graph | None:
    """The cached graph of key `k`, or None."""
    d = cache_dir()
    if d is None:
        return None
    try:
        with open(d / f"{k}.pickle", "rb") as f:
            graph = pickle.load(f)
    except Exception:  # noqa: BLE001 - any entry that does not load is a miss, never an error
        return None
    return graph if isinstance(graph, Graph) else None


def store(k: str, graph: Graph) -> None:
    """Keep `graph` under key `k` (written whole or not at all)."""
    d = cache_dir()
    if d is None:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=d, delete=False, suffix=".tmp") as f:
            pickle.dump(graph, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(f.name, d / f"{k}.pickle")
    except OSError:
        pass
