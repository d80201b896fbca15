"""Timing with GPU events, with an optional L2 flush before each timed call (as ``do_bench``).

:class:`EventTimer` is a :class:`~pytest_autotune.timing.measure.Timer` for any device whose
library has events on a stream: it optionally overwrites a buffer larger than the L2 cache (so a
call does not find its inputs left in the cache by the previous one, as
``triton.testing.do_bench`` does), records a start event, calls the function, records an end
event, waits for it, and returns the time between the two events: the device time of what the
function enqueued, without the launch overhead of the host. Before the timed calls of a
measurement it warms the device up for :data:`WARM_UP_SECONDS` of device time (``warm_up``), as
``do_bench`` does with its 25 ms: an idle GPU's clocks take milliseconds to rise, and on the H200
one configuration of the Triton matmul measured 0.198 to 0.240 ms across runs that warmed up with
two calls only. The device work comes from an
:class:`EventSource` (the CUDA backend's driver events, the torch backend's ``torch.cuda.Event``),
so this module imports nothing and is tested with a fake source.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final, Protocol

__all__ = ["WARM_UP_CALLS", "WARM_UP_SECONDS", "EventSource", "EventTimer"]

#: Device seconds of untimed calls before a measurement's timed ones (``do_bench``: 25 ms).
WARM_UP_SECONDS: Final = 0.025
#: Most untimed calls of one warm-up (for very short calls), and its wall-clock limit in seconds.
WARM_UP_CALLS: Final = 1000
_WARM_UP_WALL: Final = 1.0


class EventSource(Protocol):
    """The device side of :class:`EventTimer`."""

    def flush_l2(self) -> None:
        """Enqueue a write over a buffer larger than the L2 cache."""

    def start(self) -> None:
        """Record the start event on the timed stream."""

    def stop(self) -> float:
        """Record the end event, wait for it, and return the seconds since the start event."""


class EventTimer:
    """Device time between events around the timed call; ``flush_l2`` flushes the L2 before it."""

    def __init__(
        self, events: EventSource, *, flush_l2: bool = True, warm_up_seconds: float = WARM_UP_SECONDS
    ) -> None:
        self.events = events
        self.flush_l2 = flush_l2
        self.warm_up_seconds = float(warm_up_seconds)

    def warm_up(self, fn: Callable[[], Any]) -> None:
        """Call ``fn`` untimed until it has kept the device busy for ``warm_up_seconds`` (at most
        :data:`WARM_UP_CALLS` calls or a second of wall time): the clocks are up when timing starts."""
        busy, calls, began = 0.0, 0, time.perf_counter()
        while busy < self.warm_up_seconds and calls < WARM_UP_CALLS:
            self.events.start()
            fn()
            busy += self.events.stop()
            calls += 1
            if time.perf_counter() - began > _WARM_UP_WALL:
                break

    def confirmation_pause(self, attempt: int) -> float:
        """Idle seconds before re-measurement ``attempt`` of a suspected regression (clocks settle)."""
        return min(0.05 * 2.0 ** (attempt - 1), 1.0)

    def __call__(self, fn: Callable[[], Any], autotune: Any) -> tuple[Any, float]:
        if self.flush_l2:
            self.events.flush_l2()
        self.events.start()
        result = fn()
        return result, self.events.stop()

    def __repr__(self) -> str:
        return f"EventTimer({type(self.events).__name__}, flush_l2={self.flush_l2})"
