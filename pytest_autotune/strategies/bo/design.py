"""Initial design: a Latin hypercube over the space's unit coordinates.

Coordinates come from scipy's scrambled Latin hypercube and are mapped to
valid configurations by :meth:`Space.from_unit` (coordinate ``i`` picks
parameter ``i`` among the values valid given the earlier ones), so the
design spreads over the valid set rather than over the raw product.
Duplicates (several cells mapping to one configuration) are dropped and
replaced by uniform samples.
"""

from __future__ import annotations

from collections.abc import Hashable, Set

import numpy as np
from scipy.stats import qmc

from pytest_autotune.space.base import Points, Space

__all__ = ["default_design_size", "latin_hypercube_design"]


def default_design_size(dimension: int) -> int:
    """Initial design size for ``dimension`` modelled parameters: ``d + 1``, within [4, 10]."""
    return int(min(max(dimension + 1, 4), 10))


def latin_hypercube_design(
    space: Space, n: int, rng: np.random.Generator, *, exclude: Set[Hashable] = frozenset()
) -> Points:
    """Up to ``n`` distinct valid configurations spread over ``space`` (fewer only if it is smaller)."""
    if n <= 0:
        return space.sample(0, rng)
    sampler = qmc.LatinHypercube(d=space.n_dims, rng=rng)
    coords = 1.0 - sampler.random(n)  # (0, 1]: the domain of from_unit
    chosen = _distinct(space.from_unit(coords), exclude, n)
    for _ in range(20):
        if len(chosen) >= n:
            break
        extra = space.sample(4 * n, rng)
        chosen = _distinct(Points.concat([chosen, extra]), exclude, n)
    return chosen


def _distinct(points: Points, exclude: Set[Hashable], limit: int) -> Points:
    seen: set[Hashable] = set()
    rows: list[int] = []
    for i, key in enumerate(points.keys()):
        if key in exclude or key in seen:
            continue
        seen.add(key)
        rows.append(i)
        if len(rows) == limit:
            break
    return points[np.asarray(rows, dtype=np.int64)]
