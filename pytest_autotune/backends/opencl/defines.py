"""Turn a configuration into OpenCL preprocessor defines: ``#define`` lines or ``-D`` options.

Two styles (:data:`DefineStyle`), one encoding of values:

* ``"source"`` (the default of :func:`~pytest_autotune.backends.opencl.build_program`), as Kernel
  Tuner does: :func:`define_source` puts one ``#define NAME VALUE`` line per define at the top of
  the source, followed by ``#line 1`` so that the compiler's messages keep the line numbers of the
  source as written. The compiler includes its built-in header (``opencl-c.h``) before the first
  line of the source, so a parameter may be called like an OpenCL keyword or built-in
  (``read_only``, ``local``): the macro exists only for the code after it.
* ``"options"``: :func:`define_options` gives one ``-DNAME=VALUE`` build option per define. The
  compiler defines these *before* its built-in header, so a name such as ``read_only`` breaks that
  header (hundreds of errors in ``opencl-c.h``).

The encoding of values:

* ``bool`` -> ``0`` / ``1`` (usable in ``#if NAME``);
* integers -> decimal;
* finite floats -> ``<repr>f`` (a single-precision literal, valid on devices without ``cl_khr_fp64``);
* strings -> verbatim (type names such as ``float4``, identifiers, numbers). As a ``-D`` option a
  string must be letters, digits, ``_ . + -`` (whitespace and quotes would break the option
  string); in the source it may be any text on one line (``unsigned int``), without a trailing
  backslash (which would continue the line);
* tuples and lists (permutations, e.g. a loop order ``("k", "i", "j")``) -> ``NAME_0=k NAME_1=i
  NAME_2=j NAME_LEN=3``, each element encoded as a scalar.

Pure Python on purpose: the plugin can compute defines (for cache keys and reports) without
importing pyopencl.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Final, Literal

__all__ = [
    "DEFINE_STYLES",
    "DefineStyle",
    "define_macros",
    "define_options",
    "define_source",
    "line_directive",
    "redefined_defines",
]

#: Where the defines go: ``#define`` lines in the source, or ``-D`` build options.
DefineStyle = Literal["source", "options"]
#: The accepted values of ``define_style``.
DEFINE_STYLES: Final[tuple[DefineStyle, ...]] = ("source", "options")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_OPTION_TEXT = re.compile(r"[A-Za-z0-9_.+\-]+\Z")
_LINE_BREAKS = re.compile(r"[\r\n\x00\x0b\x0c]")
_NUMPY_BOOLS = ("bool", "bool_")  # numpy 2 and numpy 1 names of numpy's boolean scalar


def _string_text(name: str, value: str, style: DefineStyle) -> str:
    if style == "options":
        if not _OPTION_TEXT.match(value):
            raise ValueError(
                f"define {name!r}: the string {value!r} cannot be passed verbatim as -D{name}=...; "
                "use letters, digits, '_', '.', '+' or '-' only (or define_style='source')"
            )
        return value
    if not value.strip() or _LINE_BREAKS.search(value) or value.rstrip().endswith("\\"):
        raise ValueError(
            f"define {name!r}: the string {value!r} cannot be a #define value; use non-empty text "
            "on one line that does not end in a backslash"
        )
    return value.strip()


def _scalar_text(name: str, value: object, style: DefineStyle) -> str:
    """The value text of one scalar (see the module docstring)."""
    numpy_bool = type(value).__module__ == "numpy" and type(value).__name__ in _NUMPY_BOOLS
    if isinstance(value, bool) or numpy_bool:
        return "1" if value else "0"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"define {name!r}: cannot encode the non-finite value {number!r}")
        return f"{number!r}f"
    if isinstance(value, str):
        return _string_text(name, value, style)
    raise ValueError(
        f"define {name!r}: cannot encode a value of type {type(value).__name__} ({value!r}); "
        "use a bool, int, float, string, or a tuple of those"
    )


def define_macros(
    defines: Mapping[str, object], style: DefineStyle = "source"
) -> tuple[tuple[str, str], ...]:
    """``(macro, value text)`` pairs for ``defines`` in mapping order; ``ValueError`` names a bad entry."""
    if style not in DEFINE_STYLES:
        raise ValueError(f"define_style={style!r}: expected one of {', '.join(map(repr, DEFINE_STYLES))}")
    macros: list[tuple[str, str]] = []
    defined: dict[str, str] = {}

    def add(macro: str, text: str, origin: str) -> None:
        if macro in defined:
            raise ValueError(f"define {origin!r}: macro {macro!r} is also defined by {defined[macro]!r}")
        defined[macro] = origin
        macros.append((macro, text))

    for name, value in defines.items():
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"define {name!r}: not a valid C macro name")
        if isinstance(value, (tuple, list)):
            items: Sequence[object] = value
            for position, item in enumerate(items):
                add(f"{name}_{position}", _scalar_text(name, item, style), name)
            add(f"{name}_LEN", str(len(items)), name)
        else:
            add(name, _scalar_text(name, value, style), name)
    return tuple(macros)


def define_options(defines: Mapping[str, object]) -> tuple[str, ...]:
    """``-D`` options for ``defines`` in mapping order; raises ``ValueError`` naming a bad entry."""
    return tuple(f"-D{macro}={text}" for macro, text in define_macros(defines, "options"))


def line_directive(source_name: str | None) -> str:
    """``#line 1`` (with ``"source_name"`` when given, quotes and backslashes escaped) and a newline.

    After it the compiler counts the next line as line 1 of ``source_name``, so its messages name
    the user's kernel file and line instead of the driver's temporary file.
    """
    if source_name is None:
        return "#line 1\n"
    escaped = _LINE_BREAKS.sub(" ", source_name).replace("\\", "\\\\").replace('"', '\\"')
    return f'#line 1 "{escaped}"\n'


def define_source(defines: Mapping[str, object], source: str, source_name: str | None = None) -> str:
    """``source`` after one ``#define`` line per define and a ``#line 1`` directive naming
    ``source_name`` when given (``source`` itself when there is neither).

    The lines are sorted by macro name, so the same defines in any order give the same source (and
    the same cache entry): the order of ``#define`` lines does not change what a macro expands to.
    """
    macros = sorted(define_macros(defines, "source"))
    if not macros and source_name is None:
        return source
    lines = "".join(f"#define {macro} {text}\n" for macro, text in macros)
    return f"{lines}{line_directive(source_name)}{source}"


_DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
_GUARD_LINE = re.compile(
    r"^[ \t]*#[ \t]*(?:ifndef[ \t]+([A-Za-z_][A-Za-z0-9_]*)"
    r"|if[ \t]+!\s*defined\s*\(?\s*([A-Za-z_][A-Za-z0-9_]*))",
    re.MULTILINE,
)


def redefined_defines(defines: Mapping[str, object], source: str) -> tuple[tuple[str, int], ...]:
    """The tuned defines that ``source`` itself ``#define``s without an ``#ifndef NAME`` guard, with
    the line of each (1-based), in source order.

    A ``#define WIDTH 4096`` in the kernel silently overrides the configured ``WIDTH`` (the compiler
    only warns that the macro was redefined), so the tuner would time the same program under every
    value. A guarded default (``#ifndef WIDTH`` / ``#define WIDTH 4096`` / ``#endif``) is the usual
    way to give a fallback and is not reported.
    """
    tuned = {macro for macro, _ in define_macros(defines, "source")}
    guarded = {m.group(1) or m.group(2) for m in _GUARD_LINE.finditer(source)}
    found: list[tuple[str, int]] = []
    for match in _DEFINE_LINE.finditer(source):
        name = match.group(1)
        if name in tuned and name not in guarded:
            found.append((name, source.count("\n", 0, match.start()) + 1))
    return tuple(found)
