"""What the validation modules share without importing torch."""

import json
from pathlib import Path


def has_schema(path: str | Path, schema: str) -> bool:
    """Whether the JSON document in `path` (as rooflab writes it) says it is of `schema`, read
    from its first 4 KB; False when the file cannot be read."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return False
    return f'"schema": "{schema}"' in head


def run_gpu(path: str | Path) -> str | None:
    """The GPU a measured run names (its provenance's `gpu`, a measured-steps run's
    meta.timing.gpu.name, a serving run's meta.gpu.name), as torch names it; None for a file
    that is not such a run."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    for keys in (("provenance", "gpu"), ("meta", "timing", "gpu", "name"),
                 ("meta", "gpu", "name")):
        v = doc
        for k in keys:
            v = v.get(k) if isinstance(v, dict) else None
        if isinstance(v, str) and v:
            return v
    return None


class Unsupported(Exception):
    """This kernel cannot be generated or run here; the suite skips it and logs the reason."""


def scales_name(weight: str) -> str:
    """Where the group scales of int4/int8 weights live in an environment of tensors."""
    return f"{weight}:scales"


# the line under a table of predicted / measured pairs
PAIRS_LEGEND = ("each pair reads predicted / measured; err = predicted / measured - 1 "
                "(negative: the model is faster than what ran)")
