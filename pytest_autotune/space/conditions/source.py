"""Exact source text, syntax tree and free-name values of constraint callables.

``inspect.getsource`` returns whole lines, so for ``x=Interval(1, 8, where=lambda x: ...)`` it cannot
say which text is the constraint, and several lambdas may share a line. This module parses the
statement that defines a lambda (or, for a ``def`` or a statement that does not parse alone, the
defining module), caches it, and picks the ``ast.Lambda`` (or ``def``) whose line, argument
names and, when that is still ambiguous, instruction positions match the function's code object.
The standard library has no function for this, hence the hand-written locator.

The result serves two purposes: the vectoriser rewrites the expression into numpy logic, and
:attr:`Constraint.source` (hashed into ``space_hash``) becomes the exact text plus the values of the
simple names it reads, so that changing a global ``N`` changes the hash.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import tokenize
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CallableSource",
    "compile_lambda",
    "constant_names",
    "function_namespace",
    "is_missing",
    "locate",
    "resolve_name",
]

_MISSING = object()


@dataclass(frozen=True)
class CallableSource:
    """Where a callable was written.

    ``text`` is the exact text of the lambda or ``def``; ``expression`` the single expression it
    returns (a lambda's body, or a ``def`` whose body is one ``return``), or None.
    """

    text: str
    expression: ast.expr | None
    node: ast.AST


@dataclass
class _ParsedModule:
    """A parsed part of a file (line numbers and offsets as in the file) and its callables by line."""

    lines: list[str]
    by_line: dict[int, list[ast.AST]]


#: Parsed lines, statements or files, keyed by (file name, first line, last line); (0, 0): the file.
_PARSED: dict[tuple[str, int, int], _ParsedModule] = {}
#: Statement span found for a (file name, line): the file's lines it was found in, and the span.
_SPANS: dict[tuple[str, int], tuple[list[str], tuple[int, int] | None]] = {}


def _logical_line(lines: list[str], line: int) -> tuple[int, int] | None:
    """First and last physical line of the logical line (statement) holding ``line``, or None.

    ``tokenize`` streams tokens, so nothing but the current token is held in memory.
    """
    rows = iter(lines)
    start = 0
    try:
        for token in tokenize.generate_tokens(lambda: next(rows, "")):
            if token.type in _LAYOUT_TOKENS:
                continue
            if start == 0:
                start = token.start[0]
            if token.type == tokenize.NEWLINE:
                if start <= line <= token.end[0]:
                    return start, token.end[0]
                if start > line:
                    return None
                start = 0
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


_LAYOUT_TOKENS = frozenset(
    {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING}
)


def _index(lines: list[str], tree: ast.AST) -> _ParsedModule:
    by_line: dict[int, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            by_line.setdefault(node.lineno, []).append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            by_line.setdefault(node.lineno, []).append(node)
            for decorator in node.decorator_list:
                by_line.setdefault(decorator.lineno, []).append(node)
    return _ParsedModule(lines, by_line)


def _parse_lines(filename: str, lines: list[str], first: int, last: int) -> _ParsedModule | None:
    """Lines ``first .. last`` of the file parsed alone, with the file's line numbers and offsets
    (None when they do not parse alone)."""
    cached = _PARSED.get((filename, first, last))
    if cached is not None and cached.lines is lines:
        return cached
    chunk = lines[first - 1 : last]
    if first > 1 and chunk[0][:1] in (" ", "\t"):  # indented: a block header keeps the offsets
        source = "\n" * (first - 2) + "if 1:\n" + "".join(chunk)
    else:
        source = "\n" * (first - 1) + "".join(chunk)
    try:
        tree = ast.parse(source, filename)
    except (SyntaxError, ValueError):
        return None
    parsed = _index(lines, tree)
    _PARSED[(filename, first, last)] = parsed
    return parsed


def _parse_statement(filename: str, lines: list[str], line: int) -> _ParsedModule | None:
    """Only the statement holding ``line`` parsed (None when it does not parse alone: a compound
    statement's header, a decorator)."""
    known = _SPANS.get((filename, line))
    if known is not None and known[0] is lines:
        span = known[1]
    else:
        span = _logical_line(lines, line)
        _SPANS[(filename, line)] = (lines, span)
    return None if span is None else _parse_lines(filename, lines, *span)


def _parse_file(filename: str, lines: list[str]) -> _ParsedModule | None:
    cached = _PARSED.get((filename, 0, 0))
    if cached is not None and cached.lines is lines:
        return cached
    try:
        tree = ast.parse("".join(lines), filename)
    except (SyntaxError, ValueError):
        return None
    parsed = _index(lines, tree)
    _PARSED[(filename, 0, 0)] = parsed
    return parsed


def _parsings(filename: str, line: int, is_lambda: bool) -> Iterator[tuple[_ParsedModule, bool]]:
    """Parsed source around ``line``, smallest first, each with whether a single candidate must
    still be checked against the code's positions.

    A lambda never spans statements, so for a lambda this first tries its line alone (a fragment
    such as ``f(lambda x: x > 1),`` parses; a lambda continuing on the next line is then caught by
    the position check), then its statement (``tokenize`` finds it), and only then the whole file
    (a ``def`` needs its whole block). Parsing a line instead of a whole test module keeps the
    syntax tree, and the build's time and memory, small.
    """
    lines = linecache.getlines(filename)
    if not lines:
        return
    if is_lambda:
        single = _parse_lines(filename, lines, line, line)
        if single is not None:
            yield single, True
        statement = _parse_statement(filename, lines, line)
        if statement is not None:
            yield statement, False
    whole = _parse_file(filename, lines)
    if whole is not None:
        yield whole, False


def _arg_names(args: ast.arguments) -> tuple[str, ...]:
    return tuple(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])


def _code_arg_names(code: Any) -> tuple[str, ...]:
    count = code.co_argcount + code.co_kwonlyargcount
    return tuple(code.co_varnames[:count])


def _positions(code: Any) -> Iterator[tuple[int, int]]:
    """Start and end (line, column) of the source span of every instruction of ``code``."""
    for line, end_line, col, end_col in code.co_positions():
        if line is not None and col is not None and (col, end_col) != (0, 0):
            yield line, col
            if end_line is not None and end_col is not None:
                yield end_line, end_col


def _contains(node: ast.AST, line: int, col: int) -> bool:
    start = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
    end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
    return start <= (line, col) <= end


def _pick(candidates: Sequence[ast.AST], code: Any, *, check_positions: bool) -> ast.AST | None:
    if not candidates:
        return None
    if len(candidates) == 1 and not check_positions:
        return candidates[0]
    # Several lambdas with the same arguments on one line (or a lambda parsed from a fragment):
    # the one whose span holds the instructions of the code object (innermost first: a lambda
    # inside a lambda).
    positions = list(_positions(code))
    holding = [n for n in candidates if positions and all(_contains(n, *p) for p in positions)]
    if not holding:
        return None
    holding.sort(key=lambda n: (n.end_lineno - n.lineno, n.end_col_offset - n.col_offset))  # type: ignore[attr-defined]
    return holding[0]


def _segment(lines: list[str], node: ast.AST) -> str:
    """Exact source text of ``node`` (``ast.get_source_segment`` re-splits the module each call)."""
    first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
    start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    chunk = [line.encode() for line in lines[first : last + 1]]  # offsets count UTF-8 bytes
    if len(chunk) == 1:
        return chunk[0][start:end].decode()
    chunk[0], chunk[-1] = chunk[0][start:], chunk[-1][:end]
    return b"".join(chunk).decode()


def locate(fn: Callable[..., Any]) -> CallableSource | None:
    """Find the exact text (and returned expression) of ``fn``, or None when it is unknown."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    is_lambda = code.co_name == "<lambda>"
    args = _code_arg_names(code)
    for parsed, check_positions in _parsings(code.co_filename, code.co_firstlineno, is_lambda):
        candidates: list[ast.AST] = []
        for node in parsed.by_line.get(code.co_firstlineno, []):
            if (is_lambda and isinstance(node, ast.Lambda) and _arg_names(node.args) == args) or (
                not is_lambda
                and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == code.co_name
                and _arg_names(node.args) == args
            ):
                candidates.append(node)
        picked = _pick(candidates, code, check_positions=check_positions)
        if picked is not None:
            break
    else:
        return None
    text = _segment(parsed.lines, picked)
    if isinstance(picked, ast.Lambda):
        return CallableSource(text, picked.body, picked)
    assert isinstance(picked, (ast.FunctionDef, ast.AsyncFunctionDef))
    body = list(picked.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # docstring
    if isinstance(picked, ast.FunctionDef) and len(body) == 1 and isinstance(body[0], ast.Return):
        return CallableSource(text, body[0].value, picked)
    return CallableSource(text, None, picked)


def compile_lambda(
    arg_names: Sequence[str], body: ast.expr, namespace: dict[str, Any], filename: str
) -> Callable[..., Any]:
    """Compile ``lambda <arg_names>: <body>`` with ``namespace`` as its globals."""
    args = ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=n) for n in arg_names], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    tree = ast.Expression(body=ast.Lambda(args=args, body=body))
    ast.fix_missing_locations(tree)
    fn: Callable[..., Any] = eval(compile(tree, filename, "eval"), namespace)
    return fn


def function_namespace(fn: Callable[..., Any]) -> dict[str, Any]:
    """Names visible to ``fn``'s body besides its parameters: globals, closure, argument defaults.

    Used to compile a rewritten copy of the body at module level with the same meaning.
    """
    namespace: dict[str, Any] = dict(getattr(fn, "__globals__", {}))
    namespace.setdefault("__builtins__", builtins)
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None)
    if code is not None and closure:
        for name, cell in zip(code.co_freevars, closure, strict=True):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # empty cell: the name is not bound yet
                continue
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return namespace
    for arg in signature.parameters.values():
        if arg.default is not inspect.Parameter.empty:
            namespace[arg.name] = arg.default
    return namespace


def resolve_name(namespace: Mapping[str, Any], name: str) -> Any:
    """The value ``name`` has in ``namespace`` (then its builtins), or a private sentinel."""
    if name in namespace:
        return namespace[name]
    scope = namespace.get("__builtins__", builtins)
    table = scope if isinstance(scope, Mapping) else vars(scope)
    return table.get(name, _MISSING)


def is_missing(value: Any) -> bool:
    """True for the sentinel :func:`resolve_name` returns for an unknown name."""
    return value is _MISSING


_SIMPLE = (int, float, complex, bool, str, bytes, type(None))


def _is_simple(value: Any) -> bool:
    if isinstance(value, _SIMPLE):
        return True
    if isinstance(value, (tuple, frozenset)) and len(value) <= 64:
        return all(_is_simple(v) for v in value)
    return type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0


def constant_names(node: ast.AST, namespace: Mapping[str, Any], exclude: set[str]) -> dict[str, str]:
    """``repr`` of the simple values (numbers, strings, small tuples) of the free names ``node`` reads."""
    found: dict[str, str] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in exclude:
            if sub.id in found or sub.id not in namespace:
                continue
            value = namespace[sub.id]
            if _is_simple(value):
                found[sub.id] = repr(value)
    return dict(sorted(found.items()))
