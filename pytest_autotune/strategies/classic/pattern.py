"""Pattern search (Hooke-Jeeves style) over the space's unit coordinates.

From a base point the search polls ``base +- step`` along each coordinate
(in random order, through ``Space.from_unit`` so every poll is valid). The
first poll that improves on the base becomes the new base, and the next
poll extrapolates the successful move (the pattern move). When a whole
round of polls fails to improve, the step is halved; once it is below the
resolution of the finest parameter, the search restarts from a uniformly
drawn unseen configuration with the initial step. Polls that land on
configurations already told are judged on their recorded value without an
evaluation.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies.archive import ArchiveStrategy
from pytest_autotune.strategies.classic.moves import from_unit, reflect_unit
from pytest_autotune.strategies.options import check_real
from pytest_autotune.strategies.unseen import key_of

__all__ = ["PatternSearch"]

_POLLS_PER_ASK = 256


def _resolution(space: Space) -> float:
    """Half the unit width of the finest discrete parameter (a small step for reals)."""
    sizes = [p.size for p in space.params.values() if not p.is_continuous]
    finest = max(sizes, default=1000)
    return 0.5 / max(finest, 2)


class PatternSearch(ArchiveStrategy):
    """Hooke-Jeeves pattern search with restarts (see the module docstring)."""

    name: ClassVar[str] = "pattern"

    def __init__(
        self,
        space: Space,
        *,
        rng: np.random.Generator,
        step: float = 0.25,
        shrink: float = 0.5,
    ) -> None:
        super().__init__(space, rng=rng)
        self.step0 = check_real(self.name, "step", step, lo=0.0, hi=1.0, open_lo=True)
        self.shrink = check_real(self.name, "shrink", shrink, lo=0.0, hi=0.9, open_lo=True)
        self.min_step = min(_resolution(space), self.step0)
        self._base: NDArray[np.float64] | None = None
        self._base_value = math.inf
        self._step = self.step0
        self._polls: deque[NDArray[np.float64]] = deque()
        self._pending: dict[Hashable, NDArray[np.float64]] = {}

    def _new_round(self) -> None:
        assert self._base is not None
        n = self._base.shape[0]
        polls = []
        for dim in self.rng.permutation(n):
            for sign in (1.0, -1.0) if self.rng.random() < 0.5 else (-1.0, 1.0):
                u = self._base.copy()
                u[dim] += sign * self._step
                polls.append(reflect_unit(u))
        self._polls = deque(polls)

    def _restart(self) -> Points:
        point = self.unseen()
        self._base, self._base_value, self._step = None, math.inf, self.step0
        self._pending = {key_of(point): self.space.to_unit(point)[0]}
        self._polls.clear()
        return point

    def ask(self) -> Points:
        if self._base is None:
            return self.archive.propose(self._restart())
        for _ in range(_POLLS_PER_ASK):
            if not self._polls:
                self._step *= self.shrink
                if self._step < self.min_step:
                    return self.archive.propose(self._restart())
                self._new_round()
            u = self._polls.popleft()
            point = from_unit(self.space, u)
            key = key_of(point)
            known = self.archive.values.get(key)
            if known is not None:
                self._judge(u, known)
                continue
            if key not in self.archive:
                self._pending[key] = u
                return self.archive.propose(point)
        return self.archive.propose(self._restart())

    def _judge(self, u: NDArray[np.float64], value: float) -> None:
        if self._base is None:
            self._base, self._base_value = u, value
            self._new_round()
        elif value < self._base_value:
            move = u - self._base
            self._base, self._base_value = u, value
            self._new_round()
            self._polls.appendleft(reflect_unit(u + move))

    def learn(self, point: Points, value: float) -> None:
        u = self._pending.pop(key_of(point), None)
        if u is None:
            return
        if self._base is None and math.isinf(value):
            return  # a failing start: the next ask restarts elsewhere
        self._judge(u, value)
