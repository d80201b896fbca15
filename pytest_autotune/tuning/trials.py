"""The tuner's records: a trial to evaluate, a finished trial, and the result of a run.

Plain values, kept apart from the loop that makes them (:mod:`pytest_autotune.tuning.tuner`), so
that code which only reads them (the plugin's tune mode and reports, the strategy conformance
suite) depends on these types and not on the loop and the strategies it builds.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_autotune.outcome import Label, Outcome
from pytest_autotune.space.base import Config, Points

__all__ = ["Trial", "TrialRecord", "TuningResult"]


@dataclass(frozen=True)
class Trial:
    """A configuration to evaluate: ``number`` (0-based), ``config`` and its ``point`` (one row)."""

    number: int
    config: Config
    point: Points


@dataclass(frozen=True)
class TrialRecord:
    """A completed trial: outcome as measured, seconds spent evaluating and suggesting it."""

    number: int
    config: Config
    outcome: Outcome
    eval_seconds: float
    suggest_seconds: float
    resumed: bool = False


@dataclass
class TuningResult:
    """The best configuration so far and everything that led to it.

    ``best_value`` is as measured; ``counts`` has every label (zeros
    included); ``duration_s`` includes time recorded for resumed trials;
    ``space_size`` is None for spaces with continuous parameters.
    """

    best_config: Config | None
    best_value: float | None
    history: list[TrialRecord]
    counts: dict[Label, int]
    evaluations: int
    duration_s: float
    strategy: str
    seed: int
    space_size: int | None
    maximize: bool = False
    exhausted: bool = False
    resumed: int = 0
    diverged: int = 0
    #: The run stopped before its budget because its model expected too little of the rest.
    converged: bool = False

    @property
    def feasible(self) -> bool:
        """True when some configuration produced a value."""
        return self.best_value is not None

    def top(self, k: int) -> list[TrialRecord]:
        """The ``k`` best feasible trials, best first (ties keep trial order)."""
        if k < 0:
            raise ValueError(f"top: k must be >= 0, got {k}")
        feasible = [r for r in self.history if r.outcome.value is not None]
        sign = -1.0 if self.maximize else 1.0
        feasible.sort(key=lambda r: sign * (r.outcome.value or 0.0))
        return feasible[:k]
