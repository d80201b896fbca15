"""A parameter's filtered values, addressed by rank: the value type the space builder's stages share.

:mod:`pytest_autotune.space.trees.domain` makes a :class:`Domain` (filtering by unary conditions); the
flat trees (:mod:`pytest_autotune.space.trees.tree`) and their builder read one. It sits in its own leaf
module so that those stages are siblings rather than each importing the previous one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.params.base import Param

__all__ = ["Domain"]


class Domain:
    """The filtered values of one parameter, addressed by *rank* (0 .. size-1, ascending position).

    ``positions`` maps ranks to positions in the parameter's full domain; None means every value
    passed and ranks are positions.
    """

    def __init__(self, name: str, param: Param, positions: NDArray[np.int64] | None) -> None:
        self.name = name
        self.param = param
        self.positions = positions
        self.size = param.size if positions is None else len(positions)

    def positions_of(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """Domain positions of the given ranks."""
        ranks = np.asarray(ranks, dtype=np.int64)
        return ranks if self.positions is None else self.positions[ranks]

    def values_of(self, ranks: NDArray[np.int64]) -> NDArray[Any]:
        """Parameter values of the given ranks (natural dtype)."""
        return self.param.values_at(self.positions_of(ranks))

    def values_between(self, start: int, stop: int) -> NDArray[Any]:
        """Values of ranks ``start .. stop-1`` (contiguous, cheap for an unfiltered domain)."""
        if self.positions is None:
            return self.param.values(start, stop)
        return self.param.values_at(self.positions[start:stop])
