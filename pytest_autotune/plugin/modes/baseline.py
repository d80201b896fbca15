"""Measuring a baseline as a plain run measures it: in fresh processes, with the noise between them.

A baseline (after tuning, and ``--autotune-update-baseline``) describes what a later plain ``pytest``
measures, so it is measured the same way. A plain run is a fresh process that sets the test up and
calls the body once (and again after pauses while a measurement is in doubt); so
:class:`FreshProcessBaseline` starts :data:`~pytest_autotune.timing.regression.BASELINE_PROCESSES`
fresh pytest processes one after the other (the trial workers of
:mod:`pytest_autotune.plugin.workers.parent`, as baseline workers: the body sees ``autotune.tuning``
False), and in each takes :data:`~pytest_autotune.timing.regression.PROCESS_RUNS` measurements of
:data:`~pytest_autotune.fixture.MEASURE_REPEAT` timed calls, the first right after setup and the
others after the timer's pauses, as a check confirms. Each process's value is its least disturbed
measurement; the baseline is the middle one of them (the median process), and its *noise* is the
spread between them (:func:`~pytest_autotune.timing.regression.between_process_noise`), stored with
it so that the rule can derive the tolerance from it.

No timing taken in the tuning process counts: its state (imports, threads, warm caches, the
allocator's heap after hundreds of trials) is not a plain run's. On a 2-vCPU VM the in-process
baseline of a tuned conv2d kernel was 3.8 ms while plain runs measured 5.2-5.4 ms, three of four
plain runs of unchanged code failed, and a transpose kernel was "faster" in every run.

:class:`InProcessBaseline` is the former way, kept where trials are not isolated
(``--autotune-isolate=none``, non-POSIX systems): the least disturbed of
:data:`~pytest_autotune.timing.regression.BASELINE_RUNS` measurements in this process, with no
noise (the rule then uses its plain tolerance).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pytest_autotune.entry import Baseline
from pytest_autotune.fixture import MEASURE_REPEAT, Autotune
from pytest_autotune.plugin.workers.runner import BodyRun, TrialRunner, run_final
from pytest_autotune.timing.measure import Stats, Timer, least_disturbed, pause_before_remeasuring
from pytest_autotune.timing.regression import (
    BASELINE_PROCESSES,
    BASELINE_RUNS,
    PROCESS_RUNS,
    between_process_noise,
)
from pytest_autotune.tuning.worker import WorkerStartError

if TYPE_CHECKING:
    import pytest

__all__ = [
    "BaselineFailed",
    "BaselineMeter",
    "FreshProcessBaseline",
    "InProcessBaseline",
    "MeasuredBaseline",
    "measure_again",
]


@dataclass(frozen=True)
class MeasuredBaseline:
    """A new baseline: the measurement, and the noise between the processes that measured it
    (both None when one process measured it)."""

    stats: Stats
    noise: float | None = None
    processes: int | None = None

    def to_entry(self, unit: str) -> Baseline:
        """The ``baseline`` of an ``autotune.json`` entry."""
        return Baseline.measured(self.stats, unit, noise=self.noise, processes=self.processes)


class BaselineFailed(Exception):
    """A baseline process could not measure the configuration; the message says which and why."""


class BaselineMeter(Protocol):
    """Measures the baseline of ``config``; ``first`` is a measurement this process already took."""

    def __call__(self, config: dict[str, Any], first: Stats) -> MeasuredBaseline: ...


def measure_again(
    item: pytest.Function, autotune: Autotune, config: dict[str, Any], attempt: int
) -> Stats | None:
    """Re-measurement ``attempt`` (1, 2, ...) in this process, after the timer's pause (pytest-benchmark
    records only the first call of the test)."""
    pause = pause_before_remeasuring(autotune.timer, attempt)
    if pause > 0:
        time.sleep(pause)
    return run_final(item, autotune, config, repeat=MEASURE_REPEAT, benchmark=False).stats


@dataclass(frozen=True)
class InProcessBaseline:
    """The least disturbed of ``first`` and :data:`BASELINE_RUNS` - 1 more measurements in this process."""

    item: pytest.Function
    autotune: Autotune
    maximize: bool

    def __call__(self, config: dict[str, Any], first: Stats) -> MeasuredBaseline:
        """Measure (module docstring)."""
        again = (measure_again(self.item, self.autotune, config, n) for n in range(1, BASELINE_RUNS))
        return MeasuredBaseline(least_disturbed([first, *(s for s in again if s is not None)], self.maximize))


@dataclass(frozen=True)
class FreshProcessBaseline:
    """The median of ``processes`` fresh processes, each the least disturbed of ``runs`` measurements.

    ``open_worker()`` starts one baseline worker (a context manager that is a
    :class:`~pytest_autotune.plugin.workers.runner.TrialRunner`; leaving it stops the process); ``timer``
    gives the pauses between a process's measurements. ``first`` is not used: timings of this
    process never make a baseline.
    """

    open_worker: Callable[[], AbstractContextManager[TrialRunner]]
    timer: Timer
    maximize: bool
    processes: int = BASELINE_PROCESSES
    runs: int = PROCESS_RUNS

    def __call__(self, config: dict[str, Any], first: Stats) -> MeasuredBaseline:
        """Measure (module docstring); raises :class:`BaselineFailed` when a process fails to."""
        values = [self._one_process(config, number) for number in range(1, self.processes + 1)]
        sign = -1.0 if self.maximize else 1.0
        ordered = sorted(values, key=lambda stats: sign * stats.median)
        noise = between_process_noise([stats.median for stats in values])
        return MeasuredBaseline(ordered[len(ordered) // 2], noise, len(values))

    def _one_process(self, config: dict[str, Any], number: int) -> Stats:
        where = f"measuring the baseline in fresh process {number} of {self.processes}"
        measured: list[Stats] = []
        try:
            with self.open_worker() as trials:
                for attempt in range(self.runs):
                    pause = pause_before_remeasuring(self.timer, attempt) if attempt else 0.0
                    if pause > 0:
                        time.sleep(pause)
                    run: BodyRun = trials(config, MEASURE_REPEAT)
                    if run.stats is None or run.label != "ok":
                        what = (
                            "measured nothing" if run.label == "ok" else f"failed ({run.label}): {run.detail}"
                        )
                        raise BaselineFailed(f"{where}: the configuration {config} {what}")
                    measured.append(run.stats)
        except WorkerStartError as exc:
            raise BaselineFailed(f"{where}: the baseline worker did not start: {exc}") from None
        return least_disturbed(measured, self.maximize)
