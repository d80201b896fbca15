"""Simulated annealing over the space's valid neighbours.

A move is a short random walk in the neighbour graph (change one parameter
to a neighbouring valid value, then with probability ``jump`` one more
step, and so on), ending on a configuration not seen yet. A worse move is
accepted with probability ``exp(-relative worsening / T)``; failures are
never accepted once a feasible configuration is current. The temperature
falls geometrically from ``t_start`` to ``t_end`` over ``cycle`` of the
strategy's own evaluations, then the walk is reheated from the best
configuration found (the schedule does not need to know the budget, which
the tuner's abort condition owns). When every configuration around the
current one has been seen, the walk restarts from a uniformly drawn one.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies.archive import ArchiveStrategy
from pytest_autotune.strategies.classic.moves import random_walk
from pytest_autotune.strategies.options import check_int, check_real
from pytest_autotune.strategies.unseen import key_of

__all__ = ["SimulatedAnnealing"]

_WALK_TRIES = 8


class SimulatedAnnealing(ArchiveStrategy):
    """Simulated annealing with reheats from the best configuration (see the module docstring)."""

    name: ClassVar[str] = "anneal"

    def __init__(
        self,
        space: Space,
        *,
        rng: np.random.Generator,
        t_start: float = 0.5,
        t_end: float = 0.005,
        cycle: int = 100,
        jump: float = 0.3,
    ) -> None:
        super().__init__(space, rng=rng)
        self.t_start = check_real(self.name, "t_start", t_start, lo=0.0, hi=1e6, open_lo=True)
        self.t_end = check_real(self.name, "t_end", t_end, lo=0.0, hi=self.t_start, open_lo=True)
        self.cycle = check_int(self.name, "cycle", cycle, lo=1)
        self.jump = check_real(self.name, "jump", jump, lo=0.0, hi=0.95)
        self._current: Points | None = None
        self._current_value = math.inf
        self._pending: Hashable | None = None
        self._steps = 0

    @property
    def temperature(self) -> float:
        """The current temperature (relative worsening accepted with probability 1/e)."""
        phase = (self._steps % self.cycle) / self.cycle
        return float(self.t_start * (self.t_end / self.t_start) ** phase)

    def _move(self) -> Points | None:
        assert self._current is not None
        for _ in range(_WALK_TRIES):
            candidate = random_walk(self.neighbours, self._current, self.rng, self.jump)
            if not self.seen(candidate):
                return candidate
        return self.unseen_neighbour(self._current)

    def ask(self) -> Points:
        point = self._move() if self._current is not None else None
        if point is None:
            point = self.unseen()
        self._pending = key_of(point)
        return self.archive.propose(point)

    def learn(self, point: Points, value: float) -> None:
        if key_of(point) != self._pending:
            return
        self._pending = None
        self._steps += 1
        if self._accept(value):
            self._current, self._current_value = point, value
        if self._steps % self.cycle == 0 and self.archive.best_point is not None:
            self._current, self._current_value = self.archive.best_point, self.archive.best_value

    def _accept(self, value: float) -> bool:
        current = self._current_value
        if self._current is None or not math.isfinite(current):
            return math.isfinite(value) or self._current is None
        if value <= current:
            return True
        if not math.isfinite(value):
            return False
        worsening = (value - current) / max(abs(current), 1e-300)
        return bool(self.rng.random() < math.exp(-worsening / self.temperature))
