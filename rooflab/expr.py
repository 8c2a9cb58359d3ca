"""Integer shape expressions over workload parameters: `4*D`, `D // heads`, `(S + 127) // 128`."""

from __future__ import annotations

import ast
import functools
import operator

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
           ast.Div: None}


class ExprError(ValueError):
    pass


def evaluate(expr: int | str, params: dict[str, int]) -> int:
    """Value of an integer expression; `/` must divide exactly. ExprError says what is wrong."""
    if isinstance(expr, bool):
        raise ExprError(f"expected an integer or expression, got {expr}")
    if isinstance(expr, int):
        return expr
    if isinstance(expr, float):
        if expr.is_integer():
            return int(expr)
        raise ExprError(f"expected an integer, got {expr}")
    if not isinstance(expr, str):
        raise ExprError(f"expected an integer or expression, got {expr!r}")
    return _eval(_parse(expr), params, expr)


@functools.lru_cache(maxsize=4096)
def _parse(expr: str) -> ast.expr:
    try:
        return ast.parse(expr, mode="eval").body
    except SyntaxError:
        raise ExprError(f"cannot parse expression '{expr}'") from None


def _eval(node, params, src):
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(
            node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in params:
            from rooflab.yamlio import did_you_mean
            raise ExprError(f"unknown parameter '{node.id}' in '{src}'"
                            + did_you_mean(node.id, params))
        return params[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, params, src)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval(node.left, params, src), _eval(node.right, params, src)
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and b == 0:
            raise ExprError(f"division by zero in '{src}'")
        if isinstance(node.op, ast.Div):
            if a % b:
                raise ExprError(f"'{src}' is not an integer ({a} / {b}); use // to round down")
            return a // b
        return _BINOPS[type(node.op)](a, b)
    raise ExprError(f"unsupported expression '{src}' (integers, parameters, + - * / // % ** only)")
