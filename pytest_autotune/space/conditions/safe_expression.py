"""Check a restriction string against a whitelist of syntax before it becomes code.

Restriction strings (``"MWG % (MDIMC*VWM) == 0"``) come from ``@constraint`` and from Kernel Tuner
``spaces.json`` files downloaded from the internet, and they are compiled into Python functions.
A name allowlist is not enough: ``().__class__.__base__.__subclasses__()`` reaches ``os.system``
through attributes alone. So :func:`check_restriction` walks the parsed tree and accepts only:

* numbers (``int``, ``float``), ``True``/``False``/``None``, and short strings as operands of a
  comparison (``mode == 'fast'``);
* parameter names;
* arithmetic (``+ - * / // % ** << >> & | ^``, unary ``- + ~``), comparisons (not ``is``),
  ``and``/``or``/``not``, ``x if c else y``;
* a literal tuple, list or set of constants and parameter names as the right operand of
  ``in``/``not in``;
* calls with positional arguments of :data:`FUNCTIONS` and of ``math.<name>`` for the names in
  :data:`MATH_FUNCTIONS`, and the constants ``math.pi``/``math.e``.

Everything else (any other attribute, subscripts, comprehensions, lambdas, ``:=``, f-strings,
keyword or starred arguments, any other call) is refused with a :class:`ConstraintError` naming
the string and the construct. Nothing is compiled or evaluated before the check passes, and the
compiled function's globals (:func:`restricted_namespace`) hold no builtins beyond the whitelist.

Strings must not hang or exhaust the loader either, so the check also bounds the work: the text
length (:data:`MAX_LENGTH`), the nesting depth (:data:`MAX_DEPTH`; a parser ``RecursionError`` or
``MemoryError`` becomes a :class:`ConstraintError`), and the exponent of ``**``, the shift of ``<<``
and the digits of ``round`` (constants of at most :data:`MAX_EXPONENT`: ``9**9**9**9`` is refused;
a power of a power is refused too). ``pow``, ``divmod``, ``all``/``any`` and ``math.factorial``
(and friends) are left out on purpose: ``pow`` and ``factorial`` evaluate huge results, and the
others need sequences that restriction strings cannot build.
"""

from __future__ import annotations

import ast
import math
import types
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from pytest_autotune.space.errors import ConstraintError

__all__ = [
    "FUNCTIONS",
    "MATH_CONSTANTS",
    "MATH_FUNCTIONS",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_LENGTH",
    "check_restriction",
    "restricted_namespace",
]

#: Functions a restriction string may call by name (pure, and cheap on any numbers).
FUNCTIONS: Final[Mapping[str, Callable[..., Any]]] = types.MappingProxyType(
    {"abs": abs, "min": min, "max": max, "int": int, "float": float, "round": round, "bool": bool, "len": len}
)
#: ``math.<name>`` functions a restriction string may call.
MATH_FUNCTIONS: Final = (
    "ceil", "floor", "trunc", "sqrt", "isqrt", "log", "log2", "log10", "exp", "fabs", "gcd", "lcm",
)  # fmt: skip
#: ``math.<name>`` constants a restriction string may read.
MATH_CONSTANTS: Final = ("pi", "e")
#: Longest restriction string accepted (characters).
MAX_LENGTH: Final = 10_000
#: Deepest nesting of the expression tree accepted.
MAX_DEPTH: Final = 200
#: Largest constant exponent of ``**``, shift of ``<<`` and ``ndigits`` of ``round``.
MAX_EXPONENT: Final = 64
#: Longest string constant and longest literal container accepted.
MAX_LITERAL: Final = 1_000

#: Number of positional arguments each function accepts (low, high; None: no limit).
_ARITY: Final[Mapping[str, tuple[int, int | None]]] = {
    "abs": (1, 1), "min": (1, None), "max": (1, None), "int": (1, 1), "float": (1, 1),
    "round": (1, 2), "bool": (1, 1), "len": (1, 1),
}  # fmt: skip

_MATH: Final = types.SimpleNamespace(
    **{name: getattr(math, name) for name in (*MATH_FUNCTIONS, *MATH_CONSTANTS)}
)

_BINARY: Final = (
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor,
)  # fmt: skip
_UNARY: Final = (ast.UAdd, ast.USub, ast.Not, ast.Invert)
_COMPARE: Final = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn)

_ALLOWED: Final = (
    "numbers, parameter names, arithmetic, comparisons, and/or/not, 'x if c else y', "
    "'in' a literal tuple, and the calls " + ", ".join(f"{n}()" for n in FUNCTIONS) + ", "
    + ", ".join(f"math.{n}()" for n in MATH_FUNCTIONS) + "; math.pi, math.e"
)  # fmt: skip

_MATH_LIST: Final = ", ".join(f"math.{n}" for n in (*MATH_FUNCTIONS, *MATH_CONSTANTS))

#: What a rejected node is called in the error message.
_CONSTRUCTS: Final[Mapping[type[ast.AST], str]] = {
    ast.Subscript: "subscript",
    ast.Slice: "slice",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Lambda: "lambda",
    ast.NamedExpr: "assignment expression ':='",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.Starred: "starred expression '*'",
    ast.Dict: "dict literal",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield from",
}


def restricted_namespace() -> dict[str, Any]:
    """Globals for a compiled restriction string: the whitelisted functions as its only builtins,
    and ``math`` as an object holding only the whitelisted ``math`` names."""
    return {"__builtins__": dict(FUNCTIONS), "math": _MATH}


def check_restriction(text: str, names: Collection[str]) -> ast.Expression:
    """The parsed expression of ``text``, after checking that it uses only whitelisted syntax.

    ``names`` are the parameter names the string may read. Raises :class:`ConstraintError`
    naming the string and the first construct that is not allowed.
    """
    if not isinstance(text, str):
        raise ConstraintError(f"constraint {text!r}: a restriction string must be a str")
    label = f"constraint {_shorten(text)}"
    source = text.strip()
    if len(source) > MAX_LENGTH:
        raise ConstraintError(f"{label}: {len(source)} characters, more than the {MAX_LENGTH} allowed")
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ConstraintError(f"{label}: not a Python expression ({exc.msg})") from exc
    except (RecursionError, MemoryError) as exc:
        raise ConstraintError(f"{label}: nested too deeply to parse ({type(exc).__name__})") from None
    except ValueError as exc:  # null bytes, integer literals beyond the digit limit
        raise ConstraintError(f"{label}: not a Python expression ({exc})") from exc
    try:
        _Checker(source, label, frozenset(names)).check(tree.body, 1)
    except RecursionError:
        raise ConstraintError(f"{label}: nested more than {MAX_DEPTH} levels deep") from None
    return tree


def _shorten(text: object, limit: int = 200) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 5] + "...'"


class _Checker:
    """Recursive whitelist walk; ``depth`` counts nesting so that deep trees are refused early."""

    def __init__(self, source: str, label: str, names: frozenset[str]) -> None:
        self.source = source
        self.label = label
        self.names = names

    def refuse(self, node: ast.AST, what: str, why: str = "") -> ConstraintError:
        reason = why or f"is not allowed in a restriction string (allowed: {_ALLOWED})"
        return ConstraintError(f"{self.label}: {what} {reason}")

    def snippet(self, node: ast.AST) -> str:
        segment = ast.get_source_segment(self.source, node) or type(node).__name__
        return segment if len(segment) <= 60 else segment[:57] + "..."

    def check(self, node: ast.AST, depth: int, *, compared: bool = False) -> None:
        if depth > MAX_DEPTH:
            raise ConstraintError(f"{self.label}: nested more than {MAX_DEPTH} levels deep")
        inner = depth + 1
        if isinstance(node, ast.Constant):
            self.constant(node, compared)
        elif isinstance(node, ast.Name):
            self.name(node)
        elif isinstance(node, ast.BinOp):
            self.binary(node, inner)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, _UNARY):
                raise self.refuse(node, f"operator in {self.snippet(node)!r}")
            self.check(node.operand, inner)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                self.check(value, inner)
        elif isinstance(node, ast.Compare):
            self.compare(node, inner)
        elif isinstance(node, ast.IfExp):
            for part in (node.test, node.body, node.orelse):
                self.check(part, inner)
        elif isinstance(node, ast.Call):
            self.call(node, inner)
        elif isinstance(node, ast.Attribute):
            self.math_attribute(node, called=False)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            raise self.refuse(
                node,
                f"literal {type(node).__name__.lower()} {self.snippet(node)!r}",
                "is only allowed as the right operand of 'in' / 'not in'",
            )
        else:
            construct = _CONSTRUCTS.get(type(node), type(node).__name__)
            raise self.refuse(node, f"{construct} {self.snippet(node)!r}")

    def constant(self, node: ast.Constant, compared: bool) -> None:
        value = node.value
        if value is None or isinstance(value, (bool, int, float)):
            return
        if isinstance(value, str):
            if not compared:
                raise self.refuse(
                    node, f"string {_shorten(value, 60)}", "is only allowed as an operand of a comparison"
                )
            if len(value) > MAX_LITERAL:
                raise self.refuse(node, "string constant", f"is longer than {MAX_LITERAL} characters")
            return
        raise self.refuse(node, f"{type(value).__name__} constant {self.snippet(node)!r}")

    def name(self, node: ast.Name) -> None:
        if node.id in self.names:
            return
        if node.id in FUNCTIONS:
            raise self.refuse(node, f"function {node.id!r}", "may only be called, not used as a value")
        if node.id == "math":
            raise self.refuse(node, "'math'", "may only be used as math.<name> (" + _MATH_LIST + ")")
        known = ", ".join(sorted(self.names))
        raise ConstraintError(f"{self.label}: unknown name {node.id!r} (known: {known})")

    def binary(self, node: ast.BinOp, inner: int) -> None:
        if not isinstance(node.op, _BINARY):
            raise self.refuse(node, f"operator in {self.snippet(node)!r}")
        if isinstance(node.op, (ast.Pow, ast.LShift)):
            symbol = "**" if isinstance(node.op, ast.Pow) else "<<"
            if _small_constant(node.right) is None:
                raise self.refuse(
                    node,
                    f"{symbol!r} in {self.snippet(node)!r}",
                    f"needs a constant right operand of at most {MAX_EXPONENT} (bounded work)",
                )
            if isinstance(node.op, ast.Pow) and any(
                isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Pow) for sub in ast.walk(node.left)
            ):
                raise self.refuse(
                    node, f"power of a power {self.snippet(node)!r}", "is not allowed (bounded work)"
                )
        self.check(node.left, inner)
        self.check(node.right, inner)

    def compare(self, node: ast.Compare, inner: int) -> None:
        self.check(node.left, inner, compared=True)
        for op, right in zip(node.ops, node.comparators, strict=True):
            if not isinstance(op, _COMPARE):
                raise self.refuse(node, f"comparison {type(op).__name__!r} in {self.snippet(node)!r}",
                                  "is not allowed (use == or !=)")  # fmt: skip
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                if len(right.elts) > MAX_LITERAL:
                    raise self.refuse(right, "literal container", f"has more than {MAX_LITERAL} items")
                for item in right.elts:
                    if not isinstance(item, (ast.Constant, ast.Name, ast.UnaryOp)):
                        raise self.refuse(
                            item, f"item {self.snippet(item)!r}", "of a literal container must be a constant"
                        )
                    self.check(item, inner + 1, compared=True)
            else:
                self.check(right, inner, compared=True)

    def call(self, node: ast.Call, inner: int) -> None:
        func = node.func
        if node.keywords:
            raise self.refuse(node, f"keyword argument in {self.snippet(node)!r}")
        if isinstance(func, ast.Name) and func.id in FUNCTIONS and func.id not in self.names:
            low, high = _ARITY[func.id]
            count = len(node.args)
            if count < low or (high is not None and count > high):
                raise self.refuse(node, f"call {self.snippet(node)!r}", f"has {count} arguments")
            if func.id == "round" and count == 2 and _small_constant(node.args[1]) is None:
                raise self.refuse(
                    node, f"call {self.snippet(node)!r}", f"needs constant digits of at most {MAX_EXPONENT}"
                )
        elif isinstance(func, ast.Attribute):
            self.math_attribute(func, called=True)
        else:
            if not isinstance(func, ast.Name):
                self.check(func, inner)  # names the construct inside, e.g. an attribute or subscript
            raise self.refuse(node, f"call of {self.snippet(func)!r}")
        for arg in node.args:
            self.check(arg, inner)

    def math_attribute(self, node: ast.Attribute, *, called: bool) -> None:
        allowed = MATH_FUNCTIONS if called else MATH_CONSTANTS
        base = node.value
        if (
            isinstance(base, ast.Name)
            and base.id == "math"
            and "math" not in self.names
            and node.attr in allowed
        ):
            return
        raise self.refuse(node, f"attribute access '.{node.attr}' in {self.snippet(node)!r}")


def _small_constant(node: ast.expr) -> int | float | None:
    """The value of a (signed) numeric constant of magnitude at most :data:`MAX_EXPONENT`, else None."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    if not isinstance(node, ast.Constant):
        return None
    value = node.value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not abs(value) <= MAX_EXPONENT:
        return None
    return sign * value
