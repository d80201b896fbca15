"""CUDA driver events on a stream, and the L2 flush buffer: the CUDA backend's event source.

An :class:`~pytest_autotune.backends.event_timer.EventTimer` over :class:`DriverEvents` times what
a test's function enqueues on the device's stream. The flush buffer is twice the device's L2
cache (at least 64 MiB), allocated once per process and overwritten with ``cuMemsetD8Async``.
"""

from __future__ import annotations

from typing import Any, Final

from pytest_autotune.backends.cuda import driver
from pytest_autotune.backends.cuda.device import CudaDevice, DeviceArray

__all__ = ["DriverEvents", "flush_bytes"]

_MIN_FLUSH: Final = 64 << 20


def flush_bytes(l2_bytes: int) -> int:
    """The size of the buffer that flushes an L2 cache of ``l2_bytes``."""
    return max(2 * int(l2_bytes), _MIN_FLUSH)


class DriverEvents:
    """Start and end events on ``device.stream``; ``flush_l2`` overwrites the flush buffer."""

    def __init__(self, device: CudaDevice) -> None:
        self.device = device
        self._start = driver.call("cuEventCreate", 0)
        self._end = driver.call("cuEventCreate", 0)
        self._flush: DeviceArray | None = None

    def flush_l2(self) -> None:
        """Overwrite a buffer twice the L2's size on the stream."""
        if self._flush is None:
            size = flush_bytes(self.device.info.l2_bytes)
            self._flush = DeviceArray(size, (size,), "uint8")
        driver.call("cuMemsetD8Async", self._flush.ptr, 0, self._flush.nbytes, self.device.stream)

    def start(self) -> None:
        """Record the start event."""
        driver.call("cuEventRecord", self._start, self.device.stream)

    def stop(self) -> float:
        """Record the end event, wait for it, and return the seconds between the two."""
        driver.call("cuEventRecord", self._end, self.device.stream)
        driver.call("cuEventSynchronize", self._end, what="(a timed launch)")
        milliseconds: Any = driver.call("cuEventElapsedTime", self._start, self._end)
        return float(milliseconds) / 1000.0
