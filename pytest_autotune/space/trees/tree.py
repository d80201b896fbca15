"""One tree of the chain: the valid combinations of a group of dependent parameters, as flat arrays.

Level ``k`` holds one node per valid prefix (values of the first ``k+1`` parameters in level
order). Per level, numpy arrays give each node's value (a *rank* into the level's table of used
values, ascending in domain order), its parent, its children's range in the next level and the
number of leaves below it. Nodes are sorted by (parent, value), so the last level lists the
valid configurations of the group in lexicographic order, and a leaf index is a configuration's
code. Every operation is vectorised over many configurations:

* sampling: a uniform leaf index, then parents gathered upwards (O(depth));
* membership: per level the composite key ``parent * width + rank`` is found with
  ``np.searchsorted`` in the sorted key array (O(depth log width));
* unit coordinates: coordinate ``k`` picks among the children of the node chosen so far.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.params.base import Param
from pytest_autotune.space.trees.domain_values import Domain

__all__ = ["DENSE_LOOKUP", "FlatTree", "TreeLevel"]

#: Keys below this get a dense lookup table (a gather instead of a binary search).
DENSE_LOOKUP = 2**18


#: Stored index arrays: int32 when their values fit (half the memory), else int64.
Index = NDArray[np.signedinteger[Any]]
_EMPTY: NDArray[np.int64] = np.zeros(0, dtype=np.int64)


def _compact(array: NDArray[Any]) -> Index:
    """``array`` as int32 when all its values fit, else as int64."""
    if len(array) == 0 or (int(array.max()) < 2**31 and int(array.min()) >= -(2**31)):
        return array.astype(np.int32)
    return array.astype(np.int64, copy=False)


def _dense_index(ascending: Index) -> NDArray[np.int64] | None:
    """Table mapping each value of ``ascending`` to its index (-1 elsewhere), or None if too big."""
    if int(ascending[-1]) >= DENSE_LOOKUP:
        return None
    table = np.full(int(ascending[-1]) + 1, -1, dtype=np.int64)
    table[ascending] = np.arange(len(ascending), dtype=np.int64)
    return table


@dataclass(frozen=True)
class TreeLevel:
    """The nodes of one level.

    ``positions``/``values``: the used values of the parameter (domain positions ascending, and
    the values themselves); per node: ``rank`` (into those tables), ``parent`` (node index in the
    previous level; 0 on the first level), ``keys`` (``parent * len(positions) + rank``,
    ascending), ``leaves`` (configurations below the node); per node plus one: ``child_start``
    (children of node ``i`` are ``child_start[i] .. child_start[i+1]-1`` in the next level).
    """

    name: str
    param: Param
    positions: NDArray[np.int64]
    values: NDArray[Any]
    rank: Index
    parent: Index
    keys: Index
    leaves: Index
    child_start: Index

    @property
    def width(self) -> int:
        """Number of distinct values used on this level."""
        return len(self.positions)

    def __len__(self) -> int:
        return len(self.rank)


class FlatTree:
    """A tree of valid configurations of one parameter group (see the module docstring)."""

    def __init__(self, levels: list[TreeLevel]) -> None:
        self.levels = levels
        self.names = tuple(level.name for level in levels)
        self.depth = len(levels)
        self.n_leaves = len(levels[-1])
        self._rank_tables: dict[int, NDArray[np.int64] | None] = {}
        self._node_tables: dict[int, NDArray[np.int64] | None] = {}

    def _rank_table(self, k: int) -> NDArray[np.int64] | None:
        """Dense position -> rank table of level ``k`` (-1: unused), when small enough."""
        if k not in self._rank_tables:
            self._rank_tables[k] = _dense_index(self.levels[k].positions)
        return self._rank_tables[k]

    def _node_table(self, k: int) -> NDArray[np.int64] | None:
        """Dense key -> node table of level ``k`` (-1: no such node), when small enough."""
        if k not in self._node_tables:
            self._node_tables[k] = _dense_index(self.levels[k].keys)
        return self._node_tables[k]

    @classmethod
    def from_nodes(
        cls,
        domains: list[Domain],
        parents: list[NDArray[np.int64]],
        ranks: list[NDArray[np.int64]],
    ) -> FlatTree:
        """Build from unpruned levels: per level the parent and the rank in ``domains[k]`` of each node.

        Nodes must be sorted by (parent, rank). Nodes without leaves below them are removed. The
        lists are consumed (emptied level by level) so that the unpruned arrays are freed early.
        """
        depth = len(domains)
        alive: list[NDArray[np.bool_]] = [np.ones(len(parents[-1]), dtype=bool)]
        for k in range(depth - 1, 0, -1):
            has_child = np.zeros(len(parents[k - 1]), dtype=bool)
            has_child[parents[k][alive[0]]] = True
            alive.insert(0, has_child)
        kept_parent: list[Index] = []
        kept_rank: list[NDArray[np.int64]] = []
        remap: NDArray[np.int64] | None = None
        for k in range(depth):
            parent = parents[k][alive[k]]
            if remap is not None:
                parent = remap[parent]
            remap = np.cumsum(alive[k], dtype=np.int64) - 1
            kept_parent.append(_compact(parent))
            kept_rank.append(ranks[k][alive[k]])
            parents[k] = ranks[k] = _EMPTY
        leaves: list[Index] = [np.ones(len(kept_rank[-1]), dtype=np.int32)]
        for k in range(depth - 2, -1, -1):
            counts = np.bincount(kept_parent[k + 1], weights=leaves[0], minlength=len(kept_rank[k]))
            leaves.insert(0, _compact(np.rint(counts).astype(np.int64)))
        levels: list[TreeLevel] = []
        for k in range(depth):
            used, inverse = np.unique(kept_rank[k], return_inverse=True)
            kept_rank[k] = _EMPTY
            rank = _compact(inverse.reshape(-1))
            positions = domains[k].positions_of(used).astype(np.int64, copy=False)
            if k + 1 < depth:
                child_counts = np.bincount(kept_parent[k + 1], minlength=len(rank))
                child_start = _compact(np.concatenate([[0], np.cumsum(child_counts)]))
            else:
                child_start = _compact(np.arange(len(rank) + 1, dtype=np.int64))
            levels.append(
                TreeLevel(
                    name=domains[k].name,
                    param=domains[k].param,
                    positions=positions,
                    values=domains[k].param.values_at(positions),
                    rank=rank,
                    parent=kept_parent[k],
                    keys=_compact(kept_parent[k].astype(np.int64) * len(used) + rank),
                    leaves=leaves[k],
                    child_start=child_start,
                )
            )
        return cls(levels)

    # -- paths -------------------------------------------------------------------------
    def ancestors(self, leaves: NDArray[np.int64]) -> list[NDArray[np.int64]]:
        """Node index on every level for each leaf (first level first)."""
        nodes = [np.asarray(leaves, dtype=np.int64)]
        for k in range(self.depth - 1, 0, -1):
            nodes.insert(0, self.levels[k].parent[nodes[0]])
        return nodes

    def ranks(self, leaves: NDArray[np.int64]) -> NDArray[np.int64]:
        """Per leaf, the rank of its value on every level: shape (n, depth)."""
        nodes = self.ancestors(leaves)
        out = np.empty((len(nodes[0]), self.depth), dtype=np.int64)
        for k, level in enumerate(self.levels):
            out[:, k] = level.rank[nodes[k]]
        return out

    def ranks_of_positions(self, k: int, positions: NDArray[np.int64]) -> NDArray[np.int64]:
        """Rank on level ``k`` of each domain position (-1 where the value is never used there)."""
        dense = self._rank_table(k)
        if dense is not None:
            inside = (positions >= 0) & (positions < len(dense))
            return np.where(inside, dense[np.where(inside, positions, 0)], -1)
        table = self.levels[k].positions
        found = np.searchsorted(table, positions)
        clipped = np.minimum(found, len(table) - 1)
        return np.where((found < len(table)) & (table[clipped] == positions), clipped, -1)

    def find(self, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        """Leaf index of each row of level ranks (shape (n, depth)); -1 where no such leaf exists."""
        n = len(ranks)
        ok = np.ones(n, dtype=bool)
        node = np.zeros(n, dtype=np.int64)
        for k, level in enumerate(self.levels):
            rank = ranks[:, k]
            ok &= rank >= 0
            key = node * level.width + np.where(ok, rank, 0)
            dense = self._node_table(k)
            if dense is not None:
                inside = ok & (key < len(dense))
                found = np.where(inside, dense[np.where(inside, key, 0)], -1)
                ok &= found >= 0
                node = np.where(ok, found, 0)
                continue
            found = np.searchsorted(level.keys, key)
            clipped = np.minimum(found, len(level.keys) - 1)
            ok &= (found < len(level.keys)) & (level.keys[clipped] == key)
            node = np.where(ok, clipped, 0)
        return np.where(ok, node, -1)

    # -- operations ----------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """``n`` leaves drawn uniformly."""
        return rng.integers(0, self.n_leaves, size=n, dtype=np.int64)

    def from_unit(self, coords: NDArray[np.float64]) -> NDArray[np.int64]:
        """Leaves chosen level by level: coordinate ``k`` (column ``k``) picks among the children."""
        n = len(coords)
        start = np.zeros(n, dtype=np.int64)
        count = np.full(n, len(self.levels[0]), dtype=np.int64)
        node = start
        for k, level in enumerate(self.levels):
            pick = np.ceil(coords[:, k] * count).astype(np.int64) - 1
            node = start + np.clip(pick, 0, count - 1)
            if k + 1 < self.depth:
                start = level.child_start[node]
                count = level.child_start[node + 1] - start
        return node

    def to_unit(self, leaves: NDArray[np.int64]) -> NDArray[np.float64]:
        """Cell centres that :meth:`from_unit` maps back to ``leaves``: shape (n, depth)."""
        nodes = self.ancestors(leaves)
        out = np.empty((len(nodes[0]), self.depth), dtype=np.float64)
        for k in range(self.depth):
            if k == 0:
                start = np.zeros(len(nodes[0]), dtype=np.int64)
                count = np.full(len(nodes[0]), len(self.levels[0]), dtype=np.int64)
            else:
                above = self.levels[k - 1]
                start = above.child_start[nodes[k - 1]]
                count = above.child_start[nodes[k - 1] + 1] - start
            out[:, k] = (nodes[k] - start + 0.5) / count
        return out
