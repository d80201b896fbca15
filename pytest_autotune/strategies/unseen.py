"""Draw a configuration that has not been seen yet, uniformly over the unseen ones.

Used by the random strategy (sampling without replacement), by the other
strategies when they need a fresh start, and by the tuner as its fallback
when a strategy keeps proposing known configurations. Rejection sampling
from :meth:`Space.sample` is uniform over the unseen configurations; when
rejections pile up (most of the space is seen, so the space is small) the
remaining configurations are enumerated through the index bijection.
"""

from __future__ import annotations

from collections.abc import Container, Hashable

import numpy as np

from pytest_autotune.space.base import Points, Space

__all__ = ["ENUMERATION_LIMIT", "draw_unseen", "key_of"]

#: Largest space whose unseen configurations are listed when rejection sampling stalls.
ENUMERATION_LIMIT = 5_000_000

_BATCH = 16
_BATCHES = 4


def key_of(point: Points) -> Hashable:
    """The dedup key of a one-row :class:`Points`."""
    return point.keys()[0]


def draw_unseen(space: Space, rng: np.random.Generator, seen: Container[Hashable]) -> Points | None:
    """A uniformly drawn configuration whose key is not in ``seen``; None when all are seen."""
    for _ in range(_BATCHES):
        batch = space.sample(_BATCH, rng)
        for row, key in enumerate(batch.keys()):
            if key not in seen:
                return batch[row]
    if space.is_continuous:
        return None
    size = space.size
    if size > ENUMERATION_LIMIT:
        return None
    chunk = 65_536
    unseen: list[int] = []
    for start in range(0, size, chunk):
        indices = list(range(start, min(size, start + chunk)))
        keys = space.at_index(indices).keys()
        unseen.extend(i for i, key in zip(indices, keys, strict=True) if key not in seen)
    if not unseen:
        return None
    return space.at_index([unseen[int(rng.integers(len(unseen)))]])
