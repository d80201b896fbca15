"""Moves shared by the classic strategies: walks over valid neighbours, unit-coordinate steps."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import Points, Space
from pytest_autotune.space.params.base import to_python

__all__ = ["UNIT_FLOOR", "Neighbourhood", "from_unit", "mix", "random_walk", "redraw_one", "reflect_unit"]

#: Smallest unit coordinate handed to ``Space.from_unit`` (its domain is (0, 1]).
UNIT_FLOOR = math.ulp(1.0)

_MAX_WALK = 6


class Neighbourhood:
    """``Space.neighbours`` with a memo (a configuration's neighbours never change)."""

    def __init__(self, space: Space, *, limit: int = 20_000) -> None:
        self.space = space
        self.limit = limit
        self._memo: dict[Hashable, Points] = {}

    def __call__(self, point: Points) -> Points:
        key = point.keys()[0]
        found = self._memo.get(key)
        if found is None:
            if len(self._memo) >= self.limit:
                self._memo.clear()
            found = self._memo[key] = self.space.neighbours(point)
        return found


def random_walk(
    neighbours_of: Callable[[Points], Points], start: Points, rng: np.random.Generator, jump: float
) -> Points:
    """End of a random walk from ``start``: one neighbour step, then more with probability ``jump``."""
    point = start
    for _ in range(_MAX_WALK):
        neighbours = neighbours_of(point)
        if len(neighbours) == 0:
            break
        point = neighbours[int(rng.integers(len(neighbours)))]
        if rng.random() >= jump:
            break
    return point


def mix(space: Space, rng: np.random.Generator, sources: list[Points], *, tries: int = 4) -> Points | None:
    """A valid configuration taking each parameter from one of ``sources`` at random (uniform crossover).

    None when the sources are all equal or ``tries`` mixes all break a constraint.
    """
    configs = space.configs(Points.concat(sources))
    if all(c == configs[0] for c in configs[1:]):
        return None
    names = list(configs[0])
    for _ in range(tries):
        picks = rng.integers(len(configs), size=len(names))
        child = {name: configs[int(pick)][name] for name, pick in zip(names, picks, strict=True)}
        if space.contains([child])[0]:
            return space.to_points([child])
    return None


def redraw_one(space: Space, point: Points, rng: np.random.Generator, *, tries: int = 8) -> Points | None:
    """``point`` with one parameter redrawn uniformly from its whole domain (a Hamming move).

    Unlike a neighbour step this can jump anywhere along the parameter; a
    draw that breaks a constraint is retried (None after ``tries``).
    """
    config = space.configs(point)[0]
    names = space.names
    for _ in range(tries):
        name = names[int(rng.integers(len(names)))]
        param = space.params[name]
        if param.is_continuous:
            value: object = float(param.values_from_unit(rng.random(1))[0])
        else:
            if param.size < 2:
                continue
            index = int(rng.integers(param.size))
            value = to_python(param.values(index, index + 1)[0])
        if value == config[name]:
            continue
        candidate = {**config, name: value}
        if space.contains([candidate])[0]:
            return space.to_points([candidate])
    return None


def reflect_unit(u: NDArray[np.float64]) -> NDArray[np.float64]:
    """Fold coordinates back into (0, 1] by reflection at the borders."""
    folded = np.mod(u, 2.0)
    folded = np.where(folded > 1.0, 2.0 - folded, folded)
    return np.clip(folded, UNIT_FLOOR, 1.0)


def from_unit(space: Space, u: NDArray[np.float64]) -> Points:
    """The configuration at unit coordinates ``u`` (one vector), reflected into the domain."""
    return space.from_unit(reflect_unit(np.asarray(u, dtype=np.float64)).reshape(1, -1))
