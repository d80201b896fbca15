"""torch's CUDA events on the current stream, and the L2 flush buffer: the torch backend's event
source for :class:`~pytest_autotune.backends.event_timer.EventTimer` (as ``triton.testing.do_bench``
times: a buffer twice the L2's size, at least 64 MiB, zeroed before each timed call)."""

from __future__ import annotations

from typing import Any

from pytest_autotune.backends.cuda.timing import flush_bytes

__all__ = ["TorchEvents"]


class TorchEvents:
    """Start and end ``torch.cuda.Event`` on ``device``'s current stream."""

    def __init__(self, device: Any) -> None:
        import torch

        self.device = device
        self._torch = torch
        self._start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        self._end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        self._flush: Any = None

    def flush_l2(self) -> None:
        """Zero a buffer twice the L2's size."""
        if self._flush is None:
            l2 = int(getattr(self._torch.cuda.get_device_properties(self.device), "L2_cache_size", 0))
            self._flush = self._torch.empty(flush_bytes(l2), dtype=self._torch.uint8, device=self.device)
        self._flush.zero_()

    def start(self) -> None:
        """Record the start event."""
        self._start.record()

    def stop(self) -> float:
        """Record the end event, wait for it, and return the seconds between the two."""
        self._end.record()
        self._end.synchronize()
        return float(self._start.elapsed_time(self._end)) / 1000.0
