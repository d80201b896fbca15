"""The parameter base class :class:`Param` and the helpers its kinds share.

A parameter kind owns everything that differs between kinds, so that a new kind is one class in
one module: its domain (:meth:`Param.values`, :meth:`Param.index_of`, ...), how the constraint
analysis sees its values (:meth:`Param.operand`), its model features (:attr:`Param.feature_kind`,
:meth:`Param.encode_positions`, :meth:`Param.encode_values`), its moves (:meth:`Param.neighbour_positions`),
its unit-cube mapping (:meth:`Param.values_from_unit`) and the JSON round trip of its values
(:meth:`Param.to_json`, :meth:`Param.from_json`). The space and the strategies ask these methods
and capability attributes (``is_ordered``, ``is_continuous``, ``is_listed``) instead of testing
classes.
"""

from __future__ import annotations

import array as pyarray
import copy as _copy
import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any, ClassVar, Final, Literal

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.conditions.bounds import Operand
from pytest_autotune.space.errors import SpaceError

__all__ = ["LOG_SPAN_RATIO", "NO_DEFAULT", "FeatureKind", "Param", "to_python"]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault()
"""Sentinel: the parameter declares no default value."""

#: Ratio max/min above which a positive numeric parameter is modelled in log space.
LOG_SPAN_RATIO: Final = 100.0

#: How a parameter's values become model features (see :mod:`pytest_autotune.space.features`).
FeatureKind = Literal["numeric", "categorical", "permutation"]


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
    #: True for domains given as an explicit list of values by their author.
    is_listed: ClassVar[bool] = False

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

    def ends(self) -> NDArray[Any]:
        """The first and the last value in domain order (for continuous kinds: the bounds)."""
        return self.values_at(np.array([0, self.size - 1], dtype=np.int64))

    def bounds(self) -> tuple[float, float]:
        """Smallest and largest value of a numeric domain (without materialising large ones)."""
        values = self.values()
        return float(values.min()), float(values.max())

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

    def check_enumerable(self, name: str, max_values: int) -> None:
        """Raise :class:`SpaceError` when a constraint reads this parameter but its domain is too
        large to enumerate (more than ``max_values`` values)."""
        if self.size > max_values:
            raise SpaceError(
                f"parameter {name!r}: {self.describe()} has {self.size} values and is read by a "
                f"constraint, so it would be enumerated; at most {max_values} values are "
                "supported there (narrow the range, or use a step or a Pow2)",
                parameter=name,
            )

    # -- constraint analysis ---------------------------------------------------
    def operand(self) -> Operand:
        """What constraint analysis knows of the values (:mod:`~pytest_autotune.space.conditions.bounds`)."""
        values = self.values()
        kind = values.dtype.kind
        if kind == "b":
            return Operand("bool", 1)
        if kind in "iu":
            return Operand("int", max(abs(int(values.min())), abs(int(values.max()))))
        if kind == "f":
            return Operand("float")
        if kind == "O" and all(isinstance(v, int) and not isinstance(v, bool) for v in values.tolist()):
            return Operand("int", max(abs(v) for v in values.tolist()))
        return Operand("other")

    # -- moves ---------------------------------------------------------------------
    def neighbour_positions(self, position: int) -> NDArray[np.int64] | None:
        """Domain positions one kind-specific move away from ``position``; None when the kind has
        no moves of its own (neighbours are then the nearest values of an ordered domain, or every
        other value of an unordered one)."""
        return None

    # -- unit cube ---------------------------------------------------------------
    def values_from_unit(self, u: NDArray[np.float64]) -> NDArray[Any]:
        """Values for coordinates in (0, 1]: coordinate ``u`` picks position ``ceil(u * size) - 1``
        (continuous kinds map the range, log-uniformly when log scaled)."""
        picked = np.ceil(np.asarray(u, dtype=np.float64) * self.size) - 1
        return self.values_at(np.clip(picked, 0, self.size - 1).astype(np.int64))

    def unit_from_values(self, values: Sequence[Any] | NDArray[Any]) -> NDArray[np.float64]:
        """Cell-centre coordinates that :meth:`values_from_unit` maps back to ``values``."""
        positions = self.indices_of(list(values))
        if (positions < 0).any():
            raise SpaceError(f"{self._label()}: a value is not in {self.describe()}", parameter=self.name)
        return (positions + 0.5) / self.size

    # -- features -----------------------------------------------------------------
    @property
    def feature_kind(self) -> FeatureKind:
        """How values become features: a scaled number, a category (the domain position), or
        one column per item (permutations)."""
        return "numeric" if self.is_numeric else "categorical"

    @property
    def feature_width(self) -> int:
        """Number of feature columns."""
        return 1

    @cached_property
    def _scale(self) -> tuple[float, float, bool]:
        lo, hi = self.bounds()
        return lo, hi, self.log_scale and lo > 0

    def encode_values(self, values: NDArray[Any]) -> NDArray[np.float64]:
        """Numeric features of values, shape (n, 1): ``(v - lo) / (hi - lo)`` over the domain's
        bounds, in log space when log scaled (zeros when the domain holds one value)."""
        x = np.asarray(values, dtype=np.float64)
        lo, hi, log = self._scale
        if hi == lo:
            scaled = np.zeros_like(x)
        elif log:
            scaled = (np.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
        else:
            scaled = (x - lo) / (hi - lo)
        return scaled.reshape(-1, 1)

    def encode_positions(self, positions: NDArray[np.int64]) -> NDArray[np.float64]:
        """Features of the values at these domain positions: shape (n, :attr:`feature_width`)."""
        positions = np.asarray(positions, dtype=np.int64)
        if not self.is_numeric:
            return positions.astype(np.float64).reshape(-1, 1)
        return self.encode_values(self.values_at(positions))

    # -- JSON ------------------------------------------------------------------------
    def to_json(self, value: Any) -> Any:
        """``value`` as written to JSON (plain Python; tuples become lists)."""
        value = to_python(value)
        return list(value) if isinstance(value, tuple) else value

    def from_json(self, value: Any) -> Any:
        """A value read back from JSON: the inverse of :meth:`to_json` (lists become tuples)."""
        return tuple(value) if isinstance(value, list) else value

    # -- helpers --------------------------------------------------------------
    def _label(self) -> str:
        return f"parameter {self.name!r}" if self.name else type(self).__name__

    def _check_default(self) -> None:
        if self.default is not NO_DEFAULT and self.default not in self:
            raise SpaceError(
                f"{self._label()}: default {self.default!r} is not in its domain {self.describe()}",
                parameter=self.name,
            )

    def with_default(self, value: Any) -> Param:
        """A copy of this parameter whose default is ``value``; ``SpaceError`` when not in the domain."""
        copy = _copy.copy(self)
        copy.default = value
        copy._check_default()
        return copy

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
