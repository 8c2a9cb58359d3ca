"""What the validation modules share without importing torch."""


class Unsupported(Exception):
    """This kernel cannot be generated or run here; the suite skips it and logs the reason."""


def scales_name(weight: str) -> str:
    """Where the group scales of int4/int8 weights live in an environment of tensors."""
    return f"{weight}:scales"
