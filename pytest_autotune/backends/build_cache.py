"""A bounded, thread-safe build cache with hit and miss counters, shared by the compiling backends.

Tuning builds each configuration about once and re-measuring the finalists builds a few again, so
a small least-recently-used cache serves the repeats. The OpenCL backend keeps one per context (its
programs die with their context), the CUDA backend one per process; both report
:class:`BuildCacheInfo`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["BuildCacheInfo", "CountingLRU"]

V = TypeVar("V")


@dataclass(frozen=True)
class BuildCacheInfo:
    """Counters of a build cache."""

    hits: int
    misses: int
    size: int
    capacity: int


class CountingLRU(Generic[V]):
    """At most ``capacity`` values by key, the least recently used dropped first; counts hits and misses."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.hits = self.misses = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, V] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        """The value under ``key`` (now the most recently used), None when absent."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found

    def put(self, key: Hashable, value: V) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used beyond the capacity."""
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)

    def info(self) -> BuildCacheInfo:
        """The counters and the size now."""
        with self._lock:
            return BuildCacheInfo(self.hits, self.misses, len(self._entries), self.capacity)

    def clear(self) -> None:
        """Forget every value and reset the counters."""
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0
