"""Text safe to print on a terminal: control characters in user-given names shown as escapes."""

from __future__ import annotations


def printable(text: str) -> str:
    """`text` with every control or format character (ESC, NUL, newline, tab, bidi overrides)
    written as a Python escape such as `\\x1b`, so a name cannot move the cursor, recolour the
    terminal or break a one-line message. Text without such characters comes back unchanged."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)
