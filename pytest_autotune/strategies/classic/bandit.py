"""AUC bandit: a meta-strategy that lets the strategy doing best propose (pyATF/OpenTuner's default).

Each ask picks one arm (a classic strategy) by the area-under-the-curve
credit of OpenTuner's ``AUCBanditMetaTechnique``: over a sliding window of
the last ``window`` proposals, an arm's credit is the sum of the positions
(1, 2, ...) of its proposals that improved the best value, normalised by
the largest possible sum; the arm with the highest credit plus the
exploration bonus ``c * sqrt(2 ln(window length) / uses)`` proposes (an arm
not used in the window goes first; ties are broken at random). Every trial
is told to every arm, so each learns from the others' evaluations and none
proposes what another already evaluated; only the proposing arm is
credited.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Sequence
from typing import ClassVar

import numpy as np

from pytest_autotune.outcome import Outcome
from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies.archive import ArchiveStrategy
from pytest_autotune.strategies.base import SpaceExhausted, Strategy
from pytest_autotune.strategies.options import check_int, check_real
from pytest_autotune.strategies.registry import get_strategy
from pytest_autotune.strategies.unseen import key_of

__all__ = ["DEFAULT_ARMS", "AUCBandit"]

#: pyATF's default techniques (simulated annealing, pattern search, Torczon), with DE for Torczon.
DEFAULT_ARMS = ("anneal", "pattern", "diff_evo")


def _arm_names(arms: str | Sequence[str]) -> tuple[str, ...]:
    names = tuple(a.strip() for a in (arms.replace("+", ",").split(",") if isinstance(arms, str) else arms))
    return tuple(n for n in names if n)


class AUCBandit(ArchiveStrategy):
    """Area-under-the-curve bandit over ``arms`` (registry names, ``"a+b+c"`` or a list)."""

    name: ClassVar[str] = "bandit"

    def __init__(
        self,
        space: Space,
        *,
        rng: np.random.Generator,
        arms: str | Sequence[str] = DEFAULT_ARMS,
        c: float = 0.05,
        window: int = 500,
    ) -> None:
        super().__init__(space, rng=rng)
        names = _arm_names(arms)
        if not names or any(n in ("bandit", self.name) for n in names):
            raise ValueError(f"strategy 'bandit': option arms={arms!r} must name other strategies")
        self.c = check_real(self.name, "c", c, lo=0.0, hi=1e6)
        self.window = check_int(self.name, "window", window, lo=1)
        self.arm_names = names
        self.arms: list[Strategy] = [
            get_strategy(n)(space, rng=child) for n, child in zip(names, rng.spawn(len(names)), strict=True)
        ]
        self._history: deque[tuple[int, bool]] = deque(maxlen=self.window)
        self._pending: dict[Hashable, int] = {}
        self._exhausted: set[int] = set()

    def _score(self, arm: int) -> float:
        positions = [i for i, (who, _) in enumerate(self._history) if who == arm]
        uses = len(positions)
        if uses == 0:
            return math.inf
        improved = [rank for rank, i in enumerate(positions, start=1) if self._history[i][1]]
        auc = sum(improved) * 2.0 / (uses * (uses + 1))
        return auc + self.c * math.sqrt(2.0 * math.log(len(self._history)) / uses)

    def _choose(self) -> int:
        candidates = [i for i in range(len(self.arms)) if i not in self._exhausted]
        if not candidates:
            raise SpaceExhausted("bandit: every arm is exhausted")
        order = [candidates[int(i)] for i in self.rng.permutation(len(candidates))]
        return max(order, key=self._score)

    def ask(self) -> Points:
        while True:
            arm = self._choose()
            try:
                point = self.arms[arm].ask()
            except SpaceExhausted:
                self._exhausted.add(arm)
                continue
            self._pending[key_of(point)] = arm
            return self.archive.propose(point)

    def tell(self, point: Points, outcome: Outcome) -> None:
        best_before = self.archive.best_value
        value = self.archive.record(point, outcome)
        arm = self._pending.pop(key_of(point), None)
        if arm is not None:
            self._history.append((arm, value < best_before))
        for strategy in self.arms:
            strategy.tell(point, outcome)
