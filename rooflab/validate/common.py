"""What the validation modules share without importing torch."""

from pathlib import Path


def has_schema(path: str | Path, schema: str) -> bool:
    """Whether the JSON document in `path` (as rooflab writes it) says it is of `schema`, read
    from its first 4 KB; False when the file cannot be read."""
    try:
        with open(path) as f:
            head = f.read(4096)
    except OSError:
        return False
    return f'"schema": "{schema}"' in head


class Unsupported(Exception):
    """This kernel cannot be generated or run here; the suite skips it and logs the reason."""


def scales_name(weight: str) -> str:
    """Where the group scales of int4/int8 weights live in an environment of tensors."""
    return f"{weight}:scales"


# the line under a table of predicted / measured pairs
PAIRS_LEGEND = ("each pair reads predicted / measured; err = predicted / measured - 1 "
                "(negative: the model is faster than what ran)")
