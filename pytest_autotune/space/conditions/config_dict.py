"""Callables that take the whole configuration as one dict (Kernel Tuner style), read by name.

Kernel Tuner passes a restriction, a grid divisor or a problem size callable the configuration as a
dict: ``lambda p: p["block_size_x"] * p["block_size_y"] <= 1024``. pytest-autotune's own style
passes parameters by argument name: ``lambda block_size_x, block_size_y: ...``. Both are accepted;
:func:`dict_argument` tells them apart by the signature alone:

* a callable whose arguments are parameter names (``lambda x: x > 1`` for a parameter ``x``)
  reads those parameters by name, as always;
* a callable with exactly one argument without a default, whose name is not a parameter name
  and no other argument of which is one (``lambda p: p["x"] > 1``, ``def r(config, N=N): ...``),
  takes the configuration as a dict.

So the two never collide: a dict argument is recognised only when its name is not a parameter's.
To know which parameters a dict callable reads (the chain of trees checks each condition as soon
as those are known) its source is read (:func:`pytest_autotune.space.conditions.source.locate`): when the
argument is used only as ``p["name"]`` with literal names, the callable reads exactly those and its
expression is rewritten to read them by name (``p["x"] > 1`` becomes ``x > 1``), so that it is
evaluated over arrays like any other; otherwise (``p.get(...)``, ``p[key]``, no source) it reads
every parameter and is called with the dict. A dict argument that the source never indexes is
most likely a misspelt parameter name (``lambda WGP: WGP > 2``) and is refused as such.
"""

from __future__ import annotations

import ast
import copy
import inspect
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_autotune.space.conditions.source import compile_lambda, function_namespace, locate
from pytest_autotune.space.errors import ConstraintError

__all__ = ["ConfigCallable", "bind_config_callable", "call_with_config", "dict_argument"]


@dataclass(frozen=True)
class ConfigCallable:
    """A callable of a configuration bound to the parameters it reads.

    ``by_name`` takes exactly ``reads`` as keyword arguments. ``dict_arg`` is the name of the
    dict argument of a Kernel Tuner style callable (None when it reads parameters by name), and
    ``expression`` its body rewritten to read the parameters by name, when that was possible.
    """

    fn: Callable[..., Any]
    reads: tuple[str, ...]
    by_name: Callable[..., Any]
    dict_arg: str | None = None
    expression: ast.Expression | None = None

    def __call__(self, config: Mapping[str, Any]) -> Any:
        """Call it on a configuration (a mapping holding at least :attr:`reads`)."""
        return self.by_name(**{name: config[name] for name in self.reads})


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


def dict_argument(fn: Callable[..., Any], names: Collection[str]) -> str | None:
    """The argument of ``fn`` that takes the configuration as a dict, or None (module docstring)."""
    signature = _signature(fn)
    if signature is None:
        return None
    arguments = list(signature.parameters.values())
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    required = [a for a in arguments if a.default is inspect.Parameter.empty and a.kind not in variadic]
    if len(required) != 1 or required[0].kind is inspect.Parameter.KEYWORD_ONLY:
        return None
    if any(a.kind is inspect.Parameter.VAR_KEYWORD or a.name in names for a in arguments):
        return None
    return required[0].name


def call_with_config(fn: Callable[..., Any], config: Mapping[str, Any]) -> Any:
    """Call ``fn`` on ``config``: with the dict (Kernel Tuner style) or its parameters by name."""
    arg = dict_argument(fn, config)
    if arg is not None:
        return fn(dict(config))
    signature = _signature(fn)
    if signature is None:
        return fn(dict(config))
    if any(a.kind is inspect.Parameter.VAR_KEYWORD for a in signature.parameters.values()):
        return fn(**config)
    return fn(**{a: config[a] for a in signature.parameters if a in config})


def _key(node: ast.AST, arg: str) -> str | None:
    """``"x"`` for the node ``arg["x"]``, else None."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == arg
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


def _uses(node: ast.AST, arg: str) -> tuple[list[str], bool, bool]:
    """How ``node`` uses ``arg``: the literal keys it reads as ``arg["key"]`` (in order), whether it
    uses ``arg`` otherwise as a dict (``arg.get(...)``, ``arg[key]``, passed to a call), and whether
    it uses ``arg`` as a plain value (``arg > 2``: a misspelt parameter name)."""
    keys: list[str] = []
    as_dict = as_value = False
    parents = {id(child): parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Name) and sub.id == arg):
            continue
        parent = parents.get(id(sub))
        key = _key(parent, arg) if parent is not None else None
        if key is not None:
            if key not in keys:
                keys.append(key)
        elif isinstance(parent, (ast.Attribute, ast.Subscript, ast.Call, ast.keyword, ast.Starred)):
            as_dict = True
        else:
            as_value = True
    return keys, as_dict, as_value


class _ByName(ast.NodeTransformer):
    """Replace ``arg["x"]`` with the name ``x``."""

    def __init__(self, arg: str) -> None:
        self.arg = arg

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        key = _key(node, self.arg)
        if key is not None:
            return ast.copy_location(ast.Name(id=key, ctx=ast.Load()), node)
        return self.generic_visit(node)


def _dict_caller(fn: Callable[..., Any]) -> Callable[..., Any]:
    def by_name(**values: Any) -> Any:
        return fn(values)

    return by_name


def bind_config_callable(
    fn: Callable[..., Any], names: Collection[str], *, where: str, parameter: str | None = None
) -> ConfigCallable:
    """Bind ``fn`` to the parameters ``names`` it reads; ``ConstraintError`` naming ``where`` otherwise.

    ``parameter`` is the parameter an error is about (a ``where=`` owner), if any.
    """
    known = ", ".join(names)
    arg = dict_argument(fn, names)
    if arg is None:
        signature = _signature(fn)
        if signature is None:
            raise ConstraintError(f"{where}: cannot read its arguments", parameter=parameter)
        reads: list[str] = []
        for argument in signature.parameters.values():
            if argument.kind is inspect.Parameter.VAR_KEYWORD:
                reads.extend(n for n in names if n not in reads)
            elif argument.name in names:
                if argument.name not in reads:
                    reads.append(argument.name)
            elif argument.default is inspect.Parameter.empty and argument.kind not in (
                inspect.Parameter.VAR_POSITIONAL,
            ):
                raise ConstraintError(
                    f"{where}: reads unknown parameter {argument.name!r} (known: {known})",
                    parameter=parameter,
                )
        return ConfigCallable(fn, tuple(reads), fn)
    located = locate(fn)
    if located is None:  # no source: it may read anything
        return ConfigCallable(fn, tuple(names), _dict_caller(fn), arg)
    node: ast.AST = located.expression if located.expression is not None else located.node
    keys, other, as_value = _uses(node, arg)
    other = other or (as_value and bool(keys))
    if not keys and not other:
        raise ConstraintError(
            f"{where}: reads unknown parameter {arg!r} (known: {known}); a callable that takes the "
            f"whole configuration reads it as {arg}['name']",
            parameter=parameter,
        )
    unknown = [key for key in keys if key not in names]
    if unknown:
        raise ConstraintError(
            f"{where}: reads unknown parameter {unknown[0]!r} (as {arg}[{unknown[0]!r}]; known: {known})",
            parameter=parameter,
        )
    if other:  # p.get(...), p[key], p passed on: give it every parameter
        return ConfigCallable(fn, tuple(names), _dict_caller(fn), arg)
    reads_in_order = tuple(n for n in names if n in keys)
    expression = located.expression
    bound = (
        {n.id for n in ast.walk(expression) if isinstance(n, ast.Name)} if expression is not None else set()
    )
    if expression is None or bound & set(keys):  # a statement body, or a free name equal to a key
        return ConfigCallable(fn, reads_in_order, _dict_caller(fn), arg)
    rewritten = _ByName(arg).visit(copy.deepcopy(expression))
    namespace = function_namespace(fn)
    namespace.pop(arg, None)
    by_name = compile_lambda(reads_in_order, rewritten, namespace, f"<{where}>")
    return ConfigCallable(fn, reads_in_order, by_name, arg, ast.Expression(body=rewritten))
