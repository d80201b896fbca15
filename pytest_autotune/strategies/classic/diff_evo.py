"""Differential evolution over the space's unit coordinates (pyATF's coordinate space).

Each member of the population is a vector in (0, 1]^n; ``Space.from_unit``
maps it to a valid configuration (coordinate ``i`` picks parameter ``i``
among the values valid given the earlier ones), so every trial is valid.
Trial vectors follow DE/current-to-best/1/bin: ``x_i + F (x_best - x_i) +
F (x_r1 - x_r2)`` with binomial crossover, reflected at the borders. A
trial whose configuration was already told is judged on its recorded
value without asking for an evaluation; a trial that keeps landing on seen
configurations is replaced by a uniformly drawn unseen one.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies.archive import ArchiveStrategy
from pytest_autotune.strategies.classic.moves import from_unit
from pytest_autotune.strategies.options import check_int, check_real
from pytest_autotune.strategies.unseen import key_of

__all__ = ["DifferentialEvolution"]

_TRIAL_TRIES = 16


class DifferentialEvolution(ArchiveStrategy):
    """DE/current-to-best/1/bin on unit coordinates (see the module docstring)."""

    name: ClassVar[str] = "diff_evo"

    def __init__(
        self,
        space: Space,
        *,
        rng: np.random.Generator,
        population: int = 12,
        f: float = 0.6,
        cr: float = 0.5,
    ) -> None:
        super().__init__(space, rng=rng)
        self.population = check_int(self.name, "population", population, lo=4)
        self.f = check_real(self.name, "f", f, lo=0.0, hi=2.0, open_lo=True)
        self.cr = check_real(self.name, "cr", cr, lo=0.0, hi=1.0)
        self._vectors: list[NDArray[np.float64]] = []
        self._values: list[float] = []
        self._target = 0
        self._pending: dict[Hashable, tuple[int, NDArray[np.float64]]] = {}

    def ask(self) -> Points:
        if len(self._vectors) + len(self._pending) < self.population:
            point = self.unseen()
            self._pending[key_of(point)] = (-1, self.space.to_unit(point)[0])
            return self.archive.propose(point)
        if len(self._vectors) < 4:
            return self.archive.propose(self.unseen())
        for _ in range(_TRIAL_TRIES):
            target = self._target
            self._target = (self._target + 1) % len(self._vectors)
            vector = self._trial_vector(target)
            point = from_unit(self.space, vector)
            key = key_of(point)
            known = self.archive.values.get(key)
            if known is not None:
                self._select(target, vector, known)
                continue
            if key not in self.archive:
                self._pending[key] = (target, vector)
                return self.archive.propose(point)
        point = self.unseen()
        self._pending[key_of(point)] = (self._target, self.space.to_unit(point)[0])
        return self.archive.propose(point)

    def _trial_vector(self, target: int) -> NDArray[np.float64]:
        n = len(self._vectors)
        others = [i for i in range(n) if i != target]
        r1, r2 = (others[int(i)] for i in self.rng.choice(len(others), size=2, replace=False))
        best = int(np.argmin(self._values))
        x = self._vectors[target]
        mutant = x + self.f * (self._vectors[best] - x) + self.f * (self._vectors[r1] - self._vectors[r2])
        mask: NDArray[np.bool_] = np.less(self.rng.random(x.shape[0]), self.cr)
        mask[int(self.rng.integers(x.shape[0]))] = True
        return np.where(mask, mutant, x)

    def _select(self, target: int, vector: NDArray[np.float64], value: float) -> None:
        if target < 0 or target >= len(self._vectors):
            self._vectors.append(vector)
            self._values.append(value)
        elif value <= self._values[target] or math.isinf(self._values[target]):
            self._vectors[target] = vector
            self._values[target] = value

    def learn(self, point: Points, value: float) -> None:
        entry = self._pending.pop(key_of(point), None)
        if entry is not None:
            self._select(entry[0], entry[1], value)
