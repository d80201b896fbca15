"""Which parameter values survive a trip through ``autotune.json``, checked when they are declared.

The tuned configuration is written to ``autotune.json`` (``json.dumps(..., allow_nan=False)``, UTF-8)
and read back with :func:`pytest_autotune.store.config_from_json`, which turns a list back into a
tuple. A value that JSON cannot store (``object()``, ``b"x"``, NaN, a lone surrogate) or that comes
back different (a tuple inside a tuple returns as a tuple holding a list) would only fail after a
whole tuning run. :func:`json_problem` says what is wrong with such a value, so that ``Set``,
``Categorical`` and ``Permutation`` refuse it at declaration, naming the value.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Final

import numpy as np

from pytest_autotune.space.errors import SpaceError

__all__ = ["STORABLE", "check_storable", "json_problem"]

#: What the error messages say can be stored.
STORABLE: Final = "str, int, finite float, bool, None, or a flat tuple of those"


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        value = value.item()
    if value is None or isinstance(value, (bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else "JSON has no NaN or infinity"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "the text cannot be written as UTF-8 (lone surrogate)"
        return None
    return f"JSON cannot store {type(value).__name__!r} values"


def json_problem(value: Any, *, allow_tuple: bool = True) -> str | None:
    """Why ``value`` would not come back equal from ``autotune.json``, or None when it would."""
    if isinstance(value, tuple) and allow_tuple:
        for item in value:
            if isinstance(item, (tuple, list)):
                return "a tuple inside a tuple comes back from JSON as a list"
            problem = _scalar_problem(item)
            if problem is not None:
                return f"its item {item!r}: {problem}"
        return None
    return _scalar_problem(value)


def check_storable(kind: str, values: Iterable[Any], *, allow_tuple: bool = True) -> None:
    """Raise :class:`SpaceError` naming the first of ``values`` that cannot be stored."""
    for value in values:
        problem = json_problem(value, allow_tuple=allow_tuple)
        if problem is not None:
            raise SpaceError(
                f"{kind}: value {value!r} cannot be stored in autotune.json ({problem}); use {STORABLE}"
            )
