"""The two kinds of independent group in the chain: a tree, or a free dimension.

Each group owns one integer *code* column of :class:`Points`. A :class:`TreeGroup` code is a leaf
index of its :class:`FlatTree`; a :class:`FreeGroup` (one parameter no discrete constraint reads)
has its domain position as code, so an unconstrained ``Interval(1, 2**40)`` or a permutation of
15 items (a Lehmer rank) costs nothing. Both offer the same vectorised operations, which the
chain space composes without ever forming the product of groups.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.errors import SpaceError
from pytest_autotune.space.params.base import Param, to_python
from pytest_autotune.space.trees.tree import FlatTree

__all__ = ["MAX_FREE_DOMAIN", "FreeGroup", "Group", "TreeGroup"]

#: Largest domain of a free dimension (its positions are int64 codes).
MAX_FREE_DOMAIN = 2**62
#: First batch size when walking outwards for the nearest valid value (doubles each batch).
FIRST_BATCH = 16
#: Levels up to this width try every alternative value in one batched tree walk.
BATCH_WIDTH = 4096

#: Batches of valid codes, nearest first.
Stream = Iterator[NDArray[np.int64]]


def _outward(start: int, stop: int, step: int) -> Iterator[NDArray[np.int64]]:
    """Positions from ``start`` towards ``stop`` (exclusive) in growing batches."""
    size = FIRST_BATCH
    here = start
    while (step < 0 and here > stop) or (step > 0 and here < stop):
        end = max(stop, here - size) if step < 0 else min(stop, here + size)
        yield np.arange(here, end, step, dtype=np.int64)
        here = end
        size *= 2


class Group(ABC):
    """An independent group of parameters with one code column."""

    names: tuple[str, ...]
    size: int

    @abstractmethod
    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """``n`` codes drawn uniformly from the group's valid combinations."""

    @abstractmethod
    def values(self, codes: NDArray[np.int64]) -> dict[str, NDArray[Any]]:
        """Parameter values (natural numpy dtype) for each code."""

    @abstractmethod
    def encode(self, positions: Mapping[str, NDArray[np.int64]]) -> NDArray[np.int64]:
        """Codes of combinations given by domain positions (-1: invalid or absent)."""

    @abstractmethod
    def from_unit(self, coords: Mapping[str, NDArray[np.float64]]) -> NDArray[np.int64]:
        """Codes for unit coordinates, one array per parameter."""

    @abstractmethod
    def to_unit(self, codes: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
        """Cell-centre coordinates that :meth:`from_unit` maps back to ``codes``."""

    @abstractmethod
    def features(self, codes: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
        """Feature columns of every parameter for each code."""

    @abstractmethod
    def alternatives(self, code: int, name: str) -> tuple[bool, list[Stream]]:
        """Valid codes that change only parameter ``name``.

        Returns ``(nearest, streams)``: for ordered parameters ``nearest`` is True and there are
        two streams (values below, values above), each nearest first; otherwise one stream
        holding every alternative.
        """

    @abstractmethod
    def neighbours(self, code: int) -> dict[str, NDArray[np.int64]]:
        """Per parameter, the valid codes that change only it: for kinds with moves of their own
        those one move away (:meth:`Param.neighbour_positions`: for permutations, one swap), for
        ordered parameters the nearest valid value below and above, otherwise every valid
        alternative. The batch form of :meth:`alternatives`."""

    @abstractmethod
    def default(self, declared: Mapping[str, int]) -> int:
        """Code of the combination agreeing with ``declared`` positions that is first when
        compared by domain position in declaration order (raises :class:`SpaceError`)."""


class FreeGroup(Group):
    """One parameter that no discrete constraint reads: its code is its domain position."""

    def __init__(self, name: str, param: Param) -> None:
        if param.size > MAX_FREE_DOMAIN:
            raise SpaceError(
                f"parameter {name!r}: {param.describe()} has {param.size} values; at most "
                f"{MAX_FREE_DOMAIN} are supported",
                parameter=name,
            )
        self.name = name
        self.param = param
        self.names = (name,)
        self.size = param.size

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return rng.integers(0, self.size, size=n, dtype=np.int64)

    def values(self, codes: NDArray[np.int64]) -> dict[str, NDArray[Any]]:
        return {self.name: self.param.values_at(codes)}

    def encode(self, positions: Mapping[str, NDArray[np.int64]]) -> NDArray[np.int64]:
        return np.asarray(positions[self.name], dtype=np.int64)

    def from_unit(self, coords: Mapping[str, NDArray[np.float64]]) -> NDArray[np.int64]:
        picked = np.ceil(np.asarray(coords[self.name], dtype=np.float64) * self.size) - 1
        codes: NDArray[np.int64] = np.clip(picked, 0, self.size - 1).astype(np.int64)
        return codes

    def to_unit(self, codes: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
        return {self.name: (codes + 0.5) / self.size}

    def features(self, codes: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
        return {self.name: self.param.encode_positions(codes)}

    def alternatives(self, code: int, name: str) -> tuple[bool, list[Stream]]:
        moves = self.param.neighbour_positions(code)
        if moves is not None:
            return False, [iter([moves])]
        if self.param.is_ordered:
            return True, [_outward(code - 1, -1, -1), _outward(code + 1, self.size, 1)]
        others = np.delete(np.arange(self.size, dtype=np.int64), code)
        return False, [iter([others])]

    def neighbours(self, code: int) -> dict[str, NDArray[np.int64]]:
        moves = self.param.neighbour_positions(code)
        if moves is not None:
            return {self.name: moves}
        if self.param.is_ordered:
            near = [c for c in (code - 1, code + 1) if 0 <= c < self.size]
            return {self.name: np.array(near, dtype=np.int64)}
        return {self.name: np.delete(np.arange(self.size, dtype=np.int64), code)}

    def default(self, declared: Mapping[str, int]) -> int:
        return int(declared.get(self.name, 0))


class TreeGroup(Group):
    """Parameters connected by constraints: codes are leaves of a :class:`FlatTree`."""

    def __init__(self, tree: FlatTree, declaration_order: Sequence[str]) -> None:
        self.tree = tree
        self.names = tree.names
        self.size = tree.n_leaves
        self.level_of = {name: k for k, name in enumerate(tree.names)}
        self.declaration_order = tuple(declaration_order)
        self._tables: dict[str, NDArray[np.float64]] = {}

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return self.tree.sample(n, rng)

    def values(self, codes: NDArray[np.int64]) -> dict[str, NDArray[Any]]:
        ranks = self.tree.ranks(codes)
        return {level.name: level.values[ranks[:, k]] for k, level in enumerate(self.tree.levels)}

    def encode(self, positions: Mapping[str, NDArray[np.int64]]) -> NDArray[np.int64]:
        n = len(positions[self.names[0]])
        ranks = np.empty((n, self.tree.depth), dtype=np.int64)
        for k, name in enumerate(self.names):
            ranks[:, k] = self.tree.ranks_of_positions(k, np.asarray(positions[name], dtype=np.int64))
        return self.tree.find(ranks)

    def from_unit(self, coords: Mapping[str, NDArray[np.float64]]) -> NDArray[np.int64]:
        matrix = np.column_stack([np.asarray(coords[name], dtype=np.float64) for name in self.names])
        return self.tree.from_unit(matrix)

    def to_unit(self, codes: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
        matrix = self.tree.to_unit(codes)
        return {name: matrix[:, k] for k, name in enumerate(self.names)}

    def _table(self, k: int) -> NDArray[np.float64]:
        level = self.tree.levels[k]
        table = self._tables.get(level.name)
        if table is None:
            table = level.param.encode_positions(level.positions)
            self._tables[level.name] = table
        return table

    def features(self, codes: NDArray[np.int64]) -> dict[str, NDArray[np.float64]]:
        ranks = self.tree.ranks(codes)
        return {name: self._table(k)[ranks[:, k]] for k, name in enumerate(self.names)}

    def _variants(self, base: NDArray[np.int64], k: int, ranks: NDArray[np.int64]) -> NDArray[np.int64]:
        rows = np.tile(base, (len(ranks), 1))
        rows[:, k] = ranks
        leaves = self.tree.find(rows)
        return leaves[leaves >= 0]

    def _stream(self, base: NDArray[np.int64], k: int, ranks: Iterator[NDArray[np.int64]]) -> Stream:
        for batch in ranks:
            found = self._variants(base, k, batch)
            if len(found):
                yield found

    def alternatives(self, code: int, name: str) -> tuple[bool, list[Stream]]:
        k = self.level_of[name]
        level = self.tree.levels[k]
        base = self.tree.ranks(np.array([code], dtype=np.int64))[0]
        here = int(base[k])
        moves = level.param.neighbour_positions(int(level.positions[here]))
        if moves is not None:
            ranks = self.tree.ranks_of_positions(k, moves)
            return False, [self._stream(base, k, iter([ranks[ranks >= 0]]))]
        if level.param.is_ordered:
            below = self._stream(base, k, _outward(here - 1, -1, -1))
            above = self._stream(base, k, _outward(here + 1, level.width, 1))
            return True, [below, above]
        others = np.delete(np.arange(level.width, dtype=np.int64), here)
        return False, [self._stream(base, k, iter([others]))]

    def _value(self, name: str, position: int) -> Any:
        param = self.tree.levels[self.level_of[name]].param
        return to_python(param.values_at(np.array([position], dtype=np.int64))[0])

    def neighbours(self, code: int) -> dict[str, NDArray[np.int64]]:
        base = self.tree.ranks(np.array([code], dtype=np.int64))[0]
        candidates: list[NDArray[np.int64]] = []  # per level: alternative ranks tried at once
        wide: list[int] = []  # levels too wide to try whole: walked outwards instead
        moved: set[int] = set()  # levels whose kind has moves of its own (permutations: swaps)
        for k, level in enumerate(self.tree.levels):
            moves = level.param.neighbour_positions(int(level.positions[base[k]]))
            if moves is not None:
                ranks = self.tree.ranks_of_positions(k, moves)
                candidates.append(ranks[ranks >= 0])
                moved.add(k)
            elif level.width <= BATCH_WIDTH:
                candidates.append(np.delete(np.arange(level.width, dtype=np.int64), base[k]))
            else:
                candidates.append(np.zeros(0, dtype=np.int64))
                wide.append(k)
        counts = [len(c) for c in candidates]
        rows = np.repeat(base[None, :], sum(counts), axis=0)
        levels = np.repeat(np.arange(self.tree.depth), counts)
        rows[np.arange(len(rows)), levels] = np.concatenate(candidates)
        leaves = self.tree.find(rows)
        out: dict[str, NDArray[np.int64]] = {}
        start = 0
        for k, level in enumerate(self.tree.levels):
            ranks, found = candidates[k], leaves[start : start + counts[k]]
            start += counts[k]
            if k in wide:
                _, streams = self.alternatives(code, level.name)
                nearest = [next(stream, None) for stream in streams]
                out[level.name] = np.array([b[0] for b in nearest if b is not None], dtype=np.int64)
                continue
            valid = found >= 0
            if level.param.is_ordered and k not in moved:
                below, above = valid & (ranks < base[k]), valid & (ranks > base[k])
                picked = [found[below][-1]] if below.any() else []
                picked += [found[above][0]] if above.any() else []
                out[level.name] = np.array(picked, dtype=np.int64)
            else:
                out[level.name] = found[valid]
        return out

    def default(self, declared: Mapping[str, int]) -> int:
        alive: NDArray[np.bool_] | None = None
        for k, level in enumerate(self.tree.levels):
            ok = np.ones(len(level), dtype=bool)
            if level.name in declared:
                rank = self.tree.ranks_of_positions(k, np.array([declared[level.name]], dtype=np.int64))[0]
                ok = level.rank == rank
            if alive is not None:
                ok &= alive[level.parent]
            alive = ok
            if not alive.any():
                fixed = {n: self._value(n, p) for n, p in declared.items() if n in self.level_of}
                raise SpaceError(
                    f"the declared defaults {fixed!r} violate the constraints: no valid configuration "
                    f"agrees with them once parameter {level.name!r} is chosen",
                    parameter=level.name,
                )
        assert alive is not None
        leaves = np.flatnonzero(alive).astype(np.int64)
        nodes = self.tree.ancestors(leaves)
        for name in self.declaration_order:
            k = self.level_of[name]
            level = self.tree.levels[k]
            position = level.positions[level.rank[nodes[k]]]
            keep = position == position.min()
            leaves = leaves[keep]
            nodes = [column[keep] for column in nodes]
        return int(leaves[0])
