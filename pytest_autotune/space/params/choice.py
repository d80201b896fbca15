"""Kinds given as an explicit list of values: :class:`Set`, :class:`Categorical`, :class:`Bool`."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.errors import SpaceError
from pytest_autotune.space.json_values import check_storable
from pytest_autotune.space.params.base import (
    _INT_TYPES,
    NO_DEFAULT,
    Param,
    _is_integer,
    _is_number,
    _numeric_log_scale,
    _sorted_lookup,
    to_python,
)

__all__ = ["Bool", "Categorical", "Set"]


class _FiniteValues(Param):
    """A domain given as an explicit, duplicate-free list of values."""

    is_listed = True

    def __init__(self, values: Sequence[Any], *, where: Callable[..., Any] | None, default: Any) -> None:
        super().__init__(where=where, default=default)
        if len(values) == 0:
            raise SpaceError(f"{type(self).__name__}() needs at least one value")
        values = [to_python(v) for v in values]  # a numpy scalar in an object array would reach JSON
        check_storable(type(self).__name__, values)  # before hashing: a set value is unhashable
        try:
            lookup = {v: i for i, v in enumerate(values)}
        except TypeError as exc:
            raise SpaceError(
                f"{type(self).__name__}{tuple(values)!r}: values must be hashable ({exc}); "
                "write a list value as a tuple, e.g. (1, 2)"
            ) from exc
        if len(lookup) != len(values):
            raise SpaceError(f"{type(self).__name__}{tuple(values)!r}: duplicate values")
        self._values = tuple(values)
        self._lookup = lookup
        self._array = _as_array(self._values)
        #: numeric and strictly ascending: value lookups may use binary search
        self._ascending = bool(self._array.dtype.kind in "if" and np.all(self._array[:-1] < self._array[1:]))

    @property
    def size(self) -> int:
        return len(self._values)

    def values(self, start: int = 0, stop: int | None = None) -> NDArray[Any]:
        return self._array[start:stop]

    def values_at(self, indices: NDArray[np.int64]) -> NDArray[Any]:
        return self._array[np.asarray(indices, dtype=np.int64)]

    def indices_of(self, values: Sequence[Any]) -> NDArray[np.int64]:
        kinds = set(map(type, values))
        if self._values == (False, True) and kinds <= {bool, np.bool_}:
            return np.asarray(values, dtype=bool).astype(np.int64)
        if self._ascending and kinds <= _INT_TYPES | {float, np.float64}:
            return _sorted_lookup(
                self._array, np.asarray(values, dtype=np.float64 if float in kinds else None)
            )
        return super().indices_of(values)

    def index_of(self, value: Any) -> int | None:
        try:
            index = self._lookup.get(value)
        except TypeError:
            return None
        if index is None:
            return None
        # ``True == 1`` in Python: do not let 1 match Bool's True or vice versa.
        if isinstance(value, (bool, np.bool_)) != isinstance(self._values[index], bool):
            return None
        return index


def _as_array(values: Sequence[Any]) -> NDArray[Any]:
    if all(isinstance(v, bool) for v in values):
        return np.array(values, dtype=bool)
    if all(_is_integer(v) for v in values):
        if all(-(2**63) <= int(v) < 2**63 for v in values):
            return np.array([int(v) for v in values], dtype=np.int64)
        return np.array(values, dtype=object)
    if all(isinstance(v, float) for v in values):
        return np.array(values, dtype=np.float64)
    if all(isinstance(v, str) for v in values):
        return np.array(values, dtype=np.str_)
    array = np.empty(len(values), dtype=object)
    array[:] = list(values)
    return array


def _listed(kind: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """The values of ``Set(16, 32)``, also given as one list (``Set([16, 32])``, as Kernel Tuner
    writes them), ``range`` or one-dimensional numpy array. A single tuple stays one value of a
    ``Categorical`` (tuples are values); for a ``Set`` it is refused with the spellings to use."""
    if len(values) != 1:
        return values
    only = values[0]
    if isinstance(only, (list, range)):
        return tuple(only)
    if type(only).__module__ == "numpy" and getattr(only, "ndim", None) == 1:
        return tuple(only.tolist())
    if isinstance(only, tuple) and kind == "Set":
        shown = ", ".join(map(repr, only))
        raise SpaceError(
            f"Set({only!r}): one tuple is ambiguous; write Set({shown}) or Set([{shown}]) for "
            f"{len(only)} values, or Set([{only!r}]) for the tuple as one value"
        )
    return values


class Set(_FiniteValues):
    """An explicit set of values; numeric sets are ordered ascending.

    ``Set(16, 32, 64)`` and ``Set([16, 32, 64])`` (one list, as Kernel Tuner writes it; also a
    ``range`` or a numpy array) are the same.
    """

    kind = "set"

    def __init__(
        self, *values: Any, where: Callable[..., Any] | None = None, default: Any = NO_DEFAULT
    ) -> None:
        values = _listed("Set", values)
        numeric = len(values) > 0 and all(_is_number(v) for v in values)
        ordered_values = sorted(values) if numeric else list(values)
        super().__init__(ordered_values, where=where, default=default)
        self._numeric = numeric
        self._check_default()

    @property
    def is_ordered(self) -> bool:  # type: ignore[override]
        return self._numeric

    @property
    def log_scale(self) -> bool:
        if not self._numeric:
            return False
        return _numeric_log_scale(float(self._values[0]), float(self._values[-1]))

    def describe(self) -> str:
        return f"Set{self._values!r}" if len(self._values) != 1 else f"Set({self._values[0]!r})"


class Categorical(_FiniteValues):
    """Unordered choices (Hamming distance in the model), e.g. strings.

    ``Categorical("a", "b")`` and ``Categorical(["a", "b"])`` are the same; a single tuple is one
    value (``Categorical(("k", "i"))``).
    """

    kind = "categorical"

    def __init__(
        self, *values: Hashable, where: Callable[..., Any] | None = None, default: Any = NO_DEFAULT
    ) -> None:
        super().__init__(list(_listed("Categorical", values)), where=where, default=default)
        self._check_default()

    def describe(self) -> str:
        return (
            f"Categorical{self._values!r}" if len(self._values) != 1 else f"Categorical({self._values[0]!r})"
        )


class Bool(_FiniteValues):
    """``False`` or ``True``."""

    kind = "bool"

    def __init__(self, *, where: Callable[..., Any] | None = None, default: Any = NO_DEFAULT) -> None:
        super().__init__([False, True], where=where, default=default)
        self._check_default()

    def describe(self) -> str:
        return "Bool()"
