"""Random search: configurations drawn uniformly from the valid ones, without repeats."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies.archive import ArchiveStrategy

__all__ = ["RandomSearch"]


class RandomSearch(ArchiveStrategy):
    """Uniform sampling without replacement over the valid configurations."""

    name: ClassVar[str] = "random"

    def __init__(self, space: Space, *, rng: np.random.Generator) -> None:
        super().__init__(space, rng=rng)

    def ask(self) -> Points:
        return self.archive.propose(self.unseen())
