"""The :class:`Permutation` kind: every ordering of a list of items (loop orders, say)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.conditions.bounds import Operand
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.space.json_values import check_storable
from pytest_autotune.space.params.base import NO_DEFAULT, FeatureKind, Param, to_python
from pytest_autotune.space.permutations import (
    permutation_count,
    rank_permutation,
    rank_permutations,
    unrank_permutations,
)

__all__ = ["MAX_PERMUTATION_ITEMS", "Permutation"]

#: Most items of a permutation that a constraint reads (its orderings are then enumerated);
#: a permutation no constraint reads has no limit beyond the 20 items ranks allow.
MAX_PERMUTATION_ITEMS = 9


class Permutation(Param):
    """All orderings of ``items`` (e.g. loop orders); values are tuples.

    Ranked by Lehmer code, so permutations of many items are never
    enumerated: ``values`` and ``index_of`` convert between rank and tuple.
    Its features are the position of each item in the ordering, and its moves
    swap two items.
    """

    kind = "permutation"

    def __init__(
        self,
        items: Sequence[Hashable],
        *,
        where: Callable[..., Any] | None = None,
        default: Any = NO_DEFAULT,
    ) -> None:
        super().__init__(where=where, default=default)
        items = tuple(to_python(item) for item in items)
        if len(items) == 0:
            raise SpaceError("Permutation([]): needs at least one item")
        check_storable("Permutation item", items, allow_tuple=False)
        if len(set(items)) != len(items):
            raise SpaceError(f"Permutation({list(items)!r}): duplicate items")
        if len(items) > 20:
            raise SpaceError(f"Permutation of {len(items)} items: at most 20 items are supported")
        self.items = items
        self._position = {item: i for i, item in enumerate(items)}
        if default is not NO_DEFAULT:
            self.default = tuple(default)
        self._check_default()

    @property
    def size(self) -> int:
        return permutation_count(len(self.items))

    def values(self, start: int = 0, stop: int | None = None) -> NDArray[Any]:
        stop = self.size if stop is None else min(stop, self.size)
        ranks = np.arange(max(0, start), stop, dtype=np.int64)
        orders = unrank_permutations(ranks, len(self.items))
        out = np.empty(len(ranks), dtype=object)
        out[:] = [tuple(self.items[i] for i in row) for row in orders]
        return out

    def values_at(self, indices: NDArray[np.int64]) -> NDArray[Any]:
        orders = unrank_permutations(np.asarray(indices, dtype=np.int64), len(self.items))
        out = np.empty(len(orders), dtype=object)
        out[:] = [tuple(self.items[i] for i in row) for row in orders.tolist()]
        return out

    def orders(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """Permutations (as item positions) for an array of ranks: shape (n, items)."""
        return unrank_permutations(ranks, len(self.items))

    def index_of(self, value: Any) -> int | None:
        try:
            order = [self._position[item] for item in value]
        except (TypeError, KeyError):
            return None
        if len(order) != len(self.items) or len(set(order)) != len(order):
            return None
        return rank_permutation(order)

    def check_enumerable(self, name: str, max_values: int) -> None:
        if len(self.items) > MAX_PERMUTATION_ITEMS:
            raise SpaceError(
                f"parameter {name!r}: a Permutation of {len(self.items)} items is read by a constraint, "
                f"so its {self.size} orderings would be enumerated; at most {MAX_PERMUTATION_ITEMS} items "
                "are supported there (an unconstrained permutation has no limit)",
                parameter=name,
            )
        super().check_enumerable(name, max_values)

    def operand(self) -> Operand:
        return Operand("other")

    def neighbour_positions(self, position: int) -> NDArray[np.int64]:
        """Domain positions of the orderings one swap of two items away from ``position``."""
        order = self.orders(np.array([position], dtype=np.int64))[0]
        pairs = list(itertools.combinations(range(len(order)), 2))
        if not pairs:
            return np.zeros(0, dtype=np.int64)
        swapped = np.tile(order, (len(pairs), 1))
        rows = np.arange(len(pairs))
        i, j = np.array(pairs).T
        swapped[rows, i], swapped[rows, j] = order[j], order[i]
        return rank_permutations(swapped)

    @property
    def feature_kind(self) -> FeatureKind:
        return "permutation"

    @property
    def feature_width(self) -> int:
        return len(self.items)

    def encode_positions(self, positions: NDArray[np.int64]) -> NDArray[np.float64]:
        """One column per item: the item's position in the ordering."""
        orders = self.orders(np.asarray(positions, dtype=np.int64))
        out = np.empty(orders.shape, dtype=np.float64)
        rows = np.arange(len(orders))[:, None]
        out[rows, orders] = np.arange(orders.shape[1], dtype=np.float64)[None, :]
        return out

    def describe(self) -> str:
        return f"Permutation({list(self.items)!r})"
