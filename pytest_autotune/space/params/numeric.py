"""Numeric kinds: integer ranges (:class:`Interval`, :class:`Pow2`) and continuous ones (:class:`Real`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.conditions.bounds import Operand
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.space.params.base import (
    NO_DEFAULT,
    Param,
    _int64_array,
    _is_integer,
    _is_number,
    _numeric_log_scale,
    _sorted_lookup,
)
from pytest_autotune.space.params.choice import Set, _FiniteValues

__all__ = ["Interval", "Pow2", "Real"]


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
    def is_listed(self) -> bool:  # type: ignore[override]
        """A generated interval is the explicit list of its generated values."""
        return self._generated is not None

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

    def bounds(self) -> tuple[float, float]:
        if self._generated is not None:
            return super().bounds()
        ends = self.ends()
        return float(ends[0]), float(ends[1])

    def operand(self) -> Operand:
        if self._generated is not None:
            return super().operand()
        last = self.lo + self.step * (self.size - 1)
        return Operand("int", max(abs(self.lo), abs(last)))

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

    def bounds(self) -> tuple[float, float]:
        ends = self.ends()
        return float(ends[0]), float(ends[1])

    def operand(self) -> Operand:
        return Operand("int", 1 << (self.hi.bit_length() - 1))

    @property
    def log_scale(self) -> bool:
        return True

    def describe(self) -> str:
        return f"Pow2({self.lo}, {self.hi})"


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

    def ends(self) -> NDArray[Any]:
        return np.array([self.lo, self.hi], dtype=np.float64)

    def bounds(self) -> tuple[float, float]:
        return self.lo, self.hi

    def operand(self) -> Operand:
        return Operand("float")

    @property
    def log_scale(self) -> bool:
        return self._log

    def values_from_unit(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """Map coordinates in [0, 1] to values (log-uniform when log scaled)."""
        u = np.asarray(u, dtype=np.float64)
        if self._log:
            return np.asarray(np.exp(np.log(self.lo) + u * (np.log(self.hi) - np.log(self.lo))))
        return np.asarray(self.lo + u * (self.hi - self.lo))

    def unit_from_values(self, values: Sequence[Any] | NDArray[np.float64]) -> NDArray[np.float64]:
        """Inverse of :meth:`values_from_unit`."""
        x = np.asarray(values, dtype=np.float64)
        if self._log:
            return np.asarray((np.log(x) - np.log(self.lo)) / (np.log(self.hi) - np.log(self.lo)))
        return np.asarray((x - self.lo) / (self.hi - self.lo))

    def describe(self) -> str:
        return f"Real({self.lo!r}, {self.hi!r}, log={self._log})"
