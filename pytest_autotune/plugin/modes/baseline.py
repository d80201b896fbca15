"""Measuring a baseline as a plain run measures it: in fresh processes, with the noise between them.

A baseline (after tuning, and ``--autotune-update-baseline``) describes what a later plain ``pytest``
measures, so it is measured the same way. A plain run is a fresh process that sets the test up and
calls the body once (and again after pauses while a measurement is in doubt); so
:class:`FreshProcessBaseline` starts :data:`~pytest_autotune.timing.regression.BASELINE_MIN_PROCESSES`
fresh pytest processes (the trial workers of :mod:`pytest_autotune.plugin.workers.parent`, as
baseline workers: the body sees ``autotune.tuning`` False), lets them set the test up side by side,
and then, one process at a time while the others idle, takes in each
:data:`~pytest_autotune.timing.regression.PROCESS_RUNS` measurements of
:data:`~pytest_autotune.fixture.MEASURE_REPEAT` timed calls, the first as its first call of the body
and the others after the timer's pauses, as a check confirms. Each process's value is its least disturbed
measurement; the baseline is the middle one of them (the median process), and its *noise* is the
spread between them (:func:`~pytest_autotune.timing.regression.between_process_noise`), stored with
it so that the rule can derive the tolerance from it. Each clock (:mod:`pytest_autotune.timing.clock`)
gets its own: the CPU clock's baseline is the middle process by CPU time and its noise the spread of
their CPU times, so that a run judges on either clock without re-measuring; the processes' effective
parallelism (CPU per wall second) and its spread are stored with it
(:mod:`pytest_autotune.timing.parallelism`). Further processes, one at a time up to
:data:`~pytest_autotune.timing.regression.BASELINE_PROCESSES`, are started only while the noise
of the clock a check judges on by default (CPU time where every process read it, else wall time)
could still widen the tolerance (:func:`~pytest_autotune.timing.regression.baseline_decided`, like
the compare gate's sequential looks): a steady kernel stops at the minimum.

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

import contextlib
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from pytest_autotune.entry import Baseline
from pytest_autotune.fixture import MEASURE_REPEAT, Autotune
from pytest_autotune.plugin.workers.runner import BodyRun, TrialRunner, run_final
from pytest_autotune.timing.clock import Clock
from pytest_autotune.timing.measure import (
    Stats,
    Timer,
    least_disturbed_both,
    pause_before_remeasuring,
    round_significant,
)
from pytest_autotune.timing.regression import (
    BASELINE_MIN_PROCESSES,
    BASELINE_PROCESSES,
    BASELINE_RUNS,
    PROCESS_RUNS,
    Rule,
    baseline_decided,
    between_process_noise,
)
from pytest_autotune.tuning.process.worker import WorkerStartError

if TYPE_CHECKING:
    import pytest

__all__ = [
    "BaselineFailed",
    "BaselineMeter",
    "BaselineWorker",
    "FreshProcessBaseline",
    "InProcessBaseline",
    "MeasuredBaseline",
    "measure_again",
]


@dataclass(frozen=True)
class MeasuredBaseline:
    """A new baseline: the measurement, and the noise between the processes that measured it
    (both None when one process measured it); ``stats.cpu`` is the CPU clock's baseline with its
    own ``cpu_noise``, and ``parallelism`` (with its noise) the CPU per wall second of the processes."""

    stats: Stats
    noise: float | None = None
    processes: int | None = None
    cpu_noise: float | None = None
    parallelism: float | None = None
    parallelism_noise: float | None = None

    @classmethod
    def of_processes(cls, values: list[Stats], maximize: bool) -> MeasuredBaseline:
        """The middle process on each clock, and the noise between them on each
        (:func:`~pytest_autotune.timing.regression.between_process_noise`)."""
        sign = -1.0 if maximize else 1.0
        wall = sorted(values, key=lambda stats: sign * stats.median)[len(values) // 2]
        noise = between_process_noise([stats.median for stats in values])
        cpus = [stats.cpu for stats in values if stats.cpu is not None]
        ratios = [stats.parallelism for stats in values if stats.parallelism is not None]
        if len(cpus) != len(values) or len(ratios) != len(values):
            return cls(replace(wall, cpu=None), noise, len(values))
        cpu = sorted(cpus, key=lambda stats: sign * stats.median)[len(cpus) // 2]
        cpu_noise = between_process_noise([stats.median for stats in cpus])
        parallelism, spread = statistics.median(ratios), between_process_noise(ratios)
        return cls(replace(wall, cpu=cpu), noise, len(values), cpu_noise, parallelism, spread)

    def to_entry(self, unit: str, clock: Clock | None = None) -> Baseline:
        """The ``baseline`` of an ``autotune.json`` entry (``clock``: the one the run judged on)."""
        wall = Baseline.measured(self.stats, unit, noise=self.noise, processes=self.processes)
        if self.stats.cpu is None:
            return replace(wall, clock=clock)
        cpu = Baseline.measured(self.stats.cpu, unit, noise=self.cpu_noise, processes=self.processes)
        parallelism = self.parallelism if self.parallelism is not None else self.stats.parallelism
        cpu = replace(
            cpu,
            parallelism=None if parallelism is None else round_significant(parallelism, 4),
            parallelism_noise=None
            if self.parallelism_noise is None
            else round_significant(self.parallelism_noise, 4),
        )
        return replace(wall, clock=clock, cpu=cpu)


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
        measured = [first, *(s for s in again if s is not None)]
        return MeasuredBaseline(least_disturbed_both(measured, self.maximize))


class BaselineWorker(TrialRunner, Protocol):
    """A baseline worker: a trial runner whose process can be started ahead of its first trial
    (:class:`~pytest_autotune.plugin.workers.parent.IsolatedTrials` in the ``baseline`` role)."""

    def launch(self) -> None:
        """Start the process now, without waiting for it to set the test up."""

    def wait_ready(self) -> None:
        """Wait until the process set the test up; raises ``WorkerStartError`` when it cannot."""

    def close(self) -> None:
        """Stop the process (idempotent)."""


@dataclass(frozen=True)
class FreshProcessBaseline:
    """The median of ``processes`` fresh processes, each the least disturbed of ``runs`` measurements.

    ``processes`` start first (:data:`BASELINE_MIN_PROCESSES`); then one more process at a time, up
    to ``most``, while their noise could still change ``rule``'s tolerance
    (:func:`~pytest_autotune.timing.regression.baseline_decided`). ``open_worker()`` gives one
    baseline worker (a context manager that is a :class:`BaselineWorker`; leaving it stops the
    process); ``timer`` gives the pauses between a process's measurements.
    ``first`` is not used: timings of this process never make a baseline.

    The first processes start together and set the test up side by side; only once all are ready
    does the first one measure, and each measures alone, the others idle, and stops before the next one
    measures. Starting them one after the other, each as the previous one stopped, measured the same
    way but waited for every start in turn: about 2 s of CPU each (a fresh pytest collecting the
    test file and creating its fixtures), 40 of them in the main job.
    """

    open_worker: Callable[[], AbstractContextManager[BaselineWorker]]
    timer: Timer
    maximize: bool
    processes: int = BASELINE_MIN_PROCESSES
    runs: int = PROCESS_RUNS
    rule: Rule | None = None
    most: int = BASELINE_PROCESSES

    def __call__(self, config: dict[str, Any], first: Stats) -> MeasuredBaseline:
        """Measure (class and module docstrings); raises :class:`BaselineFailed` when a process fails to."""
        values: list[Stats] = []
        with contextlib.ExitStack() as running:  # an error stops (kills) every process still up
            batch = self.processes
            while batch:
                workers = [running.enter_context(self.open_worker()) for _ in range(batch)]
                self._start(workers, len(values) + 1)
                for number, worker in enumerate(workers, len(values) + 1):
                    values.append(self._one_process(worker, config, number))
                    worker.close()  # its teardown ends before the next process measures
                decided = baseline_decided(_deciding_medians(values), self.rule)
                batch = 0 if len(values) >= self.most or decided else 1
        return MeasuredBaseline.of_processes(values, self.maximize)

    def _start(self, workers: list[BaselineWorker], first_number: int) -> None:
        """Launch ``workers`` together and wait until each has set the test up."""
        for worker in workers:
            worker.launch()
        for number, worker in enumerate(workers, first_number):
            try:
                worker.wait_ready()
            except WorkerStartError as exc:
                raise BaselineFailed(
                    f"{self._where(number)}: the baseline worker did not start: {exc}"
                ) from None

    def _where(self, number: int) -> str:
        return f"measuring the baseline in fresh process {number} of at most {self.most}"

    def _one_process(self, trials: TrialRunner, config: dict[str, Any], number: int) -> Stats:
        measured: list[Stats] = []
        for attempt in range(self.runs):
            pause = pause_before_remeasuring(self.timer, attempt) if attempt else 0.0
            if pause > 0:
                time.sleep(pause)
            run: BodyRun = trials(config, MEASURE_REPEAT)
            if run.stats is None or run.label != "ok":
                what = "measured nothing" if run.label == "ok" else f"failed ({run.label}): {run.detail}"
                raise BaselineFailed(f"{self._where(number)}: the configuration {config} {what}")
            measured.append(run.stats)
        return least_disturbed_both(measured, self.maximize)


def _deciding_medians(values: list[Stats]) -> list[float]:
    """The processes' medians on the clock a check judges on by default: CPU time where every
    process read it (a CPU device), else wall (or device) time."""
    cpus = [stats.cpu.median for stats in values if stats.cpu is not None]
    return cpus if len(cpus) == len(values) else [stats.median for stats in values]
