"""Timing: the timer protocol, the default timer, and robust statistics over samples.

A *timer* runs a function once and says how long it took. The default one uses the device time
of what the function returned when a loaded backend can read one (OpenCL: a profiling event or a
list of them; :meth:`pytest_autotune.backends.base.Backend.result_seconds`), else the wall clock
after an optional synchronisation (e.g. ``queue.finish``). Each timed call is also read on the
process's CPU clock (:mod:`pytest_autotune.timing.clock`); :class:`Stats` of the wall times
carries the statistics of the CPU times beside them (:attr:`Stats.cpu`). Tests and simulators replace it by
overriding the ``autotune_timer`` fixture with any object implementing :class:`Timer`; the plugin's
own tests use that to get deterministic timings without hardware.

The regression rule that judges these statistics is :mod:`pytest_autotune.timing.regression`.
Statistics use the standard library only (the plugin stays free of numpy until a test needs it).
"""

from __future__ import annotations

import math
import numbers
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, Protocol

from pytest_autotune.backends.registry import loaded_backends
from pytest_autotune.timing.clock import CPU, Clock, cpu_seconds
from pytest_autotune.timing.regression import robust_spread

__all__ = [
    "MEASURE_REPEAT",
    "TRIAL_REPEAT",
    "DefaultTimer",
    "Stats",
    "Timer",
    "bad_value",
    "device_seconds",
    "least_disturbed",
    "least_disturbed_both",
    "pause_before_remeasuring",
    "round_significant",
    "warm_up",
]

#: Timed calls per ``autotune.measure`` during a tuning trial, unless the test says otherwise.
TRIAL_REPEAT: Final = 5
#: Timed calls per ``autotune.measure`` otherwise (checks, baselines, finalists).
MEASURE_REPEAT: Final = 10


class Timer(Protocol):
    """Runs ``fn`` once and returns ``(fn's result, seconds it took)``.

    ``autotune`` is the test's ``autotune`` fixture: a simulator can read ``autotune.config``,
    ``autotune.device`` and ``autotune.nodeid`` to produce a time without running anything real.
    A timer of real time may also define ``confirmation_pause(attempt) -> float``: the seconds to
    wait before re-measurement ``attempt`` of a suspected regression (see :class:`DefaultTimer`),
    and ``warm_up(fn) -> None``: untimed calls before the timed ones until the device is warm
    (:func:`warm_up`; a GPU timer runs for a time there, as ``do_bench`` does, since the clocks of
    an idle GPU take milliseconds to rise).
    """

    def __call__(self, fn: Callable[[], Any], autotune: Any) -> tuple[Any, float]: ...


def bad_value(value: object, *, positive: bool) -> str | None:
    """Why ``value`` cannot be a measured value, or None when it can.

    A value must be a real number (not a bool, a string or None) and finite; a time
    (``positive=True``) must also be above zero: a negative or zero time would win every
    comparison and become the baseline.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"{value!r} is not a number"
    number = float(value)
    if not math.isfinite(number):
        return f"{value!r} is not a finite number"
    if positive and number <= 0:
        return f"{value!r} is not a positive time in seconds"
    return None


def pause_before_remeasuring(timer: Timer, attempt: int) -> float:
    """Seconds to wait before re-measurement ``attempt`` (1, 2, ...) of the same configuration.

    A timer may define ``confirmation_pause(attempt) -> float``; one without it (a simulator)
    gets no pause.
    """
    pause = getattr(timer, "confirmation_pause", None)
    return float(pause(attempt)) if callable(pause) else 0.0


def warm_up(timer: Timer, fn: Callable[[], Any]) -> None:
    """The timer's own warm-up of ``fn`` (its ``warm_up`` method), if it has one; else nothing."""
    hook = getattr(timer, "warm_up", None)
    if callable(hook):
        hook(fn)


def device_seconds(result: Any) -> float | None:
    """The device time a loaded backend reads from ``result`` (e.g. profiling events), else None.

    Asks only the backends whose device library is already imported, so it never imports one.
    """
    for backend in loaded_backends():
        seconds = backend.result_seconds(result)
        if seconds is not None:
            return seconds
    return None


class DefaultTimer:
    """Device time when ``fn`` returns something a backend can time (events), else wall-clock time.

    ``sync`` runs after ``fn`` inside the wall-clock interval (e.g. ``queue.finish``), so work that
    ``fn`` only enqueued is counted.
    """

    def __init__(self, sync: Callable[[], Any] | None = None) -> None:
        self.sync = sync

    def confirmation_pause(self, attempt: int) -> float:
        """Idle seconds before re-measurement ``attempt``: 0.1, 0.2, 0.4, 0.8, 1.6, then 2.

        Interference with real measurements comes in bursts that idle time ends. On a 2-vCPU VM,
        a memory-bound PoCL kernel measured back to back right after process start ran 2x slower
        in all of six measurements in 19 of 30 fresh processes; with pauses, in none of the first
        three of 30 (the second measurement, 50 ms later, was already fast in most). Some bursts
        last over a second (all kernels of a run 2x slower), hence pauses that double.
        """
        return min(0.1 * 2.0 ** (attempt - 1), 2.0)

    def __call__(self, fn: Callable[[], Any], autotune: Any) -> tuple[Any, float]:
        result, seconds, _ = self.time_both(fn, autotune)
        return result, seconds

    def time_both(self, fn: Callable[[], Any], autotune: Any) -> tuple[Any, float, float]:
        """``(result, device or wall seconds, CPU seconds of this process)`` of one call of ``fn``.

        The CPU clock stops after the device time was read (reading it waits for the events, so
        a kernel that runs in this process's threads, PoCL's ``pthread`` device, is counted).
        """
        cpu_start = cpu_seconds()
        start = time.perf_counter()
        result = fn()
        seconds = device_seconds(result)
        if seconds is None:
            if self.sync is not None:
                self.sync()
            seconds = time.perf_counter() - start
        return result, seconds, cpu_seconds() - cpu_start


def least_disturbed(measurements: Sequence[Stats], maximize: bool = False) -> Stats:
    """The measurement interference hit least: the lowest median (the highest when maximising).

    Interference (other processes, interrupts, clock changes) only makes a kernel slower, so of
    several measurements of the same code the fastest is the best estimate of its speed; comparing
    the least disturbed measurement now with the least disturbed one at baseline time keeps a
    noisy machine from failing unchanged code without hiding real slowdowns.
    """
    if not measurements:
        raise ValueError("no measurements to choose from")
    sign = -1.0 if maximize else 1.0
    return min(measurements, key=lambda stats: sign * stats.median)


def least_disturbed_both(measurements: Sequence[Stats], maximize: bool = False) -> Stats:
    """The least disturbed measurement on each clock: the wall statistics of the least disturbed
    by wall time, carrying the CPU statistics of the least disturbed by CPU time (each clock's
    interference is its own: a burst that slowed one call's wall time need not have cost CPU)."""
    wall = least_disturbed(measurements, maximize)
    cpus = [stats.cpu for stats in measurements if stats.cpu is not None]
    if len(cpus) != len(measurements):
        return replace(wall, cpu=None)
    return replace(wall, cpu=least_disturbed(cpus, maximize))


def round_significant(value: float, digits: int = 6) -> float:
    """``value`` rounded to ``digits`` significant digits (stable, short numbers in autotune.json)."""
    if value == 0 or not math.isfinite(value):
        return value
    return float(f"{value:.{digits}g}")


@dataclass(frozen=True)
class Stats:
    """Summary of a sample of measured values (quartiles by the inclusive method).

    Besides the usual statistics it carries pytest-benchmark's outlier fields: the lowest and
    highest datum within 1.5 IQR of the quartiles, and the counts of values outside 1.5 IQR and
    outside one standard deviation of the mean.
    """

    median: float
    q1: float
    q3: float
    min: float
    max: float
    mean: float
    stddev: float
    rounds: int
    total: float
    ld15iqr: float
    hd15iqr: float
    iqr_outliers: int
    stddev_outliers: int
    #: The statistics of the same calls on the CPU clock (:mod:`pytest_autotune.timing.clock`),
    #: None when the values are not times read by :meth:`Autotune.measure` (``autotune.record``,
    #: another objective) or were measured before the CPU clock was read.
    cpu: Stats | None = None

    def on(self, clock: Clock) -> Stats | None:
        """The statistics on ``clock``: these (``wall``) or :attr:`cpu` (None when not read)."""
        return self.cpu if clock == CPU else self

    @property
    def parallelism(self) -> float | None:
        """Effective parallelism, CPU seconds per wall second of the medians (None without CPU times)."""
        if self.cpu is None or self.median <= 0:
            return None
        return self.cpu.median / self.median

    @property
    def iqr(self) -> float:
        """Interquartile range ``q3 - q1``."""
        return self.q3 - self.q1

    def spread(self, maximize: bool = False) -> float:
        """The noise spread of the regression rule: the IQR measured on the undisturbed half,
        ``2 x (median - q1)`` for times (:func:`pytest_autotune.timing.regression.robust_spread`)."""
        return robust_spread(self.median, self.q1, self.q3, maximize)

    @classmethod
    def of(cls, samples: Sequence[float], cpu: Sequence[float] | None = None) -> Stats:
        """Statistics of ``samples`` (at least one finite value), with those of ``cpu`` (the CPU
        seconds of the same calls, one per sample) as :attr:`cpu` when given and as many."""
        wall = cls._of(samples)
        if cpu is None or len(cpu) != len(samples):
            return wall
        return replace(wall, cpu=cls._of(cpu))

    @classmethod
    def _of(cls, samples: Sequence[float]) -> Stats:
        data = [float(s) for s in samples]
        if not data:
            raise ValueError("no samples to summarise")
        if not all(math.isfinite(x) for x in data):
            raise ValueError(f"samples must be finite numbers, got {data!r}")
        if len(data) >= 2:
            q1, _, q3 = statistics.quantiles(data, n=4, method="inclusive")
            stddev = statistics.stdev(data)
        else:
            q1 = q3 = data[0]
            stddev = 0.0
        mean = statistics.fmean(data)
        low_fence, high_fence = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        return cls(
            median=statistics.median(data),
            q1=q1,
            q3=q3,
            min=min(data),
            max=max(data),
            mean=mean,
            stddev=stddev,
            rounds=len(data),
            total=math.fsum(data),
            ld15iqr=min(x for x in data if x >= low_fence),
            hd15iqr=max(x for x in data if x <= high_fence),
            iqr_outliers=sum(1 for x in data if not low_fence <= x <= high_fence),
            stddev_outliers=sum(1 for x in data if abs(x - mean) > stddev),
        )

    def baseline(self, unit: str) -> dict[str, Any]:
        """The ``baseline`` block of an ``autotune.json`` entry (rounded to 6 significant digits)."""
        return {
            "median": round_significant(self.median),
            "iqr": round_significant(self.iqr),
            "q1": round_significant(self.q1),
            "q3": round_significant(self.q3),
            "min": round_significant(self.min),
            "rounds": self.rounds,
            "unit": unit,
        }

    def to_dict(self) -> dict[str, Any]:
        """All fields plus ``iqr`` as a JSON-able dict (``cpu``: the same for the CPU clock, or None)."""
        return {**asdict(self), "iqr": self.iqr, "cpu": None if self.cpu is None else self.cpu.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stats:
        """Inverse of :meth:`to_dict` (a dict without ``cpu``, written before it existed, has none)."""
        cpu = data.get("cpu")
        fields = {k: v for k, v in data.items() if k not in ("iqr", "cpu")}
        return cls(**fields, cpu=None if cpu is None else cls.from_dict(cpu))
