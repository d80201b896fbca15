"""Rewrite a constraint expression into numpy logic, and compile expressions into functions.

``lambda a, b: a < b and b % a == 0`` fails on arrays: ``and`` asks for the truth value of an
array. The rewrite turns ``and``/``or``/``not`` into ``logical_and``/``logical_or``/``logical_not``,
``x if c else y`` into ``where``, chained comparisons into a conjunction of pairs, ``in`` a literal
container into ``isin``, and the builtins ``min``/``max``/``abs``/``bool``/``int`` into their
elementwise numpy forms. The compiled function keeps the original's globals, closure values and
argument defaults, so closures over local variables work (Kernel Tuner issue 348).

The rewrite only changes evaluation strategy, never meaning on scalars; the vectoriser still
cross-checks the result against scalar calls.
"""

from __future__ import annotations

import ast
import builtins
import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.conditions.source import compile_lambda

__all__ = ["HELPERS", "compile_expression", "conjuncts", "names_read", "rewrite"]


def _logical_and(*operands: Any) -> NDArray[np.bool_]:
    return functools.reduce(np.logical_and, operands)


def _logical_or(*operands: Any) -> NDArray[np.bool_]:
    return functools.reduce(np.logical_or, operands)


def _minimum(*operands: Any) -> Any:
    return functools.reduce(np.minimum, operands)


def _maximum(*operands: Any) -> Any:
    return functools.reduce(np.maximum, operands)


def _isin(value: Any, container: Any) -> NDArray[np.bool_]:
    if not isinstance(container, (tuple, list, set, frozenset, range)):
        raise TypeError("isin needs a literal container")
    return np.isin(value, np.asarray(list(container)))


def _to_bool(value: Any) -> NDArray[np.bool_]:
    return np.asarray(value).astype(bool)


def _to_int(value: Any) -> Any:
    array = np.asarray(value)
    if array.dtype.kind == "f":
        return np.trunc(array).astype(np.int64)
    if array.dtype.kind == "b":
        return array.astype(np.int64)
    return array


HELPERS: dict[str, Callable[..., Any]] = {
    "__autotune_and__": _logical_and,
    "__autotune_or__": _logical_or,
    "__autotune_not__": np.logical_not,
    "__autotune_where__": np.where,
    "__autotune_minimum__": _minimum,
    "__autotune_maximum__": _maximum,
    "__autotune_abs__": np.abs,
    "__autotune_isin__": _isin,
    "__autotune_bool__": _to_bool,
    "__autotune_int__": _to_int,
}

_BUILTIN_HELPERS: dict[Any, str] = {
    builtins.min: "__autotune_minimum__",
    builtins.max: "__autotune_maximum__",
    builtins.abs: "__autotune_abs__",
    builtins.bool: "__autotune_bool__",
    builtins.int: "__autotune_int__",
}


def _call(helper: str, args: Sequence[ast.expr], like: ast.AST) -> ast.Call:
    call = ast.Call(func=ast.Name(id=helper, ctx=ast.Load()), args=list(args), keywords=[])
    return ast.copy_location(call, like)


class _ToNumpy(ast.NodeTransformer):
    def __init__(self, resolve: Callable[[str], Any], local: set[str]) -> None:
        self.resolve = resolve
        self.local = local

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        values = [self.visit(v) for v in node.values]
        helper = "__autotune_and__" if isinstance(node.op, ast.And) else "__autotune_or__"
        return _call(helper, values, node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return _call("__autotune_not__", [operand], node)
        return ast.copy_location(ast.UnaryOp(op=node.op, operand=operand), node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        parts = [self.visit(node.test), self.visit(node.body), self.visit(node.orelse)]
        return _call("__autotune_where__", parts, node)

    def visit_Compare(self, node: ast.Compare) -> ast.AST:
        left = self.visit(node.left)
        comparators = [self.visit(c) for c in node.comparators]
        pairs: list[ast.expr] = []
        for op, right in zip(node.ops, comparators, strict=True):
            if isinstance(op, ast.In):
                pairs.append(_call("__autotune_isin__", [left, right], node))
            elif isinstance(op, ast.NotIn):
                isin = _call("__autotune_isin__", [left, right], node)
                pairs.append(_call("__autotune_not__", [isin], node))
            else:
                pairs.append(ast.copy_location(ast.Compare(left=left, ops=[op], comparators=[right]), node))
            left = right
        return pairs[0] if len(pairs) == 1 else _call("__autotune_and__", pairs, node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        args = [self.visit(a) for a in node.args]
        keywords = [self.visit(k) for k in node.keywords]
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.local and not keywords:
            helper = _BUILTIN_HELPERS.get(self.resolve(func.id))
            if helper is not None and not any(isinstance(a, ast.Starred) for a in args):
                if helper in ("__autotune_minimum__", "__autotune_maximum__") and len(args) < 2:
                    helper = None  # min(iterable): leave as written
                if helper is not None:
                    return _call(helper, args, node)
        return ast.copy_location(ast.Call(func=self.visit(func), args=args, keywords=keywords), node)


def rewrite(expr: ast.expr, resolve: Callable[[str], Any], local: set[str]) -> ast.expr:
    """A copy of ``expr`` in elementwise numpy logic (``local`` names are the parameters)."""
    result = _ToNumpy(resolve, local).visit(copy.deepcopy(expr))
    assert isinstance(result, ast.expr)
    return ast.fix_missing_locations(result)


def compile_expression(
    arg_names: Sequence[str], expr: ast.expr, namespace: Mapping[str, Any], label: str
) -> Callable[..., Any]:
    """Compile ``lambda <arg_names>: <expr>`` in ``namespace`` (plus the numpy helpers)."""
    scope = dict(namespace)
    scope.update(HELPERS)
    return compile_lambda(arg_names, expr, scope, f"<{label}>")


def conjuncts(expr: ast.expr) -> list[ast.expr]:
    """The operands of a top-level ``and`` chain (flattened), or ``[expr]``."""
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.And):
        out: list[ast.expr] = []
        for value in expr.values:
            out.extend(conjuncts(value))
        return out
    return [expr]


def names_read(expr: ast.AST, candidates: Sequence[str]) -> tuple[str, ...]:
    """Which of ``candidates`` the expression reads, in the order of ``candidates``."""
    used = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
    return tuple(c for c in candidates if c in used)
