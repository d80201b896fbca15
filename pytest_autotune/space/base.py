"""The search-space contract shared by every part of pytest-autotune.

Strategies, the tuner, the Bayesian engine, replay and the plugin use a space
only through :class:`Space`. Configurations cross that boundary in two forms:

* ``Config`` - a ``dict`` of parameter name to plain Python value (tuples for
  permutations), for users, journals and the objective;
* :class:`Points` - a batch of configurations in the space's own integer
  coordinates, for the vectorised inner loops (sampling thousands of
  candidates, encoding them as model features, finding neighbours).

Every ``Points`` row produced by a space is a valid configuration of it.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.params.base import FeatureKind, Param

__all__ = ["Condition", "Config", "Declared", "FeatureBlock", "Points", "Space"]

Config = dict[str, Any]


@dataclass(frozen=True)
class Points:
    """A batch of ``n`` configurations in a space's internal coordinates.

    ``codes`` (int64, shape (n, k)) holds the discrete part (for the chain of
    trees: one column per independent group, ordered by each group's first
    parameter: a tree's leaf index, or a free parameter's domain position,
    the Lehmer rank for a permutation);
    ``reals`` (float64, shape (n, r)) the values of continuous parameters.
    Only the space that made them can interpret them.
    """

    codes: NDArray[np.int64]
    reals: NDArray[np.float64]

    def __post_init__(self) -> None:
        if self.codes.ndim != 2 or self.reals.ndim != 2 or len(self.codes) != len(self.reals):
            raise ValueError(f"Points: bad shapes codes={self.codes.shape} reals={self.reals.shape}")

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def __getitem__(self, rows: int | slice | NDArray[Any] | Sequence[int]) -> Points:
        """Select rows; an int selects one row and keeps it two-dimensional."""
        if isinstance(rows, (int, np.integer)):
            rows = slice(int(rows), int(rows) + 1 if int(rows) != -1 else None)
        return Points(self.codes[rows], self.reals[rows])

    def keys(self) -> list[Hashable]:
        """One hashable key per row; equal keys mean the same configuration."""
        if self.reals.shape[1] == 0:
            return [tuple(row) for row in self.codes.tolist()]
        return [(tuple(c), tuple(r)) for c, r in zip(self.codes.tolist(), self.reals.tolist(), strict=True)]

    def __iter__(self) -> Iterator[Points]:
        for i in range(len(self)):
            yield self[i]

    @staticmethod
    def concat(parts: Sequence[Points]) -> Points:
        """Stack batches row-wise (all from the same space)."""
        if not parts:
            raise ValueError("Points.concat needs at least one batch")
        return Points(
            np.concatenate([p.codes for p in parts], axis=0),
            np.concatenate([p.reals for p in parts], axis=0),
        )

    def unique(self) -> Points:
        """Rows without duplicates, in first-seen order."""
        seen: dict[Hashable, int] = {}
        for i, key in enumerate(self.keys()):
            seen.setdefault(key, i)
        return self[np.fromiter(seen.values(), dtype=np.int64, count=len(seen))]


@dataclass(frozen=True)
class FeatureBlock:
    """Where one parameter lives in the feature matrix and how to compare it.

    * ``numeric``: one column in [0, 1] (log-scaled when the parameter is);
    * ``categorical``: one column holding the category code (0, 1, ...);
      ``n_categories`` is the domain size;
    * ``permutation``: ``n_items`` columns, column ``i`` holding the position
      of item ``i`` in the ordering (Spearman, Kendall and Hamming distances
      all derive from positions).
    """

    name: str
    kind: FeatureKind
    columns: slice
    n_categories: int = 0

    @property
    def width(self) -> int:
        """Number of columns of this block."""
        return int(self.columns.stop - self.columns.start)


class Condition(Protocol):
    """What a space reads of one of its constraints (:mod:`pytest_autotune.space.conditions.constraints`)."""

    @property
    def owner(self) -> str | None:
        """The parameter whose ``where=`` this is (None for a configuration-level constraint)."""

    @property
    def source(self) -> str:
        """Stable text of the condition (hashed into ``space_hash``)."""


class Declared(Protocol):
    """What a space is built from (a :class:`~pytest_autotune.space.declaration.Declaration`).

    The contract names only what :class:`Space` reads, so that it does not import the modules that
    compile constraints: every strategy and the tuner sit on this module.
    """

    @property
    def params(self) -> Mapping[str, Param]:
        """Parameters by name, in declaration order."""

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names in declaration order."""

    @property
    def constraints(self) -> Sequence[Condition]:
        """All constraints (``where=`` ones first, then configuration-level ones)."""


class Space(ABC):
    """A constrained search space (abstract contract).

    Build one with :func:`pytest_autotune.space.build_space`. Implementations
    must never materialise the product of independent parameter groups.
    """

    def __init__(self, declaration: Declared) -> None:
        self.declaration = declaration

    # -- description ---------------------------------------------------------------
    @property
    def params(self) -> Mapping[str, Param]:
        """Parameters by name, in declaration order."""
        return self.declaration.params

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names in declaration order."""
        return self.declaration.names

    @property
    def constraints(self) -> tuple[Condition, ...]:
        """All constraints (``where=`` ones first, then configuration-level ones)."""
        return tuple(self.declaration.constraints)

    @property
    @abstractmethod
    def size(self) -> int:
        """Exact number of valid configurations of the discrete parameters (may exceed 2**63)."""

    @property
    def is_continuous(self) -> bool:
        """True when some parameter is :class:`Real` (no index bijection, infinite size)."""
        return any(p.is_continuous for p in self.params.values())

    @property
    def space_hash(self) -> str:
        """Stable hash of parameters, domains and constraint sources (hex, 16 chars)."""
        h = hashlib.sha256()
        for name, param in self.params.items():
            h.update(f"param {name} {param.describe()}\n".encode())
        for c in self.constraints:
            h.update(f"constraint {c.owner} {c.source}\n".encode())
        return h.hexdigest()[:16]

    # -- conversions ---------------------------------------------------------------
    @abstractmethod
    def configs(self, points: Points) -> list[Config]:
        """Decode points into configurations (plain Python values)."""

    @abstractmethod
    def contains(self, configs: Sequence[Mapping[str, Any]]) -> NDArray[np.bool_]:
        """For each configuration: is it a valid configuration of this space?"""

    @abstractmethod
    def to_points(self, configs: Sequence[Mapping[str, Any]]) -> Points:
        """Encode valid configurations; raises :class:`SpaceError` naming the first invalid one."""

    # -- operations ----------------------------------------------------------------
    @abstractmethod
    def sample(self, n: int, rng: np.random.Generator) -> Points:
        """``n`` configurations drawn uniformly (with replacement) from the valid set."""

    @abstractmethod
    def index_of(self, points: Points) -> list[int]:
        """Position of each point in the space's fixed order (a bijection with ``range(size)``)."""

    @abstractmethod
    def at_index(self, indices: Sequence[int]) -> Points:
        """Inverse of :meth:`index_of`."""

    @abstractmethod
    def neighbours(self, point: Points) -> Points:
        """Valid configurations that differ from ``point`` (one row) in exactly one parameter.

        Per parameter: for ordered kinds the nearest valid value below and the
        nearest above; for categorical kinds every other valid value; for
        permutations every valid ordering reachable by swapping two items;
        for reals a step of 0.1 of the (log) range each way when valid.
        """

    @property
    def n_dims(self) -> int:
        """Number of unit coordinates (one per parameter)."""
        return len(self.params)

    @abstractmethod
    def from_unit(self, coords: NDArray[np.float64]) -> Points:
        """Map coordinates in (0, 1]^n_dims (shape (n, n_dims)) to valid configurations.

        Coordinate ``i`` chooses the value of parameter ``i`` uniformly among the
        values that are valid given the parameters chosen before it in the
        space's fixed order (declaration order for the brute force, each tree's
        level order for the chain of trees). pyATF's mapping is similar but
        weights children by their leaf counts.
        """

    @abstractmethod
    def to_unit(self, points: Points) -> NDArray[np.float64]:
        """Coordinates that :meth:`from_unit` maps back to ``points`` (cell centres)."""

    @property
    @abstractmethod
    def feature_blocks(self) -> tuple[FeatureBlock, ...]:
        """Layout of :meth:`features`, one block per parameter in declaration order."""

    @abstractmethod
    def features(self, points: Points) -> NDArray[np.float64]:
        """Model features of points, shape (n, total width of ``feature_blocks``)."""

    @abstractmethod
    def default_config(self) -> Config:
        """The declared defaults completed to a valid configuration.

        Parameters without a ``default=`` are completed with the valid
        configuration that agrees with the declared defaults and comes first
        when configurations are compared by domain position, parameter by
        parameter in declaration order. Raises :class:`SpaceError` when the
        declared defaults are not jointly valid.
        """

    def __repr__(self) -> str:
        params = ", ".join(f"{n}={p.describe()}" for n, p in self.params.items())
        return f"{type(self).__name__}({params}; size={self.size})"
