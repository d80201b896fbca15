"""Independent parameter groups and the level order of each group's tree.

Groups are the connected components of "an atom reads both a and b" (atoms are the conditions
of :mod:`pytest_autotune.space.conditions.vectorize`; splitting a constraint's ``and`` can make groups
smaller than the constraints alone would). Inside a group the order is topological with respect
to ``where=`` dependencies (a parameter comes after the parameters its ``where=`` reads) and
otherwise greedy: next comes the parameter that completes the most conditions (so they prune
early), then the one with the fewest values left after its unary conditions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_autotune.space.conditions.vectorize import Atom

__all__ = ["GroupPlan", "group_parameters", "level_order"]


@dataclass
class GroupPlan:
    """A group in level order, with the atoms (reading two or more parameters) of each level."""

    names: tuple[str, ...]
    by_level: list[list[Atom]] = field(default_factory=list)


def group_parameters(names: Sequence[str], atoms: Sequence[Atom]) -> list[tuple[str, ...]]:
    """Connected components of the atoms' read sets, each in declaration order.

    Groups are ordered by their first parameter.
    """
    parent = {n: n for n in names}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for atom in atoms:
        first = atom.reads[0]
        for other in atom.reads[1:]:
            a, b = find(first), find(other)
            if a != b:
                parent[b] = a
    by_root: dict[str, list[str]] = {}
    for n in names:
        by_root.setdefault(find(n), []).append(n)
    return [tuple(group) for group in by_root.values()]


def level_order(
    group: Sequence[str],
    atoms: Sequence[Atom],
    sizes: Mapping[str, int],
    depends_on: Mapping[str, Sequence[str]],
) -> GroupPlan:
    """Order ``group`` (see the module docstring) and assign every non-unary atom to a level.

    ``atoms`` are the atoms reading only parameters of the group; ``sizes`` the domain sizes
    after the unary atoms; ``depends_on`` the parameters each ``where=`` reads.
    """
    members = set(group)
    position = {n: i for i, n in enumerate(group)}
    multi = [atom for atom in atoms if len(atom.reads) > 1]  # unary ones filter the domains
    placed: list[str] = []
    placed_set: set[str] = set()
    remaining = list(group)

    def completes(name: str) -> int:
        return sum(1 for a in multi if name in a.reads and all(r in placed_set or r == name for r in a.reads))

    while remaining:
        ready = [n for n in remaining if all(d in placed_set for d in depends_on.get(n, ()) if d in members)]
        if not ready:  # cannot happen: the declaration rejects where= cycles
            ready = remaining
        best = max(ready, key=lambda n: (completes(n), -sizes[n], -position[n]))
        placed.append(best)
        placed_set.add(best)
        remaining.remove(best)
    level = {n: k for k, n in enumerate(placed)}
    by_level: list[list[Atom]] = [[] for _ in placed]
    for atom in multi:
        by_level[max(level[r] for r in atom.reads)].append(atom)
    return GroupPlan(tuple(placed), by_level)
