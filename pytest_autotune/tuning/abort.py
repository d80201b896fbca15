"""Abort conditions: when a tuning run stops (pyATF's set, completed).

A condition is a pure object evaluated on a :class:`TuningState` snapshot
that the tuner builds before each suggestion; it keeps no state of its own,
so one condition may be shared by several tuners. Conditions combine with
``&`` (both hold), ``|`` (either holds) and ``~`` (negation).

The tuner always stops when the space is exhausted, whatever the condition.
When no condition is given it uses :data:`DEFAULT_ABORT`
(``Evaluations(100)``): deterministic (a time limit would make seeded runs
depend on the machine), and enough for the classic strategies and the
Bayesian engine to get close to the optimum on the replayed GPU spaces.

Differences from pyATF: ``Speedup`` stops when the improvement over the
window is *below* the factor (pyATF compares the other way round and never
stops while the best value stagnates), ``Duration`` and ``Speedup(duration=)``
read the tuner's clock (which includes the time recorded in a resumed
journal), and every argument is checked when the condition is built.

Besides its condition, a tuner stops when its strategy's model says the search converged
(:func:`converged`): what it still expects to gain, over the budget left, is a small fraction
of the best value.
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from pytest_autotune.space.base import Space

__all__ = [
    "DEFAULT_ABORT",
    "AbortCondition",
    "AbortLike",
    "AllOf",
    "AnyOf",
    "Cost",
    "Duration",
    "Evaluations",
    "Fraction",
    "Improvement",
    "Not",
    "Speedup",
    "TuningState",
    "ValidEvaluations",
    "as_abort",
    "budget_left",
    "converged",
]


@dataclass(frozen=True)
class Improvement:
    """A new best value, and how far the run was when it was found.

    ``value`` is as measured (not negated for maximised objectives).
    """

    evaluations: int
    valid_evaluations: int
    elapsed_s: float
    value: float


@dataclass(frozen=True)
class TuningState:
    """What abort conditions may read: counts, clock, and the improvements so far.

    ``space_size`` is None for spaces with continuous parameters.
    ``improvements`` lists every new best value in the order found.
    """

    evaluations: int
    valid_evaluations: int
    elapsed_s: float
    space_size: int | None
    maximize: bool = False
    improvements: Sequence[Improvement] = field(default_factory=tuple)

    @property
    def best_value(self) -> float | None:
        """The best measured value so far (None before the first feasible one)."""
        return self.improvements[-1].value if self.improvements else None


class AbortCondition(ABC):
    """A stop rule over a :class:`TuningState`; combine with ``&``, ``|``, ``~``."""

    @abstractmethod
    def should_stop(self, state: TuningState) -> bool:
        """True when the tuning run should stop."""

    def progress(self, state: TuningState) -> float | None:
        """Progress towards stopping in [0, 1], or None when it cannot be told."""
        return None

    def check(self, space: Space) -> None:  # noqa: B027 - optional hook
        """Raise a clear error when this condition cannot work on ``space``."""

    def __and__(self, other: AbortLike) -> AbortCondition:
        return AllOf(self, as_abort(other))

    def __rand__(self, other: AbortLike) -> AbortCondition:
        return AllOf(as_abort(other), self)

    def __or__(self, other: AbortLike) -> AbortCondition:
        return AnyOf(self, as_abort(other))

    def __ror__(self, other: AbortLike) -> AbortCondition:
        return AnyOf(as_abort(other), self)

    def __invert__(self) -> AbortCondition:
        return Not(self)


AbortLike: TypeAlias = AbortCondition | int | timedelta


def budget_left(condition: AbortCondition, state: TuningState) -> float:
    """Evaluations the budget still holds, extrapolated from its progress at ``state`` (a time
    budget at the pace so far); 1 when its progress cannot be told, at most what the space has left."""
    progress = condition.progress(state)
    done = state.evaluations
    left = 1.0
    if progress is not None and done > 0:
        left = (
            0.0 if progress >= 1.0 else (math.inf if progress <= 0.0 else done * (1.0 - progress) / progress)
        )
    if state.space_size is not None:
        left = min(left, float(max(state.space_size - done, 0)))
    return left


def converged(expected_gain: float | None, fraction: float, left: float) -> bool:
    """Whether a run has converged: its model's ``expected_gain`` of the next proposal (relative to
    the best value), summed over the ``left`` evaluations of the budget, is below ``fraction``.

    Each later proposal expects no more than the best one now (expected improvement only shrinks as
    the model learns), so the sum bounds what the rest of the budget would find; a ``fraction`` of
    0.01 stops when it is below 1 % of the best value. Never without a gain (no model yet) or with
    ``fraction`` 0.
    """
    if expected_gain is None or fraction <= 0 or not math.isfinite(expected_gain):
        return False
    return expected_gain * left < fraction


def as_abort(value: AbortLike) -> AbortCondition:
    """Normalise an abort argument: an int is a number of evaluations, a timedelta a duration."""
    if isinstance(value, AbortCondition):
        return value
    if isinstance(value, timedelta):
        return Duration(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return Evaluations(int(value))
    raise TypeError(
        f"abort condition: expected an AbortCondition, an int (evaluations) or a timedelta, got {value!r}"
    )


def _positive_int(owner: str, name: str, value: object) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or int(value) < 1:
        raise ValueError(f"{owner}: {name} must be a positive integer, got {value!r}")
    return int(value)


def _number(owner: str, name: str, value: object) -> float:
    """``value`` as a finite float, else a ValueError naming the condition and argument."""
    if not isinstance(value, (int, float, numbers.Real)) or isinstance(value, bool):
        raise ValueError(f"{owner}: {name} must be a finite number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{owner}: {name} must be a finite number, got {value!r}")
    return number


def _seconds(owner: str, value: object) -> float:
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, numbers.Real) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(f"{owner}: expected seconds or a timedelta, got {value!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{owner}: the duration must be positive and finite, got {value!r}")
    return seconds


class Evaluations(AbortCondition):
    """Stop after ``n`` evaluations (failed ones included)."""

    def __init__(self, n: int) -> None:
        self.n = _positive_int("Evaluations", "n", n)

    def should_stop(self, state: TuningState) -> bool:
        return state.evaluations >= self.n

    def progress(self, state: TuningState) -> float:
        return min(1.0, state.evaluations / self.n)

    def __repr__(self) -> str:
        return f"Evaluations({self.n})"


class ValidEvaluations(AbortCondition):
    """Stop after ``n`` evaluations that produced a value."""

    def __init__(self, n: int) -> None:
        self.n = _positive_int("ValidEvaluations", "n", n)

    def should_stop(self, state: TuningState) -> bool:
        return state.valid_evaluations >= self.n

    def progress(self, state: TuningState) -> float:
        return min(1.0, state.valid_evaluations / self.n)

    def __repr__(self) -> str:
        return f"ValidEvaluations({self.n})"


class Duration(AbortCondition):
    """Stop once the run has taken ``seconds`` (a number or a timedelta)."""

    def __init__(self, seconds: float | timedelta) -> None:
        self.seconds = _seconds("Duration", seconds)

    def should_stop(self, state: TuningState) -> bool:
        return state.elapsed_s >= self.seconds

    def progress(self, state: TuningState) -> float:
        return min(1.0, state.elapsed_s / self.seconds)

    def __repr__(self) -> str:
        return f"Duration({self.seconds!r})"


class Fraction(AbortCondition):
    """Stop after evaluating a fraction ``f`` in (0, 1] of the valid configurations."""

    def __init__(self, f: float) -> None:
        self.f: float = _number("Fraction", "f", f)
        if not 0.0 < self.f <= 1.0:
            raise ValueError(f"Fraction: f must be a number in (0, 1], got {f!r}")

    def check(self, space: Space) -> None:
        if space.is_continuous:
            raise ValueError("Fraction: a space with Real parameters has no finite size; use Evaluations")

    def _target(self, state: TuningState) -> float:
        if state.space_size is None:
            raise ValueError("Fraction: a space with Real parameters has no finite size; use Evaluations")
        return max(1.0, self.f * state.space_size)

    def should_stop(self, state: TuningState) -> bool:
        return state.evaluations >= self._target(state)

    def progress(self, state: TuningState) -> float:
        return min(1.0, state.evaluations / self._target(state))

    def __repr__(self) -> str:
        return f"Fraction({self.f!r})"


class Cost(AbortCondition):
    """Stop once the best value reaches ``c`` (<= c when minimising, >= c when maximising)."""

    def __init__(self, c: float) -> None:
        self.c: float = _number("Cost", "c", c)

    def should_stop(self, state: TuningState) -> bool:
        best = state.best_value
        if best is None:
            return False
        return best >= self.c if state.maximize else best <= self.c

    def __repr__(self) -> str:
        return f"Cost({self.c!r})"


class Speedup(AbortCondition):
    """Stop when the best value improved by less than a factor ``s`` over a recent window.

    The window is the last ``evaluations`` (or ``valid_evaluations``)
    evaluations, or the last ``duration`` (seconds or timedelta): exactly one
    must be given. The speedup is old best / new best when minimising (new /
    old when maximising); a window that starts before the first feasible
    value counts as an infinite speedup, and a full window with no feasible
    value at all as no speedup. The condition never holds before the run is
    as long as its window. With values that are not all positive, any
    improvement counts as an infinite speedup.
    """

    def __init__(
        self,
        s: float,
        *,
        evaluations: int | None = None,
        valid_evaluations: int | None = None,
        duration: float | timedelta | None = None,
    ) -> None:
        try:
            self.s: float = _number("Speedup", "s", s)
        except ValueError:
            self.s = 0.0
        if self.s < 1.0:
            raise ValueError(f"Speedup: s must be a finite factor >= 1, got {s!r}")
        windows = {"evaluations": evaluations, "valid_evaluations": valid_evaluations, "duration": duration}
        given = [name for name, value in windows.items() if value is not None]
        if len(given) != 1:
            raise ValueError(
                "Speedup: give exactly one window: evaluations=, valid_evaluations= or duration= "
                f"(got {', '.join(given) or 'none'})"
            )
        self.window_kind: str = given[0]
        if duration is not None:
            self.window: float = _seconds("Speedup", duration)
        else:
            self.window = _positive_int("Speedup", given[0], evaluations or valid_evaluations)

    def _position(self, state: TuningState) -> float:
        if self.window_kind == "evaluations":
            return state.evaluations
        if self.window_kind == "valid_evaluations":
            return state.valid_evaluations
        return state.elapsed_s

    def _improvement_position(self, imp: Improvement) -> float:
        if self.window_kind == "evaluations":
            return imp.evaluations
        if self.window_kind == "valid_evaluations":
            return imp.valid_evaluations
        return imp.elapsed_s

    def should_stop(self, state: TuningState) -> bool:
        now = self._position(state)
        if now < self.window:
            return False
        best = state.best_value
        if best is None:
            return True
        cutoff = now - self.window
        before = [imp for imp in state.improvements if self._improvement_position(imp) <= cutoff]
        if not before:
            return False
        old = before[-1].value
        if old == best:
            return True
        if old <= 0 or best <= 0:
            return False
        speedup = best / old if state.maximize else old / best
        return speedup < self.s

    def __repr__(self) -> str:
        return f"Speedup({self.s!r}, {self.window_kind}={self.window!r})"


class AllOf(AbortCondition):
    """Stop when every condition holds (``a & b``)."""

    def __init__(self, *conditions: AbortCondition) -> None:
        if not conditions:
            raise ValueError("AllOf: needs at least one condition")
        self.conditions = conditions

    def should_stop(self, state: TuningState) -> bool:
        return all(c.should_stop(state) for c in self.conditions)

    def progress(self, state: TuningState) -> float | None:
        parts = [c.progress(state) for c in self.conditions]
        return None if any(p is None for p in parts) else min(p for p in parts if p is not None)

    def check(self, space: Space) -> None:
        for c in self.conditions:
            c.check(space)

    def __repr__(self) -> str:
        return "(" + " & ".join(map(repr, self.conditions)) + ")"


class AnyOf(AbortCondition):
    """Stop when some condition holds (``a | b``)."""

    def __init__(self, *conditions: AbortCondition) -> None:
        if not conditions:
            raise ValueError("AnyOf: needs at least one condition")
        self.conditions = conditions

    def should_stop(self, state: TuningState) -> bool:
        return any(c.should_stop(state) for c in self.conditions)

    def progress(self, state: TuningState) -> float | None:
        parts = [p for p in (c.progress(state) for c in self.conditions) if p is not None]
        return max(parts) if parts else None

    def check(self, space: Space) -> None:
        for c in self.conditions:
            c.check(space)

    def __repr__(self) -> str:
        return "(" + " | ".join(map(repr, self.conditions)) + ")"


class Not(AbortCondition):
    """Stop when the condition does not hold (``~a``)."""

    def __init__(self, condition: AbortCondition) -> None:
        self.condition = condition

    def should_stop(self, state: TuningState) -> bool:
        return not self.condition.should_stop(state)

    def check(self, space: Space) -> None:
        self.condition.check(space)

    def __repr__(self) -> str:
        return f"~{self.condition!r}"


#: Used when a tuner is given no abort condition (see the module docstring).
DEFAULT_ABORT: AbortCondition = Evaluations(100)
