"""Constraints over parameters: callables (ATF style) and restriction strings.

A constraint reads parameters by argument name: ``lambda WPT, LS: LS <= WPT``
reads ``WPT`` and ``LS``. Arguments with a default whose name is not a
parameter keep their default (the usual way to bind a value in a lambda).
Kernel Tuner restriction strings (``"MWG % (MDIMC*VWM) == 0"``) are checked
against a syntax whitelist (:mod:`pytest_autotune.space.conditions.safe_expression`) and
compiled to the same form, so both kinds share one evaluation path.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_autotune.space.conditions.config_dict import bind_config_callable, dict_argument
from pytest_autotune.space.conditions.safe_expression import check_restriction, restricted_namespace
from pytest_autotune.space.conditions.source import compile_lambda, constant_names, function_namespace, locate
from pytest_autotune.space.errors import ConstraintError

__all__ = ["Constraint", "callable_source", "is_boolean"]


def callable_source(fn: Callable[..., Any]) -> str:
    """Stable text of a callable: its exact source plus the values of the simple names it reads.

    For ``lambda WPT: N % WPT == 0`` with ``N = 1024`` this is
    ``"lambda WPT: N % WPT == 0 [N=1024]"``, so a changed ``N`` changes the space hash.
    Falls back to whole source lines, then to the qualified name, when the text is unknown.
    """
    located = locate(fn)
    if located is not None:
        text = located.text
        code = getattr(fn, "__code__", None)
        args = set(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]) if code else set()
        node: ast.AST = located.node
        bound = constant_names(node, function_namespace(fn), args)
    else:
        try:
            text = inspect.getsource(fn).strip()
        except (OSError, TypeError):
            module = getattr(fn, "__module__", "?")
            text = f"{module}.{getattr(fn, '__qualname__', repr(fn))}"
        bound = {}
    if bound:
        text += " [" + ", ".join(f"{name}={value}" for name, value in bound.items()) + "]"
    return text


def is_boolean(value: Any) -> bool:
    """True for ``True``/``False`` and numpy booleans (without importing numpy)."""
    if isinstance(value, bool):
        return True
    kind = type(value)
    return kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")


@dataclass(frozen=True)
class Constraint:
    """A boolean condition over named parameters.

    ``fn`` is called with keyword arguments named in ``reads``. ``owner`` is
    the parameter whose ``where=`` this is (None for a configuration-level
    constraint). ``expression`` holds the parsed expression when the
    constraint came from a restriction string, or the rewritten body of a
    callable that took the configuration as a dict (then ``fn`` is its
    compiled form, whose globals are the namespace the expression reads).
    """

    fn: Callable[..., Any]
    reads: tuple[str, ...]
    source: str
    owner: str | None = None
    expression: ast.Expression | None = field(default=None, compare=False, repr=False)

    @property
    def label(self) -> str:
        """Human name used in error messages."""
        if self.owner is not None:
            return f"where= of parameter {self.owner!r}"
        return f"constraint {self.source!r}"

    @classmethod
    def from_callable(
        cls, fn: Callable[..., Any], *, names: Collection[str], owner: str | None = None
    ) -> Constraint:
        """Wrap ``fn``; its argument names must be parameter names in ``names``.

        A callable taking the whole configuration as one dict (``lambda p: p["x"] > 1``, Kernel
        Tuner style; see :mod:`pytest_autotune.space.conditions.config_dict`) is accepted too: it reads the
        parameters it indexes, and its source text (hashed into ``space_hash``) stays as written.
        """
        where = f"where= of parameter {owner!r}" if owner else f"constraint {getattr(fn, '__name__', fn)!r}"
        if dict_argument(fn, names) is not None:
            bound = bind_config_callable(fn, names, where=where, parameter=owner)
            return cls(bound.by_name, bound.reads, callable_source(fn), owner, bound.expression)
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise ConstraintError(f"{where}: cannot read its arguments ({exc})", parameter=owner) from exc
        reads: list[str] = []
        for arg in signature.parameters.values():
            if arg.kind is inspect.Parameter.VAR_KEYWORD:
                reads.extend(n for n in names if n not in reads)
                continue
            if arg.kind is inspect.Parameter.VAR_POSITIONAL:
                raise ConstraintError(
                    f"{where}: *{arg.name} is not supported; name the parameters it reads",
                    parameter=owner,
                )
            if arg.kind is inspect.Parameter.POSITIONAL_ONLY:
                raise ConstraintError(
                    f"{where}: positional-only argument {arg.name!r} cannot be passed by name",
                    parameter=owner,
                )
            if arg.name in names:
                if arg.name not in reads:
                    reads.append(arg.name)
            elif arg.default is inspect.Parameter.empty:
                raise ConstraintError(
                    f"{where}: reads unknown parameter {arg.name!r} (known: {', '.join(names)})",
                    parameter=owner,
                )
        return cls(fn=fn, reads=tuple(reads), source=callable_source(fn), owner=owner)

    @classmethod
    def from_string(cls, text: str, *, names: Collection[str]) -> Constraint:
        """Compile a Kernel Tuner restriction string such as ``"MWG % VWM == 0"``.

        The string is checked against a syntax whitelist first
        (:func:`~pytest_autotune.space.conditions.safe_expression.check_restriction`): strings may come from
        downloaded data files, so nothing but plain arithmetic and comparisons may become code.
        """
        tree = check_restriction(text, names)
        used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        reads = tuple(n for n in names if n in used)
        fn = compile_lambda(reads, tree.body, restricted_namespace(), f"<constraint {text.strip()[:200]!r}>")
        return cls(fn=fn, reads=reads, source=text.strip(), owner=None, expression=tree)

    def __call__(self, config: Mapping[str, Any]) -> bool:
        """Evaluate on one configuration (scalar values); must return a boolean."""
        result = self.fn(**{name: config[name] for name in self.reads})
        if not is_boolean(result):
            raise ConstraintError(
                f"{self.label} returned {result!r} ({type(result).__name__}), not a boolean",
                parameter=self.owner,
            )
        return bool(result)
