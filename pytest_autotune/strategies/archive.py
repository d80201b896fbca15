"""What a strategy knows, and the base class of the classic strategies.

Strategies minimise a *fitness*: the outcome's value, or ``+inf`` for a
failed configuration (so failures lose every comparison without being given
a made-up value). :class:`Archive` keeps the fitness and point of every
configuration told, and the keys proposed; :class:`ArchiveStrategy` wires
it into ``tell`` so that a strategy never proposes what it has seen, and
learns from every trial (also those it did not propose: the tuner's
fallbacks, a bandit's other arms, resumed trials). Configurations under way on other devices
(:meth:`~pytest_autotune.strategies.base.Strategy.pending`) count as proposed.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from pytest_autotune.outcome import Outcome
from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies.base import SpaceExhausted, Strategy
from pytest_autotune.strategies.classic.moves import Neighbourhood
from pytest_autotune.strategies.unseen import draw_unseen, key_of

__all__ = ["Archive", "ArchiveStrategy", "fitness"]


def fitness(outcome: Outcome) -> float:
    """The value to minimise: the measured value, ``inf`` for a failure."""
    return outcome.value if outcome.value is not None else math.inf


class Archive:
    """Told fitness and point per configuration key, proposed keys, and the best point so far."""

    def __init__(self) -> None:
        self.values: dict[Hashable, float] = {}
        self.points: dict[Hashable, Points] = {}
        self.proposed: set[Hashable] = set()
        self.best_point: Points | None = None
        self.best_value = math.inf

    def record(self, point: Points, outcome: Outcome) -> float:
        """Store a told outcome; returns its fitness."""
        value = fitness(outcome)
        key = key_of(point)
        self.values[key] = value
        self.points[key] = point
        if value < self.best_value:
            self.best_value = value
            self.best_point = point
        return value

    def propose(self, point: Points) -> Points:
        """Remember that ``point`` was proposed (so it is not proposed twice); returns it."""
        self.proposed.add(key_of(point))
        return point

    def value_of(self, point: Points) -> float | None:
        """Told fitness of ``point``, or None when not told yet."""
        return self.values.get(key_of(point))

    def ranked(self, k: int) -> list[tuple[float, Points]]:
        """The ``k`` best told points (fitness, point), best first; failures last."""
        best = sorted(self.values.items(), key=lambda kv: kv[1])[:k]
        return [(value, self.points[key]) for key, value in best]

    def __contains__(self, key: object) -> bool:
        """A key is *seen* when it was told or proposed."""
        return key in self.values or key in self.proposed

    def __len__(self) -> int:
        return len(self.values)


class ArchiveStrategy(Strategy):
    """A strategy with an :class:`Archive`: ``tell`` records, then calls :meth:`learn`."""

    def __init__(self, space: Space, *, rng: np.random.Generator, **options: Any) -> None:
        super().__init__(space, rng=rng, **options)
        self.archive = Archive()
        self.neighbours = Neighbourhood(space)

    def tell(self, point: Points, outcome: Outcome) -> None:
        self.learn(point, self.archive.record(point, outcome))

    def pending(self, points: Sequence[Points]) -> None:
        """Configurations under way count as proposed: never proposed again (they will be told)."""
        super().pending(points)
        self.archive.proposed.update(self.under_way)

    def learn(self, point: Points, value: float) -> None:
        """React to a told fitness (``inf`` for failures); the archive already holds it."""

    def seen(self, point: Points) -> bool:
        """True when ``point`` was told or proposed."""
        return key_of(point) in self.archive

    def unseen(self) -> Points:
        """A uniformly drawn configuration not seen yet; :class:`SpaceExhausted` when none is left."""
        point = draw_unseen(self.space, self.rng, self.archive)
        if point is None:
            raise SpaceExhausted(f"{self.name}: every configuration has been proposed")
        return point

    def unseen_neighbour(self, point: Points) -> Points | None:
        """A random valid neighbour of ``point`` not seen yet (None when all are seen)."""
        neighbours = self.neighbours(point)
        fresh = [i for i, key in enumerate(neighbours.keys()) if key not in self.archive]
        if not fresh:
            return None
        return neighbours[fresh[int(self.rng.integers(len(fresh)))]]
