"""The chain of trees: the production implementation of :class:`Space`.

Building: every constraint is split into atoms (:mod:`.vectorize`); constraints that read a
:class:`Real` stay whole and are checked on candidates. The discrete parameters fall into
independent groups (:mod:`.order`); a group of one parameter that no atom reads is a free
dimension, every other group becomes a tree: unary atoms filter each domain (:mod:`.domain`),
the group is ordered, and the tree is built level by level (:mod:`.build`).

Using: a configuration is one code per group (:mod:`.groups`) plus the real values. Sizes are
products of group sizes (Python ints), the index bijection is mixed radix over groups (first
group most significant; inside a tree, leaves in lexicographic level order), and every batch
operation is vectorised per group. Nothing ever forms the product of groups.

Unit coordinates (:meth:`from_unit`) follow each tree's *level order*: coordinate ``i`` picks the
value of parameter ``i`` among the values valid given the parameters on earlier levels of its
tree (the same as pyATF's mapping when the level order is the declaration order).
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import Config, FeatureBlock, Points, Space
from pytest_autotune.space.conditions.vectorize import Atom, split_constraint
from pytest_autotune.space.declaration import ConstraintLike, Declaration
from pytest_autotune.space.errors import EmptySpaceError, SpaceError
from pytest_autotune.space.features import feature_layout
from pytest_autotune.space.params.base import Param
from pytest_autotune.space.trees.build import build_tree
from pytest_autotune.space.trees.domain import filter_domain
from pytest_autotune.space.trees.groups import FreeGroup, Group, TreeGroup
from pytest_autotune.space.trees.order import group_parameters, level_order

__all__ = ["ChainSpace", "build_space"]

#: Unit step of a real parameter's neighbours (fraction of its (log) range).
REAL_STEP = 0.1
#: Rounds of redrawing real values that violate a constraint before giving up.
REAL_DRAW_ROUNDS = 1000
_GOLDEN = 0.6180339887498949
_MISSING = object()


def _columns(
    configs: Sequence[Mapping[str, Any]], names: Sequence[str]
) -> tuple[list[Sequence[Any]], NDArray[np.bool_] | None]:
    """The values of each of ``names`` in every configuration (one sequence per name), and which
    configurations lack some of them (None when none does)."""
    if not names:
        return [], None
    getter = operator.itemgetter(*names)
    try:
        if len(names) == 1:
            return [list(map(getter, configs))], None
        # one flat list sliced per name: cheaper than transposing the rows with zip(*rows)
        flat = list(itertools.chain.from_iterable(map(getter, configs)))
    except (KeyError, TypeError):
        pass
    else:
        k = len(names)
        return [flat[j::k] for j in range(k)], None
    values = [[c.get(n, _MISSING) if isinstance(c, Mapping) else _MISSING for c in configs] for n in names]
    missing = np.zeros(len(configs), dtype=bool)
    for column in values:
        missing |= np.array([v is _MISSING for v in column], dtype=bool)
    return [[None if v is _MISSING else v for v in column] for column in values], missing


class ChainSpace(Space):
    """A search space stored as a chain of independent flat trees (see the module docstring)."""

    def __init__(self, declaration: Declaration) -> None:
        super().__init__(declaration)
        self.declaration: Declaration = declaration  # the full declaration, not only the contract's view
        params = self.params
        self._reals = tuple(n for n, p in params.items() if p.is_continuous)
        discrete = [n for n, p in params.items() if not p.is_continuous]
        real_set = set(self._reals)
        atoms: list[Atom] = []
        self._real_atoms: list[Atom] = []
        for constraint in declaration.constraints:
            if real_set & set(constraint.reads):
                self._real_atoms.extend(split_constraint(constraint, params, split=False))
                continue
            for atom in split_constraint(constraint, params):
                if atom.reads:
                    atoms.append(atom)
                elif not atom.call_scalar({}):
                    raise EmptySpaceError(
                        f"{atom.label} is false whatever the parameters' values", parameter=constraint.owner
                    )
        self._atoms = atoms
        self._real_reads = {n for a in self._real_atoms for n in a.reads}
        self._groups: list[Group] = []
        depends_on = {n: declaration.depends_on(n) for n in discrete}
        for group in group_parameters(discrete, atoms):
            members = set(group)
            group_atoms = [a for a in atoms if a.reads[0] in members]
            if not group_atoms and len(group) == 1:
                self._groups.append(FreeGroup(group[0], params[group[0]]))
                continue
            unary = {n: [a for a in group_atoms if a.reads == (n,)] for n in group}
            domains = {n: filter_domain(n, params[n], unary[n]) for n in group}
            plan = level_order(group, group_atoms, {n: d.size for n, d in domains.items()}, depends_on)
            tree = build_tree([domains[n] for n in plan.names], plan.by_level)
            self._groups.append(TreeGroup(tree, group))
        self._group_of = {n: g for g, group in enumerate(self._groups) for n in group.names}
        self._position = {n: i for i, n in enumerate(self.names)}
        self._blocks = feature_layout(params)
        self._size = math.prod(g.size for g in self._groups)
        if declaration.declared_defaults():
            self.default_config()

    # -- description -------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self._size

    @property
    def groups(self) -> tuple[Group, ...]:
        """The independent groups, in code-column order."""
        return tuple(self._groups)

    def explain(self) -> str:
        """How the space was built: groups, level order and width, and how each condition
        (atom) was evaluated (``written``/``rewritten`` with the integer dtype, or ``scalar``)."""
        lines = []
        for g, group in enumerate(self._groups):
            if isinstance(group, TreeGroup):
                widths = ", ".join(f"{lv.name}:{len(lv)}" for lv in group.tree.levels)
                lines.append(f"group {g}: tree of {group.size} leaves; levels {widths}")
            else:
                lines.append(f"group {g}: free {group.names[0]} ({group.size} values)")
        for atom in [*self._atoms, *self._real_atoms]:
            lines.append(f"  {atom.plan_name:18} {', '.join(atom.reads)}: {atom.text}")
        return "\n".join(lines)

    # -- helpers -----------------------------------------------------------------------
    def _values(self, codes: NDArray[np.int64], names: set[str] | None = None) -> dict[str, NDArray[Any]]:
        out: dict[str, NDArray[Any]] = {}
        for g, group in enumerate(self._groups):
            if names is None or names & set(group.names):
                out.update(group.values(codes[:, g]))
        return out

    def _reals_ok(self, codes: NDArray[np.int64], reals: NDArray[np.float64]) -> NDArray[np.bool_]:
        ok = np.ones(len(codes), dtype=bool)
        if not self._real_atoms or len(codes) == 0:
            return ok
        inputs = self._values(codes, self._real_reads)
        for r, name in enumerate(self._reals):
            inputs[name] = reals[:, r]
        for atom in self._real_atoms:
            ok &= atom.evaluate({n: inputs[n] for n in atom.reads})
        return ok

    def _empty(self) -> Points:
        return Points(np.zeros((0, len(self._groups)), dtype=np.int64), np.zeros((0, len(self._reals))))

    def _reals_from_unit(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        out = np.empty(u.shape, dtype=np.float64)
        for r, name in enumerate(self._reals):
            out[:, r] = self.params[name].values_from_unit(u[:, r])
        return out

    def _encode(
        self, configs: Sequence[Mapping[str, Any]]
    ) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]]:
        n = len(configs)
        ok = np.ones(n, dtype=bool)
        discrete = [name for name in self.names if name not in self._reals]
        columns, missing = _columns(configs, discrete)
        if missing is not None:
            ok &= ~missing
        positions = {
            name: self.params[name].indices_of(column) for name, column in zip(discrete, columns, strict=True)
        }
        codes = np.empty((n, len(self._groups)), dtype=np.int64)
        for g, group in enumerate(self._groups):
            codes[:, g] = group.encode({m: positions[m] for m in group.names})
            ok &= codes[:, g] >= 0
        reals = np.zeros((n, len(self._reals)), dtype=np.float64)
        real_columns, real_missing = _columns(configs, self._reals)
        if real_missing is not None:
            ok &= ~real_missing
        for r, (name, values) in enumerate(zip(self._reals, real_columns, strict=True)):
            param = self.params[name]
            inside = np.array([v in param for v in values], dtype=bool) & ok
            reals[inside, r] = [float(v) for v, i in zip(values, inside.tolist(), strict=True) if i]
            ok &= inside
        codes[~ok] = 0
        if self._real_atoms and ok.any():
            rows = np.flatnonzero(ok)
            ok[rows] = self._reals_ok(codes[rows], reals[rows])
        return codes, reals, ok

    # -- conversions -----------------------------------------------------------------------
    def configs(self, points: Points) -> list[Config]:
        columns = self._values(points.codes)
        lists = {n: columns[n].tolist() for n in columns}
        for r, name in enumerate(self._reals):
            lists[name] = points.reals[:, r].tolist()
        ordered = [lists[n] for n in self.names]
        return [dict(zip(self.names, row, strict=True)) for row in zip(*ordered, strict=True)]

    def contains(self, configs: Sequence[Mapping[str, Any]]) -> NDArray[np.bool_]:
        return self._encode(configs)[2]

    def to_points(self, configs: Sequence[Mapping[str, Any]]) -> Points:
        codes, reals, ok = self._encode(configs)
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise SpaceError(f"configuration {dict(configs[bad])!r} is not valid in this space")
        return Points(codes, reals)

    # -- operations --------------------------------------------------------------------------
    def sample(self, n: int, rng: np.random.Generator) -> Points:
        codes = np.empty((n, len(self._groups)), dtype=np.int64)
        for g, group in enumerate(self._groups):
            codes[:, g] = group.sample(n, rng)
        reals = self._reals_from_unit(rng.random((n, len(self._reals))))
        if self._real_atoms:
            bad = np.flatnonzero(~self._reals_ok(codes, reals))
            for _ in range(REAL_DRAW_ROUNDS):
                if len(bad) == 0:
                    break
                reals[bad] = self._reals_from_unit(rng.random((len(bad), len(self._reals))))
                bad = bad[~self._reals_ok(codes[bad], reals[bad])]
            if len(bad):
                labels = " and ".join(sorted({a.label for a in self._real_atoms}))
                raise SpaceError(f"could not draw real values satisfying {labels}")
        return Points(codes, reals)

    def _strides(self) -> list[int]:
        strides = [1] * len(self._groups)
        for g in range(len(self._groups) - 2, -1, -1):
            strides[g] = strides[g + 1] * self._groups[g + 1].size
        return strides

    def _check_discrete(self) -> None:
        if self.is_continuous:
            raise SpaceError("a space with Real parameters has no index bijection")

    def index_of(self, points: Points) -> list[int]:
        self._check_discrete()
        strides = self._strides()
        if self._size < 2**63:
            return (points.codes @ np.array(strides, dtype=np.int64)).tolist()  # type: ignore[no-any-return]
        return [sum(int(c) * s for c, s in zip(row, strides, strict=True)) for row in points.codes.tolist()]

    def at_index(self, indices: Sequence[int]) -> Points:
        self._check_discrete()
        indices = [int(i) for i in indices]
        if any(i < 0 or i >= self._size for i in indices):
            raise IndexError(f"index out of range for a space of {self._size} configurations")
        codes = np.empty((len(indices), len(self._groups)), dtype=np.int64)
        if self._size < 2**63:
            rest = np.array(indices, dtype=np.int64)
            for g in range(len(self._groups) - 1, -1, -1):
                rest, codes[:, g] = np.divmod(rest, self._groups[g].size)
        else:
            for row, index in enumerate(indices):
                for g in range(len(self._groups) - 1, -1, -1):
                    index, codes[row, g] = divmod(index, self._groups[g].size)
        return Points(codes, np.zeros((len(indices), 0)))

    def _real_neighbours(
        self, codes: NDArray[np.int64], reals: NDArray[np.float64]
    ) -> list[NDArray[np.float64]]:
        found = []
        for r, name in enumerate(self._reals):
            param = self.params[name]
            here = float(param.unit_from_values(reals[r : r + 1])[0])
            for u in (here - REAL_STEP, here + REAL_STEP):
                if 0.0 <= u <= 1.0:
                    candidate = reals.copy()
                    candidate[r] = float(param.values_from_unit(np.array([u]))[0])
                    if self._reals_ok(codes[None, :], candidate[None, :])[0]:
                        found.append(candidate)
        return found

    def _checked_alternatives(
        self, codes: NDArray[np.int64], reals: NDArray[np.float64], name: str
    ) -> list[NDArray[np.int64]]:
        """Codes of group ``name`` changing only ``name`` that also satisfy the real constraints."""
        g = self._group_of[name]
        nearest, streams = self._groups[g].alternatives(int(codes[g]), name)
        found: list[NDArray[np.int64]] = []
        for stream in streams:
            for batch in stream:
                rows = np.tile(codes, (len(batch), 1))
                rows[:, g] = batch
                batch = batch[self._reals_ok(rows, np.tile(reals, (len(batch), 1)))]
                if len(batch):
                    found.append(batch[:1] if nearest else batch)
                    if nearest:
                        break
        return found

    def neighbours(self, point: Points) -> Points:
        codes, reals = point.codes[0], point.reals[0]
        batched: dict[str, NDArray[np.int64]] = {}
        for g, group in enumerate(self._groups):
            if not self._real_reads & set(group.names):
                batched.update(group.neighbours(int(codes[g])))
        code_parts: list[NDArray[np.int64]] = []
        real_parts: list[NDArray[np.float64]] = []
        for name in self.names:
            if name in self._reals:
                continue
            g = self._group_of[name]
            found = [batched[name]] if name in batched else self._checked_alternatives(codes, reals, name)
            for alternatives in found:
                rows = np.tile(codes, (len(alternatives), 1))
                rows[:, g] = alternatives
                code_parts.append(rows)
                real_parts.append(np.tile(reals, (len(alternatives), 1)))
        for candidate in self._real_neighbours(codes, reals):
            code_parts.append(codes[None, :])
            real_parts.append(candidate[None, :])
        if not code_parts:
            return self._empty()
        stacked = np.concatenate(code_parts).astype(np.int64)
        return Points(stacked, np.concatenate(real_parts).reshape(len(stacked), len(self._reals)))

    def from_unit(self, coords: NDArray[np.float64]) -> Points:
        coords = np.asarray(coords, dtype=np.float64).reshape(-1, self.n_dims)
        n = len(coords)
        codes = np.empty((n, len(self._groups)), dtype=np.int64)
        for g, group in enumerate(self._groups):
            codes[:, g] = group.from_unit({m: coords[:, self._position[m]] for m in group.names})
        u = (
            np.column_stack([coords[:, self._position[m]] for m in self._reals])
            if self._reals
            else np.zeros((n, 0))
        )
        reals = self._reals_from_unit(u)
        if self._real_atoms:
            bad = np.flatnonzero(~self._reals_ok(codes, reals))
            shift = 0
            while len(bad) and shift < REAL_DRAW_ROUNDS:
                shift += 1
                reals[bad] = self._reals_from_unit((u[bad] + shift * _GOLDEN) % 1.0)
                bad = bad[~self._reals_ok(codes[bad], reals[bad])]
            if len(bad):
                raise SpaceError("could not map coordinates to real values satisfying the constraints")
        return Points(codes, reals)

    def to_unit(self, points: Points) -> NDArray[np.float64]:
        out = np.empty((len(points), self.n_dims), dtype=np.float64)
        for g, group in enumerate(self._groups):
            for name, column in group.to_unit(points.codes[:, g]).items():
                out[:, self._position[name]] = column
        for r, name in enumerate(self._reals):
            out[:, self._position[name]] = self.params[name].unit_from_values(points.reals[:, r])
        return out

    @property
    def feature_blocks(self) -> tuple[FeatureBlock, ...]:
        return self._blocks

    def features(self, points: Points) -> NDArray[np.float64]:
        width = sum(b.width for b in self._blocks)
        out = np.empty((len(points), width), dtype=np.float64)
        columns: dict[str, NDArray[np.float64]] = {}
        for g, group in enumerate(self._groups):
            columns.update(group.features(points.codes[:, g]))
        for r, name in enumerate(self._reals):
            columns[name] = self.params[name].encode_values(points.reals[:, r])
        for block in self._blocks:
            out[:, block.columns] = columns[block.name]
        return out

    def default_config(self) -> Config:
        declared = self.declaration.declared_defaults()
        positions = {
            n: int(self.params[n].index_of(v))  # type: ignore[arg-type]
            for n, v in declared.items()
            if n not in self._reals
        }
        codes = np.array(
            [
                [
                    group.default({n: positions[n] for n in group.names if n in positions})
                    for group in self._groups
                ]
            ],
            dtype=np.int64,
        )
        reals = np.array([[float(declared.get(n, self.params[n].bounds()[0])) for n in self._reals]])
        reals = reals.reshape(1, len(self._reals))
        config = self.configs(Points(codes, reals))[0]
        if self._real_atoms and not self._reals_ok(codes, reals)[0]:
            raise SpaceError(f"the default configuration {config!r} violates the constraints")
        return config


def build_space(params: Mapping[str, Param], constraints: Sequence[ConstraintLike] = ()) -> Space:
    """Validate ``params`` and ``constraints`` and build the search space (a chain of trees).

    ``constraints`` are configuration-level: callables reading parameters by
    argument name, or Kernel Tuner restriction strings. Declaration errors raise
    :class:`SpaceError` (or a subclass) naming the parameter at fault.
    """
    return ChainSpace(Declaration(params, constraints))
