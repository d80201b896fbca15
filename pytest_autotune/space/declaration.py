"""Validated declaration of a search space: named parameters plus constraints.

Both space implementations (the chain of trees and the brute-force oracle)
start from a :class:`Declaration`, so every declaration error is raised in one
place, before anything is enumerated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_autotune.space.conditions.constraints import Constraint
from pytest_autotune.space.errors import ConstraintError, SpaceError
from pytest_autotune.space.params.base import NO_DEFAULT, Param

__all__ = ["ConstraintLike", "Declaration"]

ConstraintLike = Callable[..., Any] | str | Constraint


class Declaration:
    """Parameters (in declaration order) and all constraints over them.

    ``constraints`` holds the ``where=`` of each parameter (``owner`` set)
    followed by the configuration-level constraints, in declaration order.
    """

    def __init__(self, params: Mapping[str, Param], constraints: Sequence[ConstraintLike] = ()) -> None:
        if not params:
            raise SpaceError("a search space needs at least one parameter")
        self.params: dict[str, Param] = {}
        for name, param in params.items():
            if not isinstance(param, Param):
                raise SpaceError(
                    f"parameter {name!r}: expected a parameter kind (Interval, Set, ...), got {param!r}",
                    parameter=name,
                )
            if param.name is not None and param.name != name:
                raise SpaceError(
                    f"parameter {name!r}: this {type(param).__name__} object is already "
                    f"used as parameter {param.name!r}; create one object per parameter",
                    parameter=name,
                )
            self.params[name] = param.bind(name)
        names = tuple(self.params)
        self.names = names
        built: list[Constraint] = []
        for name, param in self.params.items():
            if param.where is not None:
                built.append(Constraint.from_callable(param.where, names=names, owner=name))
        for item in constraints:
            if isinstance(item, Constraint):
                unknown = [n for n in item.reads if n not in self.params]
                if unknown:
                    raise ConstraintError(f"{item.label}: reads unknown parameter {unknown[0]!r}")
                built.append(item)
            elif isinstance(item, str):
                built.append(Constraint.from_string(item, names=names))
            elif callable(item):
                built.append(Constraint.from_callable(item, names=names))
            else:
                raise ConstraintError(f"constraint {item!r}: expected a callable or a string")
        self.constraints: tuple[Constraint, ...] = tuple(built)
        self._check_cycles()

    # -- structure ---------------------------------------------------------------
    def depends_on(self, name: str) -> tuple[str, ...]:
        """Parameters read by ``name``'s ``where=`` (excluding itself)."""
        for c in self.constraints:
            if c.owner == name:
                return tuple(n for n in c.reads if n != name)
        return ()

    def _check_cycles(self) -> None:
        state: dict[str, int] = {}  # 1 = on the stack, 2 = done

        def visit(name: str, path: list[str]) -> None:
            if state.get(name) == 2:
                return
            if state.get(name) == 1:
                cycle = [*path[path.index(name) :], name]
                raise ConstraintError(
                    f"constraint cycle between parameters: {' -> '.join(cycle)} (each where= reads the next)",
                    parameter=name,
                )
            state[name] = 1
            for dep in self.depends_on(name):
                visit(dep, [*path, name])
            state[name] = 2

        for name in self.names:
            visit(name, [])

    def groups(self) -> list[tuple[str, ...]]:
        """Independent groups: connected components of "a constraint reads b".

        Each group lists its parameters in declaration order; groups are
        ordered by their first parameter.
        """
        parent = {n: n for n in self.names}

        def find(n: str) -> str:
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n

        for c in self.constraints:
            members = list(c.reads) + ([c.owner] if c.owner else [])
            for other in members[1:]:
                ra, rb = find(members[0]), find(other)
                if ra != rb:
                    parent[rb] = ra
        by_root: dict[str, list[str]] = {}
        for n in self.names:
            by_root.setdefault(find(n), []).append(n)
        return [tuple(g) for g in by_root.values()]

    def constraints_reading(self, names: Sequence[str]) -> list[Constraint]:
        """Constraints that read (or are owned by) any of ``names``."""
        wanted = set(names)
        return [
            c
            for c in self.constraints
            if wanted & set(c.reads) or (c.owner is not None and c.owner in wanted)
        ]

    def declared_defaults(self) -> dict[str, Any]:
        """The ``default=`` values that were declared, by parameter name."""
        return {n: p.default for n, p in self.params.items() if p.default is not NO_DEFAULT}

    def is_valid(self, config: Mapping[str, Any]) -> bool:
        """Whether a full configuration satisfies every domain and constraint (scalar path)."""
        for name, param in self.params.items():
            if name not in config or config[name] not in param:
                return False
        return all(c(config) for c in self.constraints)
