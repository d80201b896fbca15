"""Evaluating trials with an objective: what it may return, and what becomes of its errors.

The tuner itself never calls user code: :meth:`~pytest_autotune.tuning.tuner.Tuner.ask` and
:meth:`~pytest_autotune.tuning.tuner.Tuner.tell` let a caller (the pytest plugin, one test call per
trial) evaluate however it likes. This module holds the one evaluation loop the library offers
(:meth:`Tuner.run <pytest_autotune.tuning.tuner.Tuner.run>`), and the rule every outcome passes
through: a number is an ``ok`` value unless it is NaN or infinite (a ``runtime`` failure, so a
broken measurement never becomes the best configuration), an :class:`Outcome` is taken as it is,
anything else is a programming error.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Literal, Protocol

from pytest_autotune.outcome import Outcome
from pytest_autotune.space.base import Config
from pytest_autotune.tuning.trials import Trial, TrialRecord, TuningResult

__all__ = ["AskTell", "objective_outcome", "run_objective"]


class AskTell(Protocol):
    """What :func:`run_objective` needs of a tuner."""

    def ask(self) -> Trial | None:
        """The next trial, or None when done."""

    def tell(self, trial: Trial, outcome: Outcome | float, *, seconds: float | None = None) -> TrialRecord:
        """Record the outcome of an asked trial."""

    def cancel(self, trial: Trial) -> None:
        """Forget an asked trial that will not be told."""

    @property
    def result(self) -> TuningResult:
        """The result so far."""


def objective_outcome(value: Outcome | float) -> Outcome:
    """The outcome an objective's return value stands for (see the module docstring)."""
    if isinstance(value, Outcome):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if not math.isfinite(number):
            return Outcome.failed("runtime", f"the objective returned {number!r}")
        return Outcome.ok(number)
    raise TypeError(f"an objective must return a number or an Outcome, got {value!r}")


def run_objective(
    tuner: AskTell,
    objective: Callable[[Config], float | Outcome],
    *,
    errors: Literal["raise", "record"] = "raise",
) -> TuningResult:
    """Evaluate ``tuner``'s trials with ``objective(config)`` until it is done; returns its result.

    ``errors="raise"`` lets an exception from the objective propagate (the trial is cancelled, so a
    resumed run evaluates it); ``"record"`` records it as a ``runtime`` failure and goes on.
    ``KeyboardInterrupt`` always propagates.
    """
    if errors not in ("raise", "record"):
        raise ValueError(f"run: errors must be 'raise' or 'record', not {errors!r}")
    while (trial := tuner.ask()) is not None:
        try:
            returned = objective(trial.config)
        except Exception as exc:
            if errors == "raise":
                tuner.cancel(trial)
                raise
            returned = Outcome.failed("runtime", f"{type(exc).__name__}: {exc}")
        except BaseException:
            tuner.cancel(trial)
            raise
        tuner.tell(trial, returned)
    return tuner.result
