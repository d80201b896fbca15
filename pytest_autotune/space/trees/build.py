"""Build a group's tree level by level, evaluating conditions on distinct projections.

At level ``k`` the frontier holds every valid prefix of the first ``k`` parameters. A condition
completed at this level reads the new parameter and a few earlier ones; it is evaluated once per
*distinct projection* of the prefixes onto the earlier parameters it reads (``np.unique``)
times the new parameter's filtered domain, broadcast with numpy in blocks. So ``L_X * L_Y <=
1024`` is evaluated on 13 distinct ``L_X`` values times 1024 ``L_Y`` values, however many
prefixes share them. The cheapest condition (fewest distinct projections) generates the
candidate (prefix, value) pairs; every other condition of the level is then checked on those
candidates, either by looking them up in its own evaluated grid (when that grid is smaller than
the candidate list) or by evaluating it on the candidates' distinct projections. Candidates are
expanded in blocks of prefixes so that temporary memory stays bounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.conditions.vectorize import Atom, UndefinedValues
from pytest_autotune.space.errors import EmptySpaceError, SpaceError
from pytest_autotune.space.trees.domain_values import Domain
from pytest_autotune.space.trees.tree import FlatTree

__all__ = ["MAX_LEVEL_NODES", "build_tree"]

#: Combinations per vectorised evaluation block. It bounds the temporary memory (64 KiB per int32
#: array, below glibc's 128 KiB mmap threshold, so blocks reuse the same heap space) so that building
#: SAXPY 2**24 (25 x 2**24 cells) grows the resident set less than pyATF's lazy Python loop does,
#: while the per-block overhead stays a modest part of the build time (2**13 nearly doubles SAXPY's
#: build time; 2**18 costs ~2 MB more; see benchmarks/space/bench.py).
GRID_BLOCK = 2**14
#: Grids up to this many cells are always evaluated (cheap whatever the candidates).
CHEAP_GRID = 2**18
#: Candidate (prefix, value) pairs expanded at once.
EXPAND_BLOCK = 2**16
#: Grids up to this many cells are kept as dense boolean tables for lookups.
DENSE_TABLE = 2**24
#: Most nodes one level of a tree may hold.
MAX_LEVEL_NODES = 2**27


@dataclass
class _Projection:
    """An atom's view of the frontier: distinct values of the earlier parameters it reads."""

    atom: Atom
    inverse: NDArray[np.int64]  # frontier node -> distinct projection
    inputs: dict[str, NDArray[Any]]  # earlier parameter values per distinct projection
    count: int


def _distinct(
    columns: Sequence[NDArray[np.int64]], radices: Sequence[int]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Distinct rows of ``columns`` (ranks below ``radices``): a representative row of each, and the
    inverse (row -> distinct index)."""
    n = len(columns[0])
    combined = math.prod(radices)
    if combined < 2**62:
        key = columns[0].astype(np.int64, copy=True)
        for column, radix in zip(columns[1:], radices[1:], strict=True):
            key *= radix
            key += column
        if combined <= max(4 * n, 2**16):
            present = np.zeros(combined, dtype=bool)
            present[key] = True
            remap = np.cumsum(present, dtype=np.int64) - 1
            inverse = remap[key]
            representative = np.empty(int(remap[-1]) + 1, dtype=np.int64)
            representative[inverse] = np.arange(n, dtype=np.int64)  # any node of each projection
            return representative, inverse
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(
            np.stack(columns, axis=1), axis=0, return_index=True, return_inverse=True
        )
    return first.astype(np.int64), inverse.astype(np.int64).reshape(-1)


def _project(
    atom: Atom,
    columns: dict[int, NDArray[np.int64]],
    domains: Sequence[Domain],
    level_of: dict[str, int],
    name: str,
) -> _Projection:
    earlier = [n for n in atom.reads if n != name]
    levels = [level_of[n] for n in earlier]
    first, inverse = _distinct([columns[k] for k in levels], [domains[k].size for k in levels])
    inputs = {n: domains[k].values_of(columns[k][first]) for n, k in zip(earlier, levels, strict=True)}
    return _Projection(atom, inverse, inputs, len(first))


def _grid_keys(projection: _Projection, domain: Domain, *, strict: bool) -> NDArray[np.int64]:
    """Sorted keys ``projection * F + rank`` of the valid cells of the atom's grid."""
    rows, width = projection.count, domain.size
    row_block = min(rows, GRID_BLOCK)
    col_block = max(1, GRID_BLOCK // row_block)
    found: list[NDArray[np.int64]] = []
    for c0 in range(0, width, col_block):
        c1 = min(width, c0 + col_block)
        level_values = domain.values_between(c0, c1)[None, :]
        for r0 in range(0, rows, row_block):
            r1 = min(rows, r0 + row_block)
            inputs = {n: v[r0:r1, None] for n, v in projection.inputs.items()}
            inputs[domain.name] = level_values
            mask = np.ascontiguousarray(projection.atom.evaluate(inputs, strict=strict))
            flat = np.flatnonzero(mask)
            if len(flat):  # many blocks find nothing: keep no empty arrays around
                r, c = np.divmod(flat, c1 - c0)
                found.append((r + r0) * width + (c + c0))
    keys = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    if col_block < width:
        keys.sort()
    return keys


class _Table:
    """Membership of (projection, rank) cells in an atom's valid grid."""

    def __init__(self, keys: NDArray[np.int64], rows: int, width: int) -> None:
        self.width = width
        self.dense: NDArray[np.bool_] | None = None
        self.keys = keys
        if rows * width <= DENSE_TABLE:
            self.dense = np.zeros(rows * width, dtype=bool)
            self.dense[keys] = True

    def contains(self, rows: NDArray[np.int64], ranks: NDArray[np.int64]) -> NDArray[np.bool_]:
        key = rows * self.width + ranks
        if self.dense is not None:
            hit: NDArray[np.bool_] = self.dense[key]
            return hit
        if len(self.keys) == 0:
            return np.zeros(len(key), dtype=bool)
        found = np.searchsorted(self.keys, key)
        clipped = np.minimum(found, len(self.keys) - 1)
        inside: NDArray[np.bool_] = (found < len(self.keys)) & (self.keys[clipped] == key)
        return inside


def _evaluate_pairs(
    projection: _Projection, domain: Domain, rows: NDArray[np.int64], ranks: NDArray[np.int64]
) -> NDArray[np.bool_]:
    """The atom on candidate cells, once per distinct cell."""
    width = domain.size
    cells, inverse = np.unique(rows * width + ranks, return_inverse=True)
    inputs = {n: v[cells // width] for n, v in projection.inputs.items()}
    inputs[domain.name] = domain.values_of(cells % width)
    result: NDArray[np.bool_] = projection.atom.evaluate(inputs)[inverse.reshape(-1)]
    return result


def _blocks(per_node: NDArray[np.int64]) -> list[tuple[int, int]]:
    """Split frontier nodes into runs whose candidate counts sum to about ``EXPAND_BLOCK``."""
    cumulative = np.cumsum(per_node)
    bounds: list[tuple[int, int]] = []
    start, done = 0, 0
    n = len(per_node)
    while start < n:
        stop = int(np.searchsorted(cumulative, done + EXPAND_BLOCK, side="right"))
        stop = max(stop, start + 1)
        bounds.append((start, min(stop, n)))
        done = int(cumulative[min(stop, n) - 1])
        start = stop
    return bounds


def _join(
    columns: dict[int, NDArray[np.int64]],
    domains: Sequence[Domain],
    level_of: dict[str, int],
    domain: Domain,
    atoms: Sequence[Atom],
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Valid (frontier node, rank) pairs of one level, sorted by node then rank.

    Grids are evaluated cheapest first while they cost less than checking the candidates the
    best grid so far generates; the grid generating the fewest candidates becomes the generator,
    the other grids are looked up, and the remaining atoms are evaluated on the candidates.
    """
    width = domain.size
    projections = sorted(
        (_project(a, columns, domains, level_of, domain.name) for a in atoms), key=lambda p: p.count
    )
    grids: dict[int, NDArray[np.int64]] = {}  # projection index -> valid keys
    candidates: dict[int, int] = {}  # projection index -> candidates it would generate
    for i, projection in enumerate(projections):
        best = min(candidates.values(), default=None)
        if best is not None and projection.count * width > max(best, CHEAP_GRID):
            continue
        try:
            keys = _grid_keys(projection, domain, strict=True)
        except UndefinedValues:
            continue
        grids[i] = keys
        counts = np.bincount(keys // width, minlength=projection.count)
        candidates[i] = int(counts[projection.inverse].sum())
    if not grids:  # every grid meets undefined values: scalar calls decide (and raise if Python does)
        grids[0] = _grid_keys(projections[0], domain, strict=False)
        candidates[0] = 0
    generator = min(candidates, key=lambda i: candidates[i])
    first = projections[generator]
    first_keys = grids[generator]
    counts = np.bincount(first_keys // width, minlength=first.count).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    first_ranks = first_keys % width
    per_node = counts[first.inverse]
    checks: list[tuple[_Projection, _Table | None]] = [
        (p, _Table(grids[i], p.count, width) if i in grids else None)
        for i, p in enumerate(projections)
        if i != generator
    ]
    checks.sort(key=lambda check: check[1] is None)  # lookups before evaluations
    out_nodes: list[NDArray[np.int64]] = []
    out_ranks: list[NDArray[np.int64]] = []
    for start, stop in _blocks(per_node):
        c = per_node[start:stop]
        nodes = np.repeat(np.arange(start, stop, dtype=np.int64), c)
        offsets = starts[first.inverse[start:stop]] - (np.cumsum(c) - c)
        ranks = first_ranks[np.repeat(offsets, c) + np.arange(len(nodes), dtype=np.int64)]
        for projection, table in checks:
            if len(nodes) == 0:
                break
            rows = projection.inverse[nodes]
            if table is not None:
                mask = table.contains(rows, ranks)
            else:
                mask = _evaluate_pairs(projection, domain, rows, ranks)
            nodes, ranks = nodes[mask], ranks[mask]
        out_nodes.append(nodes)
        out_ranks.append(ranks)
    return np.concatenate(out_nodes), np.concatenate(out_ranks)


def build_tree(domains: Sequence[Domain], atoms_by_level: Sequence[Sequence[Atom]]) -> FlatTree:
    """The tree of valid combinations of ``domains`` (in level order) under the level atoms.

    ``atoms_by_level[k]`` holds the atoms whose last-read parameter is on level ``k`` (unary
    atoms are already applied by the domains). Raises :class:`EmptySpaceError` naming the
    parameter at which no combination is left.
    """
    parents, ranks = _grow(domains, atoms_by_level)  # its temporaries are freed on return
    return FlatTree.from_nodes(list(domains), parents, ranks)


def _grow(
    domains: Sequence[Domain], atoms_by_level: Sequence[Sequence[Atom]]
) -> tuple[list[NDArray[np.int64]], list[NDArray[np.int64]]]:
    """Unpruned levels: per level, each node's parent and rank."""
    level_of = {d.name: k for k, d in enumerate(domains)}
    # the last level whose atoms read level k: its frontier column is dropped after that
    last_use = {k: k for k in range(len(domains))}
    for k, atoms in enumerate(atoms_by_level):
        for atom in atoms:
            for name in atom.reads:
                last_use[level_of[name]] = max(last_use[level_of[name]], k)
    if domains[0].size > MAX_LEVEL_NODES:
        raise _too_large(domains, 0, domains[0].size)
    parents = [np.zeros(domains[0].size, dtype=np.int64)]
    ranks = [np.arange(domains[0].size, dtype=np.int64)]
    columns = {0: ranks[0]}  # per level still read later: the rank of each frontier node
    for k in range(1, len(domains)):
        domain = domains[k]
        atoms = atoms_by_level[k]
        frontier = len(parents[-1])
        if atoms:
            parent, rank = _join(columns, domains, level_of, domain, atoms)
        else:
            if frontier * domain.size > MAX_LEVEL_NODES:
                raise _too_large(domains, k, frontier * domain.size)
            parent = np.repeat(np.arange(frontier, dtype=np.int64), domain.size)
            rank = np.tile(np.arange(domain.size, dtype=np.int64), frontier)
        if len(parent) == 0:
            labels = sorted({a.label for a in atoms})
            before = ", ".join(repr(d.name) for d in domains[:k])
            raise EmptySpaceError(
                f"no valid configuration: no value of parameter {domain.name!r} satisfies "
                f"{' and '.join(labels)} for any valid choice of {before}",
                parameter=domain.name,
            )
        if len(parent) > MAX_LEVEL_NODES:
            raise _too_large(domains, k, len(parent))
        columns = {j: column[parent] for j, column in columns.items() if last_use[j] > k}
        columns[k] = rank
        parents.append(parent)
        ranks.append(rank)
    return parents, ranks


def _too_large(domains: Sequence[Domain], k: int, count: int) -> SpaceError:
    names = ", ".join(repr(d.name) for d in domains[: k + 1])
    return SpaceError(
        f"the constraints connect parameters {names} into a group with {count} valid partial "
        f"configurations (more than {MAX_LEVEL_NODES}); split the group or narrow the domains",
        parameter=domains[k].name,
    )
