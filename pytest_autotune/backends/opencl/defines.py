"""Turn a configuration into OpenCL ``-D`` build options.

The encoding (documented here once, used by :func:`pytest_autotune.backends.opencl.build_program`):

* ``bool`` -> ``-DNAME=0`` / ``-DNAME=1`` (usable in ``#if NAME``);
* integers -> ``-DNAME=<decimal>``;
* finite floats -> ``-DNAME=<repr>f`` (a single-precision literal, valid on
  devices without ``cl_khr_fp64``);
* strings -> ``-DNAME=<text>`` verbatim (type names such as ``float4``,
  identifiers, numbers); whitespace, quotes and other characters that would
  break the option string are rejected;
* tuples and lists (permutations, e.g. a loop order ``("k", "i", "j")``) ->
  ``-DNAME_0=k -DNAME_1=i -DNAME_2=j -DNAME_LEN=3``, each element encoded as a
  scalar.

Pure Python on purpose: the plugin can compute build options (for its cache
keys and reports) without importing pyopencl.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence

__all__ = ["define_options"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VERBATIM_TEXT = re.compile(r"[A-Za-z0-9_.+\-]+\Z")
_NUMPY_BOOLS = ("bool", "bool_")  # numpy 2 and numpy 1 names of numpy's boolean scalar


def _scalar_text(name: str, value: object) -> str:
    """The ``-D`` value text of one scalar (see the module docstring)."""
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
        if not _VERBATIM_TEXT.match(value):
            raise ValueError(
                f"define {name!r}: the string {value!r} cannot be passed verbatim as -D{name}=...; "
                "use letters, digits, '_', '.', '+' or '-' only"
            )
        return value
    raise ValueError(
        f"define {name!r}: cannot encode a value of type {type(value).__name__} ({value!r}); "
        "use a bool, int, float, string, or a tuple of those"
    )


def define_options(defines: Mapping[str, object]) -> tuple[str, ...]:
    """``-D`` options for ``defines`` in mapping order; raises ``ValueError`` naming a bad entry."""
    options: list[str] = []
    defined: dict[str, str] = {}

    def add(macro: str, text: str, origin: str) -> None:
        if macro in defined:
            raise ValueError(f"define {origin!r}: macro {macro!r} is also defined by {defined[macro]!r}")
        defined[macro] = origin
        options.append(f"-D{macro}={text}")

    for name, value in defines.items():
        if not isinstance(name, str) or not _IDENTIFIER.match(name):
            raise ValueError(f"define {name!r}: not a valid C macro name")
        if isinstance(value, (tuple, list)):
            items: Sequence[object] = value
            for position, item in enumerate(items):
                add(f"{name}_{position}", _scalar_text(name, item), name)
            add(f"{name}_LEN", str(len(items)), name)
        else:
            add(name, _scalar_text(name, value), name)
    return tuple(options)
