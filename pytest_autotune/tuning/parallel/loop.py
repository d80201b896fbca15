"""One tuning run's trials on several devices at once: keep every slot of an executor busy.

:func:`run_parallel` is the parallel counterpart of the sequential loop
(:func:`~pytest_autotune.tuning.evaluation.run_objective`): it asks the tuner for a trial whenever a
slot of the :class:`~pytest_autotune.tuning.parallel.executor.TrialExecutor` is free, and tells the tuner each
outcome as soon as its trial finishes, in completion order. Nothing else changes, because the tuner
already allows several outstanding trials:

* the strategy is told which configurations are under way before each suggestion
  (:meth:`~pytest_autotune.strategies.base.Strategy.pending`), so it proposes new ones;
* the abort conditions count outstanding trials when deciding whether to ask for another (an
  evaluation budget of 100 starts exactly 100 trials) and every started trial is told;
* the journal records each trial under its own number as it finishes, so a resume replays trials
  that finished out of order; a trial still running when the run is interrupted is cancelled, not
  journaled, and runs again on resume.

``outcome_of(trial, result)`` turns an executor's result into the trial's
:class:`~pytest_autotune.outcome.Outcome` (it may raise to end the run); ``on_told(record)`` sees
each told trial. An exception from either, or a runner's exception (:attr:`Finished.error`), cancels
the trials still running and propagates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pytest_autotune.outcome import Outcome
from pytest_autotune.tuning.evaluation import AskTell
from pytest_autotune.tuning.parallel.executor import TrialExecutor
from pytest_autotune.tuning.trials import Trial, TrialRecord, TuningResult

__all__ = ["run_parallel"]

R = TypeVar("R")


def run_parallel(
    tuner: AskTell,
    executor: TrialExecutor[R],
    outcome_of: Callable[[Trial, R], Outcome | float],
    on_told: Callable[[TrialRecord], None] | None = None,
) -> TuningResult:
    """Evaluate ``tuner``'s trials on ``executor``'s slots until it is done; returns its result."""
    running: dict[int, Trial] = {}
    try:
        while True:
            free = executor.free()
            while free:
                trial = tuner.ask()
                if trial is None:
                    break
                executor.submit(free.pop(0), trial.number, trial.config)
                running[trial.number] = trial
            if not running:
                return tuner.result
            for done in executor.wait():
                trial = running.pop(done.ticket)
                if done.error is not None:
                    tuner.cancel(trial)
                    raise done.error
                try:
                    outcome = outcome_of(trial, done.result)  # type: ignore[arg-type]
                except BaseException:
                    tuner.cancel(trial)
                    raise
                record = tuner.tell(trial, outcome)
                if on_told is not None:
                    on_told(record)
    finally:
        for trial in running.values():
            tuner.cancel(trial)
