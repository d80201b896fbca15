"""A genetic algorithm over configurations, elitist and constraint-aware.

The population is the ``population`` best configurations told so far
((mu + lambda) selection: a good configuration is never lost, and failures
sink to the bottom). Each generation breeds ``population`` children. A
child mixes parameter values (uniform crossover, redrawn a few times when
the mix violates a constraint) of a parent picked by binary tournament and
either the ``elite`` best configurations (``crossover="leaders"``, the
default: strong pull towards the leaders, as in grey-wolf optimisers) or a
second tournament parent (``"uniform"``). Then, with probability
``mutation`` or when the child is already known, it moves: a short random
walk over valid neighbours, or with probability ``hamming`` one parameter
redrawn from its whole domain. With probability ``local`` a child is
instead a move from one of the leaders. Children are always valid and never
seen before; the first generation is drawn uniformly.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable
from typing import ClassVar

import numpy as np

from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies.archive import ArchiveStrategy
from pytest_autotune.strategies.classic.moves import mix, random_walk, redraw_one
from pytest_autotune.strategies.options import check_int, check_real
from pytest_autotune.strategies.unseen import key_of

__all__ = ["GeneticAlgorithm"]

_MUTATION_TRIES = 6
#: Children in a row that could not be bred before a generation is cut short.
_BREED_FAILURES = 8


class GeneticAlgorithm(ArchiveStrategy):
    """Elitist genetic algorithm (see the module docstring)."""

    name: ClassVar[str] = "genetic"

    def __init__(
        self,
        space: Space,
        *,
        rng: np.random.Generator,
        population: int = 16,
        mutation: float = 0.3,
        jump: float = 0.3,
        local: float = 0.0,
        elite: int = 3,
        crossover: str = "leaders",
        hamming: float = 0.0,
    ) -> None:
        super().__init__(space, rng=rng)
        self.population = check_int(self.name, "population", population, lo=2)
        self.mutation = check_real(self.name, "mutation", mutation, lo=0.0, hi=1.0)
        self.jump = check_real(self.name, "jump", jump, lo=0.0, hi=0.95)
        self.local = check_real(self.name, "local", local, lo=0.0, hi=1.0)
        self.hamming = check_real(self.name, "hamming", hamming, lo=0.0, hi=1.0)
        self.elite = check_int(self.name, "elite", elite, lo=1)
        if crossover not in ("uniform", "leaders"):
            raise ValueError(
                f"strategy 'genetic': option crossover={crossover!r} must be 'uniform' or 'leaders'"
            )
        self.crossover = crossover
        self._queue: deque[Points] = deque()

    def ask(self) -> Points:
        while self._queue:
            point = self._queue.popleft()
            if not self.seen(point):
                return self.archive.propose(point)
        if len(self.archive) < self.population:
            return self.archive.propose(self.unseen())
        self._queue.extend(self._breed())
        if self._queue:
            return self.archive.propose(self._queue.popleft())
        return self.archive.propose(self.unseen())

    def _breed(self) -> list[Points]:
        ranked = self.archive.ranked(self.population)
        parents = [point for _, point in ranked]
        values = [value for value, _ in ranked]
        leaders = parents[: min(self.elite, len(parents))]
        children: list[Points] = []
        keys: set[Hashable] = set()
        failures = 0
        while len(children) < self.population and failures < _BREED_FAILURES:
            if self.rng.random() < self.local:
                child = self._mutate(leaders[int(self.rng.integers(len(leaders)))], keys)
            else:
                first = self._tournament(values)
                if self.crossover == "leaders":
                    child = mix(self.space, self.rng, [parents[first], *leaders])
                else:
                    child = mix(self.space, self.rng, [parents[first], parents[self._tournament(values)]])
                if (
                    child is None
                    or self.rng.random() < self.mutation
                    or self.seen(child)
                    or key_of(child) in keys
                ):
                    child = self._mutate(child if child is not None else parents[first], keys)
            if child is None:
                failures += 1
            else:
                children.append(child)
                keys.add(key_of(child))
        return children

    def _tournament(self, values: list[float]) -> int:
        a, b = (int(i) for i in self.rng.integers(len(values), size=2))
        if math.isinf(values[a]) and math.isinf(values[b]):
            return a
        return a if values[a] <= values[b] else b

    def _mutate(self, point: Points, taken: set[Hashable]) -> Points | None:
        for _ in range(_MUTATION_TRIES):
            if self.rng.random() < self.hamming:
                candidate = redraw_one(self.space, point, self.rng)
                if candidate is None:
                    continue
            else:
                candidate = random_walk(self.neighbours, point, self.rng, self.jump)
            if not self.seen(candidate) and key_of(candidate) not in taken:
                return candidate
        neighbour = self.unseen_neighbour(point)
        if neighbour is not None and key_of(neighbour) not in taken:
            return neighbour
        return None
