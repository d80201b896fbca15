"""Parameter kinds of a search space.

A parameter is a domain of values (integers, reals, categories, permutations)
plus an optional known constraint ``where=`` and an optional ``default=``.
Domains are described, not materialised: ``Interval(1, 2**40)`` costs nothing
until a chunk of its values is asked for with :meth:`Param.values`.

Domain order is the order in which :meth:`Param.values` yields values; for
ordered (numeric) kinds it is ascending by value, which the search space uses
for neighbourhoods and for the feature encoding.
"""

from __future__ import annotations

import array as pyarray
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from typing import Any, ClassVar, Final

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.errors import SpaceError
from pytest_autotune.space.json_values import check_storable
from pytest_autotune.space.permutations import permutation_count, rank_permutation, unrank_permutations

__all__ = [
    "NO_DEFAULT",
    "Bool",
    "Categorical",
    "Interval",
    "Param",
    "Permutation",
    "Pow2",
    "Real",
    "Set",
]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault()
"""Sentinel: the parameter declares no default value."""

#: Ratio max/min above which a positive numeric parameter is modelled in log space.
LOG_SPAN_RATIO: Final = 100.0


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_integer(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


_INT_TYPES = frozenset({int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32})


def _int64_array(values: Sequence[Any]) -> NDArray[np.int64] | None:
    """``values`` as int64 when all are (non-bool) integers that fit, else None.

    ``array.array`` converts in C and rejects floats, strings and integers beyond int64; it
    accepts ``bool`` (an ``int`` subclass), and a bool can only hide among the values 0 and 1,
    so only those are checked one by one.
    """
    try:
        array: NDArray[np.int64] = np.frombuffer(pyarray.array("q", values), dtype=np.int64)
    except (TypeError, OverflowError):
        return None
    suspects = np.flatnonzero((array == 0) | (array == 1)).tolist()
    if suspects:  # the types of just those values, collected in C (values of 1 are common)
        kinds = set(map(type, map(values.__getitem__, suspects)))
        if any(issubclass(kind, (bool, np.bool_)) for kind in kinds):
            return None
    return array


def to_python(value: Any) -> Any:
    """Convert a numpy scalar (or a tuple of them) to the plain Python value."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return tuple(to_python(v) for v in value)
    return value


class Param(ABC):
    """A tuning parameter: a domain, an optional known constraint and default.

    Subclasses describe the domain. ``where`` is any callable whose argument
    names are parameter names (this one and the ones it depends on); it returns
    a boolean telling whether the combination is valid. ``default`` is the
    value used when no tuned configuration exists.
    """

    kind: ClassVar[str]
    #: True for domains whose values have a meaningful order (numbers).
    is_ordered: ClassVar[bool] = False
    #: True for continuous domains (never enumerated).
    is_continuous: ClassVar[bool] = False

    def __init__(self, *, where: Callable[..., Any] | None = None, default: Any = NO_DEFAULT) -> None:
        if where is not None and not callable(where):
            raise SpaceError(f"{type(self).__name__}: where= must be callable, got {where!r}")
        self.where = where
        self.default = default
        self.name: str | None = None

    # -- domain ---------------------------------------------------------------
    @property
    @abstractmethod
    def size(self) -> int:
        """Number of values in the domain (raises for continuous kinds)."""

    @abstractmethod
    def values(self, start: int = 0, stop: int | None = None) -> NDArray[Any]:
        """Domain values at positions ``[start, stop)`` as a numpy array."""

    @abstractmethod
    def index_of(self, value: Any) -> int | None:
        """Position of ``value`` in the domain, or None when it is not in it."""

    def values_at(self, indices: NDArray[np.int64]) -> NDArray[Any]:
        """Domain values at arbitrary positions (a vectorised :meth:`values`)."""
        indices = np.asarray(indices, dtype=np.int64)
        if len(indices) == 0:
            return self.values(0, 0)
        return np.concatenate([self.values(int(i), int(i) + 1) for i in indices])

    def indices_of(self, values: Sequence[Any]) -> NDArray[np.int64]:
        """Positions of ``values`` in the domain (-1 where a value is not in it), vectorised."""
        out = np.empty(len(values), dtype=np.int64)
        for i, value in enumerate(values):
            index = self.index_of(value)
            out[i] = -1 if index is None else index
        return out

    @abstractmethod
    def describe(self) -> str:
        """Canonical text of the domain, stable across runs (used in hashes)."""

    @property
    def is_numeric(self) -> bool:
        """True when values are numbers (modelled as a numeric feature)."""
        return self.is_ordered

    @property
    def log_scale(self) -> bool:
        """True when the parameter is modelled in log space (BaCO)."""
        return False

    def __contains__(self, value: object) -> bool:
        return self.index_of(value) is not None

    # -- helpers --------------------------------------------------------------
    def _label(self) -> str:
        return f"parameter {self.name!r}" if self.name else type(self).__name__

    def _check_default(self) -> None:
        if self.default is not NO_DEFAULT and self.default not in self:
            raise SpaceError(
                f"{self._label()}: default {self.default!r} is not in its domain {self.describe()}",
                parameter=self.name,
            )

    def bind(self, name: str) -> Param:
        """Give the parameter its name (the keyword it was declared under)."""
        if not name.isidentifier():
            raise SpaceError(f"parameter name {name!r} is not a valid identifier", parameter=name)
        self.name = name
        return self

    def __repr__(self) -> str:
        extra = ""
        if self.where is not None:
            extra += ", where=..."
        if self.default is not NO_DEFAULT:
            extra += f", default={self.default!r}"
        return f"{self.describe()[:-1]}{extra})" if self.describe().endswith(")") else self.describe()


class _FiniteValues(Param):
    """A domain given as an explicit, duplicate-free list of values."""

    def __init__(self, values: Sequence[Any], *, where: Callable[..., Any] | None, default: Any) -> None:
        super().__init__(where=where, default=default)
        if len(values) == 0:
            raise SpaceError(f"{type(self).__name__}() needs at least one value")
        values = [to_python(v) for v in values]  # a numpy scalar in an object array would reach JSON
        check_storable(type(self).__name__, values)  # before hashing: a set value is unhashable
        try:
            lookup = {v: i for i, v in enumerate(values)}
        except TypeError as exc:
            raise SpaceError(f"{type(self).__name__}: values must be hashable ({exc})") from exc
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


def _sorted_lookup(domain: NDArray[Any], queries: NDArray[Any]) -> NDArray[np.int64]:
    """Positions of ``queries`` in the ascending array ``domain``, -1 where absent."""
    if queries.size == 0:
        return np.zeros(0, dtype=np.int64)
    positions = np.searchsorted(domain, queries)
    clipped = np.minimum(positions, len(domain) - 1)
    found = (positions < len(domain)) & (domain[clipped] == queries)
    return np.where(found, clipped, -1).astype(np.int64)


def _numeric_log_scale(lo: float, hi: float) -> bool:
    return lo > 0 and hi / lo > LOG_SPAN_RATIO


class Interval(Param):
    """Integers ``lo, lo+step, ..., <= hi`` (inclusive, like pyATF).

    ``generator`` maps each integer of the interval to the parameter's value
    (pyATF's ``Interval(1, 10, generator=lambda i: 2**i)``). Without a
    generator the domain is never materialised whole.
    """

    kind = "interval"
    is_ordered = True

    def __init__(
        self,
        lo: int,
        hi: int,
        step: int = 1,
        generator: Callable[[int], Any] | None = None,
        *,
        where: Callable[..., Any] | None = None,
        default: Any = NO_DEFAULT,
    ) -> None:
        super().__init__(where=where, default=default)
        for label, value in (("lo", lo), ("hi", hi), ("step", step)):
            if not _is_integer(value):
                raise SpaceError(f"Interval: {label}={value!r} must be an integer (use Real or Set)")
        if step <= 0:
            raise SpaceError(f"Interval({lo}, {hi}, step={step}): step must be positive")
        if hi < lo:
            raise SpaceError(f"Interval({lo}, {hi}): empty range (hi < lo)")
        if generator is not None and not callable(generator):
            raise SpaceError(f"Interval({lo}, {hi}): generator must be callable")
        self.lo, self.hi, self.step = int(lo), int(hi), int(step)
        self.generator = generator
        self._generated: _FiniteValues | None = None
        if generator is not None:
            # Generated domains are small in practice (pyATF's idiom): materialise them.
            generated = [generator(v) for v in range(self.lo, self.hi + 1, self.step)]
            try:
                self._generated = Set(*generated)
            except SpaceError as exc:
                raise SpaceError(f"Interval({lo}, {hi}) generator: {exc}") from exc
            if not self._generated.is_ordered:
                raise SpaceError(f"Interval({lo}, {hi}): generator must return numbers")
        self._check_default()

    @property
    def size(self) -> int:
        return (self.hi - self.lo) // self.step + 1

    def values(self, start: int = 0, stop: int | None = None) -> NDArray[Any]:
        if self._generated is not None:
            return self._generated.values(start, stop)
        stop = self.size if stop is None else min(stop, self.size)
        start = max(0, start)
        if self.hi >= 2**63 or self.lo < -(2**63):
            return np.array([self.lo + self.step * i for i in range(start, stop)], dtype=object)
        return self.lo + self.step * np.arange(start, stop, dtype=np.int64)

    def values_at(self, indices: NDArray[np.int64]) -> NDArray[Any]:
        indices = np.asarray(indices, dtype=np.int64)
        if self._generated is not None:
            return self._generated.values_at(indices)
        if self.hi >= 2**63 or self.lo < -(2**63):
            out = np.empty(len(indices), dtype=object)
            out[:] = [self.lo + self.step * int(i) for i in indices.tolist()]
            return out
        return self.lo + self.step * indices

    def indices_of(self, values: Sequence[Any]) -> NDArray[np.int64]:
        if self._generated is not None:
            return self._generated.indices_of(values)
        array = _int64_array(values) if self.hi < 2**62 and self.lo > -(2**62) else None
        if array is None:
            return super().indices_of(values)
        offset = array - self.lo
        ok = (offset >= 0) & (array <= self.hi) & (offset % self.step == 0)
        return np.where(ok, offset // self.step, -1).astype(np.int64)

    def index_of(self, value: Any) -> int | None:
        if self._generated is not None:
            return self._generated.index_of(value)
        if isinstance(value, (bool, np.bool_)) or not _is_number(value):
            return None
        if value != int(value):
            return None
        offset = int(value) - self.lo
        if offset < 0 or int(value) > self.hi or offset % self.step:
            return None
        return offset // self.step

    @property
    def log_scale(self) -> bool:
        if self._generated is not None:
            return self._generated.log_scale
        return _numeric_log_scale(self.lo, self.hi)

    def describe(self) -> str:
        gen = ""
        if self.generator is not None:
            gen = f", generator={list(self._generated._values) if self._generated else None}"
        return f"Interval({self.lo}, {self.hi}, step={self.step}{gen})"


class Pow2(Param):
    """Powers of two between ``lo`` and ``hi`` inclusive (modelled in log space)."""

    kind = "pow2"
    is_ordered = True

    def __init__(
        self, lo: int, hi: int, *, where: Callable[..., Any] | None = None, default: Any = NO_DEFAULT
    ) -> None:
        super().__init__(where=where, default=default)
        if not (_is_integer(lo) and _is_integer(hi)) or lo < 1:
            raise SpaceError(f"Pow2({lo!r}, {hi!r}): bounds must be positive integers")
        first = (int(lo) - 1).bit_length()
        last = int(hi).bit_length() - 1
        if last < first:
            raise SpaceError(f"Pow2({lo}, {hi}): empty range (no power of two in it)")
        self.lo, self.hi = int(lo), int(hi)
        self._first, self._last = first, last
        self._check_default()

    @property
    def size(self) -> int:
        return self._last - self._first + 1

    def values(self, start: int = 0, stop: int | None = None) -> NDArray[Any]:
        exps = range(self._first, self._last + 1)[start:stop]
        if self._last >= 63:
            return np.array([1 << e for e in exps], dtype=object)
        return np.array([1 << e for e in exps], dtype=np.int64)

    def values_at(self, indices: NDArray[np.int64]) -> NDArray[Any]:
        exps = self._first + np.asarray(indices, dtype=np.int64)
        if self._last >= 63:
            out = np.empty(len(exps), dtype=object)
            out[:] = [1 << int(e) for e in exps.tolist()]
            return out
        return np.left_shift(np.int64(1), exps)

    def indices_of(self, values: Sequence[Any]) -> NDArray[np.int64]:
        array = _int64_array(values)
        if array is None or self._last >= 62:
            return super().indices_of(values)
        return _sorted_lookup(self.values(), array)

    def index_of(self, value: Any) -> int | None:
        if not _is_integer(value) or value < 1:
            return None
        v = int(value)
        if v & (v - 1):
            return None
        e = v.bit_length() - 1
        return e - self._first if self._first <= e <= self._last else None

    @property
    def log_scale(self) -> bool:
        return True

    def describe(self) -> str:
        return f"Pow2({self.lo}, {self.hi})"


class Set(_FiniteValues):
    """An explicit set of values; numeric sets are ordered ascending."""

    kind = "set"

    def __init__(
        self, *values: Any, where: Callable[..., Any] | None = None, default: Any = NO_DEFAULT
    ) -> None:
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
    """Unordered choices (Hamming distance in the model), e.g. strings."""

    kind = "categorical"

    def __init__(
        self, *values: Hashable, where: Callable[..., Any] | None = None, default: Any = NO_DEFAULT
    ) -> None:
        super().__init__(list(values), where=where, default=default)
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


class Real(Param):
    """A continuous range ``[lo, hi]``; never enumerated.

    ``log=None`` (default) models it in log space when it spans more than two
    decades; ``True``/``False`` force the choice.
    """

    kind = "real"
    is_ordered = True
    is_continuous = True

    def __init__(
        self,
        lo: float,
        hi: float,
        log: bool | None = None,
        *,
        where: Callable[..., Any] | None = None,
        default: Any = NO_DEFAULT,
    ) -> None:
        super().__init__(where=where, default=default)
        if not (_is_number(lo) and _is_number(hi)) or not (math.isfinite(lo) and math.isfinite(hi)):
            raise SpaceError(f"Real({lo!r}, {hi!r}): bounds must be finite numbers")
        if not hi > lo:
            raise SpaceError(f"Real({lo}, {hi}): empty range (hi <= lo)")
        if log and lo <= 0:
            raise SpaceError(f"Real({lo}, {hi}, log=True): log scale needs lo > 0")
        self.lo, self.hi = float(lo), float(hi)
        self._log = _numeric_log_scale(self.lo, self.hi) if log is None else bool(log)
        self._check_default()

    @property
    def size(self) -> int:
        raise SpaceError(f"{self._label()}: a Real parameter has no finite size", parameter=self.name)

    def values(self, start: int = 0, stop: int | None = None) -> NDArray[Any]:
        raise SpaceError(f"{self._label()}: a Real parameter is not enumerable", parameter=self.name)

    def index_of(self, value: Any) -> int | None:
        raise SpaceError(f"{self._label()}: a Real parameter is not enumerable", parameter=self.name)

    def __contains__(self, value: object) -> bool:
        return _is_number(value) and self.lo <= float(value) <= self.hi  # type: ignore[arg-type]

    @property
    def log_scale(self) -> bool:
        return self._log

    def from_unit(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """Map coordinates in [0, 1] to values (log-uniform when log scaled)."""
        u = np.asarray(u, dtype=np.float64)
        if self._log:
            return np.asarray(np.exp(np.log(self.lo) + u * (np.log(self.hi) - np.log(self.lo))))
        return np.asarray(self.lo + u * (self.hi - self.lo))

    def to_unit(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """Inverse of :meth:`from_unit`."""
        x = np.asarray(x, dtype=np.float64)
        if self._log:
            return np.asarray((np.log(x) - np.log(self.lo)) / (np.log(self.hi) - np.log(self.lo)))
        return np.asarray((x - self.lo) / (self.hi - self.lo))

    def describe(self) -> str:
        return f"Real({self.lo!r}, {self.hi!r}, log={self._log})"


class Permutation(Param):
    """All orderings of ``items`` (e.g. loop orders); values are tuples.

    Ranked by Lehmer code, so permutations of many items are never
    enumerated: ``values`` and ``index_of`` convert between rank and tuple.
    """

    kind = "permutation"

    def __init__(
        self,
        items: Sequence[Hashable],
        *,
        where: Callable[..., Any] | None = None,
        default: Any = NO_DEFAULT,
    ) -> None:
        super().__init__(where=where, default=default)
        items = tuple(to_python(item) for item in items)
        if len(items) == 0:
            raise SpaceError("Permutation([]): needs at least one item")
        check_storable("Permutation item", items, allow_tuple=False)
        if len(set(items)) != len(items):
            raise SpaceError(f"Permutation({list(items)!r}): duplicate items")
        if len(items) > 20:
            raise SpaceError(f"Permutation of {len(items)} items: at most 20 items are supported")
        self.items = items
        self._position = {item: i for i, item in enumerate(items)}
        if default is not NO_DEFAULT:
            self.default = tuple(default)
        self._check_default()

    @property
    def size(self) -> int:
        return permutation_count(len(self.items))

    def values(self, start: int = 0, stop: int | None = None) -> NDArray[Any]:
        stop = self.size if stop is None else min(stop, self.size)
        ranks = np.arange(max(0, start), stop, dtype=np.int64)
        orders = unrank_permutations(ranks, len(self.items))
        out = np.empty(len(ranks), dtype=object)
        out[:] = [tuple(self.items[i] for i in row) for row in orders]
        return out

    def values_at(self, indices: NDArray[np.int64]) -> NDArray[Any]:
        orders = unrank_permutations(np.asarray(indices, dtype=np.int64), len(self.items))
        out = np.empty(len(orders), dtype=object)
        out[:] = [tuple(self.items[i] for i in row) for row in orders.tolist()]
        return out

    def orders(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """Permutations (as item positions) for an array of ranks: shape (n, items)."""
        return unrank_permutations(ranks, len(self.items))

    def index_of(self, value: Any) -> int | None:
        try:
            order = [self._position[item] for item in value]
        except (TypeError, KeyError):
            return None
        if len(order) != len(self.items) or len(set(order)) != len(order):
            return None
        return rank_permutation(order)

    def describe(self) -> str:
        return f"Permutation({list(self.items)!r})"
