"""Static magnitude bounds of constraint expressions, to evaluate them in a safe numpy dtype.

numpy integers wrap silently on overflow, and Python integers never overflow. Before a constraint
is evaluated on int32 or int64 arrays, this module walks its syntax tree with a bound on the
absolute value of every parameter (and of every constant it reads) and derives a bound for every
subexpression. The smallest integer dtype that holds all of them is safe; when no bound can be
derived (unknown calls, attributes of parameters, floats converted back to int), the caller
evaluates with Python integers instead. No library offers interval arithmetic over Python's AST
with Python's semantics, hence this small hand-written analysis.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["INT32_MAX", "INT64_MAX", "Analysis", "Operand", "analyse", "operand_of_value"]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
#: Largest integer that float64 represents exactly (true division of larger ints double-rounds).
FLOAT_EXACT = 2**53

Kind = Literal["int", "float", "bool", "other"]


@dataclass(frozen=True)
class Operand:
    """What is known statically about a value: its kind and, for integers, a bound on ``abs``."""

    kind: Kind
    magnitude: int = 0


@dataclass(frozen=True)
class Analysis:
    """Result of :func:`analyse`.

    ``largest`` bounds the absolute value of every integer subexpression; ``bool_arithmetic`` is
    True when a boolean takes part in arithmetic (numpy's ``True + True`` is ``True``, Python's is
    ``2``, so booleans must then be evaluated as integers).
    """

    largest: int
    bool_arithmetic: bool
    result: Operand


class _Unbounded(Exception):
    """No bound can be derived for this expression."""


def operand_of_value(value: Any) -> Operand | None:
    """Operand for a constant Python value, None when it is not a number, bool or string."""
    if isinstance(value, bool) or (
        type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")
    ):
        return Operand("bool", 1)
    if isinstance(value, int):
        return Operand("int", abs(value))
    if isinstance(value, float):
        return Operand("float")
    if type(value).__module__ == "numpy" and hasattr(value, "dtype"):
        if value.dtype.kind in "iu":
            return Operand("int", abs(int(value)))
        if value.dtype.kind == "f":
            return Operand("float")
    if isinstance(value, str):
        return Operand("other")
    return None


_MERGE_ORDER: dict[Kind, int] = {"bool": 0, "int": 1, "float": 2, "other": 3}


def _merge(a: Operand, b: Operand) -> Operand:
    kind = a.kind if _MERGE_ORDER[a.kind] >= _MERGE_ORDER[b.kind] else b.kind
    return Operand(kind, max(a.magnitude, b.magnitude))


class _Analyser:
    def __init__(self, inputs: Mapping[str, Operand], resolve: Callable[[str], Any]) -> None:
        self.inputs = inputs
        self.resolve = resolve
        self.largest = 0
        self.bool_arithmetic = False

    def note(self, operand: Operand) -> Operand:
        if operand.kind in ("int", "bool"):
            self.largest = max(self.largest, operand.magnitude)
        return operand

    def visit(self, node: ast.expr) -> Operand:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise _Unbounded(type(node).__name__)
        return self.note(method(node))

    # -- leaves ----------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> Operand:
        operand = operand_of_value(node.value)
        if operand is None:
            raise _Unbounded("constant")
        return operand

    def visit_Name(self, node: ast.Name) -> Operand:
        if node.id in self.inputs:
            return self.inputs[node.id]
        operand = operand_of_value(self.resolve(node.id))
        if operand is None:
            raise _Unbounded(node.id)
        return operand

    def visit_Attribute(self, node: ast.Attribute) -> Operand:
        value = self._constant_attribute(node)
        operand = operand_of_value(value)
        if operand is None:
            raise _Unbounded("attribute")
        return operand

    def _constant_attribute(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Name):
            if node.id in self.inputs:
                raise _Unbounded("attribute of a parameter")
            return self.resolve(node.id)
        if isinstance(node, ast.Attribute):
            base = self._constant_attribute(node.value)
            try:
                return getattr(base, node.attr)
            except Exception as exc:
                raise _Unbounded("attribute") from exc
        raise _Unbounded("attribute")

    # -- arithmetic ------------------------------------------------------------------
    def _as_number(self, operand: Operand) -> Operand:
        if operand.kind == "bool":
            self.bool_arithmetic = True
            return Operand("int", 1)
        return operand

    def visit_BinOp(self, node: ast.BinOp) -> Operand:
        left = self._as_number(self.visit(node.left))
        right = self._as_number(self.visit(node.right))
        op = node.op
        if "other" in (left.kind, right.kind):
            return Operand("other")
        if isinstance(op, ast.Div):
            if left.kind == "int" and left.magnitude >= FLOAT_EXACT:
                raise _Unbounded("true division of a large integer")
            if right.kind == "int" and right.magnitude >= FLOAT_EXACT:
                raise _Unbounded("true division by a large integer")
            return Operand("float")
        if "float" in (left.kind, right.kind):
            for side in (left, right):
                if side.kind == "int" and side.magnitude >= FLOAT_EXACT:
                    raise _Unbounded("large integer mixed with a float")
            return Operand("float")
        a, b = left.magnitude, right.magnitude
        if isinstance(op, (ast.Add, ast.Sub)):
            return Operand("int", a + b)
        if isinstance(op, ast.Mult):
            return Operand("int", a * b)
        if isinstance(op, ast.FloorDiv):
            return Operand("int", a)
        if isinstance(op, ast.Mod):
            return Operand("int", b)
        if isinstance(op, ast.Pow):
            exponent = self._constant_int(node.right)
            if exponent is None or exponent < 0 or exponent > 256:
                raise _Unbounded("power")
            return Operand("int", max(a, 1) ** exponent)
        if isinstance(op, ast.LShift):
            shift = self._constant_int(node.right)
            if shift is None or shift < 0 or shift > 256:
                raise _Unbounded("shift")
            return Operand("int", a << shift)
        if isinstance(op, ast.RShift):
            return Operand("int", a)
        if isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            return Operand("int", 1 << (max(a, b).bit_length() + 1))
        raise _Unbounded(type(op).__name__)

    def _constant_int(self, node: ast.expr) -> int | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return int(node.value)
        if isinstance(node, ast.Name) and node.id not in self.inputs:
            value = self.resolve(node.id)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Operand:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return Operand("bool", 1)
        operand = self._as_number(operand)
        if isinstance(node.op, ast.Invert) and operand.kind == "int":
            return Operand("int", operand.magnitude + 1)
        return operand

    # -- logic -----------------------------------------------------------------------
    def visit_BoolOp(self, node: ast.BoolOp) -> Operand:
        operands = [self.visit(v) for v in node.values]
        if all(o.kind == "bool" for o in operands):
            return Operand("bool", 1)
        merged = operands[0]
        for o in operands[1:]:
            merged = _merge(merged, o)
        return merged

    def visit_Compare(self, node: ast.Compare) -> Operand:
        self.visit(node.left)
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)):
                self._container(right)
            elif isinstance(op, (ast.Is, ast.IsNot)):
                raise _Unbounded("identity comparison")
            else:
                self.visit(right)
        return Operand("bool", 1)

    def _container(self, node: ast.expr) -> None:
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            for element in node.elts:
                self.visit(element)
            return
        if isinstance(node, ast.Name) and node.id not in self.inputs:
            value = self.resolve(node.id)
            if isinstance(value, (tuple, list, set, frozenset, range)) and len(value) <= 4096:
                for item in value:
                    operand = operand_of_value(item)
                    if operand is None:
                        raise _Unbounded("container element")
                    self.note(operand)
                return
        raise _Unbounded("container")

    def visit_IfExp(self, node: ast.IfExp) -> Operand:
        self.visit(node.test)
        return _merge(self.visit(node.body), self.visit(node.orelse))

    # -- calls -------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> Operand:
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unbounded("call")
        target = self.resolve(node.func.id) if isinstance(node.func, ast.Name) else None
        args = [self.visit(a) for a in node.args]
        if target is builtins.abs and len(args) == 1:
            return self._as_number(args[0])
        if target in (builtins.min, builtins.max) and len(args) >= 2:
            merged = args[0]
            for a in args[1:]:
                merged = _merge(merged, a)
            return merged
        if target is builtins.bool and len(args) == 1:
            return Operand("bool", 1)
        if target is builtins.int and len(args) == 1 and args[0].kind in ("int", "bool"):
            return Operand("int", args[0].magnitude)
        if target is builtins.float and len(args) == 1 and args[0].kind in ("int", "bool", "float"):
            if args[0].magnitude >= FLOAT_EXACT:
                raise _Unbounded("float of a large integer")
            return Operand("float")
        raise _Unbounded("call")


def analyse(expr: ast.expr, inputs: Mapping[str, Operand], resolve: Callable[[str], Any]) -> Analysis | None:
    """Bound every subexpression of ``expr``; None when some part cannot be bounded.

    ``inputs`` describes the parameters the expression reads; ``resolve`` gives the value of any
    other name (constants, builtins).
    """
    analyser = _Analyser(inputs, resolve)
    try:
        result = analyser.visit(expr)
    except (_Unbounded, RecursionError, OverflowError):
        return None
    return Analysis(analyser.largest, analyser.bool_arithmetic, result)
