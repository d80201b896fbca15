"""Exhaustive search: every valid configuration in the space's index order."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from pytest_autotune.space.base import Points, Space
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.strategies.archive import ArchiveStrategy
from pytest_autotune.strategies.base import SpaceExhausted
from pytest_autotune.strategies.unseen import key_of

__all__ = ["Exhaustive"]


class Exhaustive(ArchiveStrategy):
    """Walk ``space.at_index(0), at_index(1), ...``, skipping configurations already told."""

    name: ClassVar[str] = "exhaustive"

    def __init__(self, space: Space, *, rng: np.random.Generator) -> None:
        super().__init__(space, rng=rng)
        if space.is_continuous:
            raise SpaceError("exhaustive: a space with Real parameters cannot be enumerated")
        self._next_index = 0

    def ask(self) -> Points:
        while self._next_index < self.space.size:
            point = self.space.at_index([self._next_index])
            self._next_index += 1
            if key_of(point) not in self.archive:
                return self.archive.propose(point)
        raise SpaceExhausted("exhaustive: every configuration has been proposed")
