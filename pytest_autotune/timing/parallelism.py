"""The guard of what CPU time cannot see: a kernel that lost its parallelism.

A check on the CPU clock (:mod:`pytest_autotune.timing.clock`) judges the work a kernel did, which
a lost parallel speed-up does not change: a kernel whose work-groups now run on one core consumes
the same CPU seconds while its wall time doubles. So the baseline stores its *effective
parallelism*, CPU seconds per wall second (the median over its fresh processes, each the ratio of
its least disturbed measurements on the two clocks), and the relative spread of that ratio between
its processes (its noise); a check compares the parallelism it measured against it
(:func:`judge_parallelism`):

    dropped  when  current < baseline x (1 - max(DROP, NOISE_K x noise))

Parallelism also drops when the machine is busy (the kernel's threads wait for a core, CPU time
stays, wall time grows), which is the very noise the CPU clock is there to ignore. So the guard
judges only when the machine is quiet enough for the kernel to have had its cores: the load
average over the last minute (:func:`os.getloadavg`), which counts this process's own runnable
threads while it measured, at most ``cores - threads + 1`` where ``threads`` is the baseline's
parallelism rounded up (the ``+ 1``: the measuring process's own share of the load, its Python
thread, whose count the load includes). Otherwise, and for a baseline that was not parallel
(parallelism below :data:`PARALLEL`: nothing to lose), or one measured without CPU times, it says
why it could not judge; the check reports that beside its verdict.

The numbers (a drop of 25%, twice the noise) are a first choice: losing the parallelism of a
kernel that used two cores halves it, while the CPU-to-wall ratio of an unchanged kernel on a quiet
machine moves by a few percent between processes (``python -m benchmarks gate`` reports it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "DROP",
    "NOISE_K",
    "PARALLEL",
    "ParallelismVerdict",
    "judge_parallelism",
    "machine_load",
]

#: The least relative drop of parallelism the guard flags.
DROP: Final = 0.25
#: Multiple of the baseline's parallelism noise that a drop must exceed.
NOISE_K: Final = 2.0
#: Below this parallelism a baseline was not parallel: there is nothing to lose.
PARALLEL: Final = 1.25


def machine_load() -> tuple[float, int] | None:
    """``(load average over the last minute, cores)``, None where the system does not say."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    return load, os.cpu_count() or 1


@dataclass(frozen=True)
class ParallelismVerdict:
    """What the guard found: ``dropped`` (a lost parallel speed-up), ``kept``, or ``unjudged`` with
    the reason in :attr:`message`."""

    state: Literal["dropped", "kept", "unjudged"]
    message: str
    current: float | None = None
    baseline: float | None = None
    limit: float | None = None


def judge_parallelism(
    current: float | None,
    baseline: float | None,
    noise: float | None,
    *,
    load: Callable[[], tuple[float, int] | None] = machine_load,
) -> ParallelismVerdict:
    """Judge the ``current`` parallelism (CPU / wall seconds) against the ``baseline``'s (module
    docstring); ``load`` gives the machine's load and cores (replaced in tests)."""
    if baseline is None or current is None:
        missing = "the baseline" if baseline is None else "this measurement"
        return ParallelismVerdict("unjudged", f"parallelism not judged: {missing} has no CPU time")
    if baseline < PARALLEL:
        return ParallelismVerdict(
            "unjudged", f"parallelism not judged: the baseline ran serially ({baseline:.2f} CPU s per s)"
        )
    measured = load()
    threads = math.ceil(baseline)
    if measured is None:
        return ParallelismVerdict("unjudged", "parallelism not judged: the system gives no load average")
    busy, cores = measured
    if busy > cores - threads + 1:
        return ParallelismVerdict(
            "unjudged",
            f"parallelism not judged: the machine is busy (load {busy:.1f} on {cores} cores; the "
            f"kernel's {threads} threads need it at most {cores - threads + 1})",
        )
    allowed = max(DROP, NOISE_K * (noise or 0.0))
    limit = baseline * (1.0 - allowed)
    text = f"parallelism {current:.2f} CPU s per s vs baseline {baseline:.2f} (limit {limit:.2f})"
    if current < limit:
        return ParallelismVerdict(
            "dropped",
            f"{text}: the kernel lost parallel speed-up, which CPU time cannot see (same work, "
            "fewer cores at once)",
            current,
            baseline,
            limit,
        )
    return ParallelismVerdict("kept", text, current, baseline, limit)
