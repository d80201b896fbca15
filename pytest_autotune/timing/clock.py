"""The clocks a measurement is read on, and which one a regression verdict judges.

Every timed call is read on two clocks: ``wall`` (the device time of the events the body returned,
else the wall clock around the call, as :class:`~pytest_autotune.timing.measure.DefaultTimer`
measures) and ``cpu``, the CPU time the measuring process consumed during the call
(:func:`time.process_time`: every thread of the process; PoCL's ``pthread`` device and numpy run
their kernels in threads of the measuring process, so their work is counted).

Why a second clock: on a shared machine the wall time of a CPU kernel measures the machine as much
as the kernel (other tenants take its cores, its threads wait), while the CPU time it consumed
moves little: CodSpeed's *instrumented* mode counts instructions for the same reason and keeps
*walltime* for dedicated runners, and iai-callgrind counts them under Valgrind. Process CPU time is
the cheap cousin of instruction counts, available everywhere, without an emulator. It is not
noise-free: caches, frequency scaling and the other tenants' pressure on the memory bus still
move it, which is why the baseline is still measured in many fresh processes (as pyperf does) and
its tolerance derived from the spread between them (Kalibera and Jones, "Rigorous benchmarking
in reasonable time": the variation between processes is the one that matters).

What CPU time cannot see:

* **parallel speed-up**: a kernel that lost its parallelism (a work-group size that now runs on
  one core) consumes the same CPU time while its wall time doubles. So tuning still ranks by
  device/wall time (the objective is unchanged), and a check on the ``cpu`` clock adds a guard:
  the effective parallelism (CPU seconds / wall seconds) against the baseline's, judged only when
  the machine is quiet enough (:mod:`pytest_autotune.timing.parallelism`);
* **time spent waiting** (I/O, a device other than the CPU): the CPU time of a GPU test is the
  host's launch overhead and its waiting, never the kernel; so ``auto`` uses CPU time only for CPU
  devices, and ``cpu`` on another device is refused for that test with a warning
  (:func:`resolve_clock`).

A timer reads both clocks by defining ``time_both(fn, autotune) -> (result, wall, cpu)``: the
default timer does, and so do the fake timers of :mod:`pytest_autotune.testing`, which report a
CPU time computed like their wall time. Any other timer (a simulator, a user's own) reports no CPU
time, since the time it reports need not be the work this process did: its tests are judged on
``wall`` whatever the clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar

__all__ = [
    "CHOICES",
    "CLOCKS",
    "CPU",
    "WALL",
    "Clock",
    "ClockChoice",
    "check_choice",
    "cpu_seconds",
    "on_clock",
    "read_clocks",
    "resolve_clock",
]

#: The clocks a measurement is read on.
Clock = Literal["wall", "cpu"]
#: What ``--autotune-clock`` accepts.
ClockChoice = Literal["auto", "wall", "cpu"]

WALL: Final[Clock] = "wall"
CPU: Final[Clock] = "cpu"
CLOCKS: Final[tuple[Clock, ...]] = (WALL, CPU)
CHOICES: Final[tuple[ClockChoice, ...]] = ("auto", WALL, CPU)


def cpu_seconds() -> float:
    """The CPU time this process consumed so far, all threads, user and system (seconds)."""
    return time.process_time()


def check_choice(value: object) -> ClockChoice:
    """``value`` when it is one of :data:`CHOICES`, else :class:`ValueError` listing them."""
    if value not in CHOICES:
        raise ValueError(f"expected one of {', '.join(CHOICES)}, got {value!r}")
    return value


def resolve_clock(choice: ClockChoice, device_is_cpu: bool) -> tuple[Clock, str | None]:
    """The clock that judges a test on its device, and why not the one asked for (None when it is).

    ``auto``: ``cpu`` on a CPU device, ``wall`` (device or wall time) on any other. ``cpu`` on a
    device that is not the CPU judges on ``wall`` and says why: the process's CPU time there is
    the host waiting for the device, not the kernel's work.
    """
    if choice == "auto":
        return (CPU if device_is_cpu else WALL), None
    if choice == CPU and not device_is_cpu:
        return WALL, (
            "--autotune-clock=cpu asks for the process's CPU time, but the test's device is not the "
            "CPU (its CPU time would be the host waiting for the device); judged on wall/device time"
        )
    return choice, None


_Measured = TypeVar("_Measured")


def on_clock(measured: _Measured, clock: Clock) -> _Measured | None:
    """A measurement or baseline that carries its CPU clock's part as ``.cpu`` (``Stats``, an entry's
    ``Baseline``), on ``clock``: itself for ``wall``, its ``cpu`` part (None when not read) for ``cpu``."""
    return getattr(measured, "cpu", None) if clock == CPU else measured


def read_clocks(timer: Any, fn: Callable[[], Any], autotune: Any) -> tuple[Any, float, float | None]:
    """Run ``fn`` once with ``timer``: ``(result, wall seconds, CPU seconds)``.

    A timer with ``time_both(fn, autotune)`` answers both; any other
    (``timer(fn, autotune) -> (result, seconds)``) no CPU time (None; module docstring).
    """
    both = getattr(timer, "time_both", None)
    if callable(both):
        result, wall, cpu = both(fn, autotune)
        return result, wall, cpu
    result, wall = timer(fn, autotune)
    return result, wall, None
