"""Integer shape expressions over workload parameters: `4*D`, `D // heads`, `(S + 127) // 128`."""

from __future__ import annotations

import ast
import functools
import operator

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.Div: None}


# Bounds that keep a hostile expression from taking time or memory: every value, given or
# intermediate, lies in [-MAX_VALUE, MAX_VALUE] (so `2**2**2**2**2` is refused before Python
# builds a 20,000-digit integer), an expression has at most MAX_LENGTH characters and nests
# at most MAX_DEPTH operators deep.
MAX_VALUE = 2 ** 63
MAX_LENGTH = 1000
MAX_DEPTH = 50


class ExprError(ValueError):
    pass


def check_magnitude(v: int, src: object) -> int:
    """`v` itself; ExprError when it lies outside [-MAX_VALUE, MAX_VALUE]."""
    if not -MAX_VALUE <= v <= MAX_VALUE:
        raise ExprError(f"value of '{_short(src)}' exceeds 2**63 in magnitude")
    return v


def _short(src: object) -> str:
    text = str(src)
    return text if len(text) <= 60 else text[:40] + f"… ({len(text)} characters)"


def evaluate(expr: int | str, params: dict[str, int]) -> int:
    """Value of an integer expression; `/` must divide exactly. ExprError says what is wrong."""
    if isinstance(expr, bool):
        raise ExprError(f"expected an integer or expression, got {expr}")
    if isinstance(expr, int):
        return check_magnitude(expr, expr)
    if isinstance(expr, float):
        if expr.is_integer() and abs(expr) <= 2 ** 53:      # exact as a float
            return int(expr)
        raise ExprError(f"expected an integer, got {expr}")
    if not isinstance(expr, str):
        raise ExprError(f"expected an integer or expression, got {_short(repr(expr))}")
    if len(expr) > MAX_LENGTH:
        raise ExprError(f"expression '{_short(expr)}' is longer than {MAX_LENGTH} characters")
    return _eval(_parse(expr), params, expr, 0)


@functools.lru_cache(maxsize=4096)
def _parse(expr: str) -> ast.expr:
    try:
        return ast.parse(expr, mode="eval").body
    except SyntaxError:
        raise ExprError(f"cannot parse expression '{_short(expr)}'") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"expression '{_short(expr)}' nests too deeply") from None


def _eval(node, params, src, depth):
    if depth > MAX_DEPTH:
        raise ExprError(f"expression '{_short(src)}' nests more than {MAX_DEPTH} operators deep")
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(
            node.value, bool):
        return check_magnitude(node.value, src)
    if isinstance(node, ast.Name):
        if node.id not in params:
            from rooflab.yamlio import did_you_mean
            raise ExprError(f"unknown parameter '{node.id}' in '{_short(src)}'"
                            + did_you_mean(node.id, params))
        return params[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, params, src, depth + 1)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a = _eval(node.left, params, src, depth + 1)
        b = _eval(node.right, params, src, depth + 1)
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            raise ExprError(f"division by zero in '{_short(src)}'")
        if isinstance(node.op, ast.Div):
            if a % b:
                raise ExprError(f"'{_short(src)}' is not an integer ({a} / {b}); "
                                "use // to round down")
            return a // b
        if isinstance(node.op, ast.Pow):
            if b < 0:
                raise ExprError(f"negative exponent in '{_short(src)}' (not an integer)")
            # |a| >= 2 and b > 63 already exceeds 2**63: refuse before computing it
            if abs(a) >= 2 and b > 63:
                raise ExprError(f"value of '{_short(src)}' exceeds 2**63 in magnitude")
        return check_magnitude(_BINOPS[type(node.op)](a, b), src)
    raise ExprError(f"unsupported expression '{_short(src)}' "
                    "(integers, parameters, + - * / // % ** only)")
