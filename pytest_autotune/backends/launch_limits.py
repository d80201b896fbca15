"""Device limits as known constraints: configurations a device cannot launch are never tried.

When a test declares its :class:`~pytest_autotune.backends.geometry.Geometry` (how the work-group
size, and optionally the local memory, follow from the parameters), the limits its backend reports
for the device (:meth:`Backend.limits <pytest_autotune.backends.base.Backend.limits>`: the most
work-items per work-group, per dimension and in total, and the bytes of local memory) become
ordinary constraints of the search space (:func:`limit_constraints`), so the chain of trees
excludes those configurations before tuning, as Kernel Tuner does with its ``max_threads`` check.
:func:`prune_space` builds that space and reports how many configurations the limits removed and
why (:class:`Pruned`).

The declared space stays what the test declared: its ``space_hash`` (stored in ``autotune.json``)
does not depend on the device, so a committed configuration stays valid on a device with other
limits; only the tuning run on this device searches the smaller space.

The constraints are called one configuration at a time (the vectoriser's scalar plan): a geometry
is arbitrary Python, and the work-group sizes of a space take few distinct values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_autotune.backends.base import DeviceLimits
from pytest_autotune.backends.geometry import Geometry, GeometryDeclarationError, GeometryError
from pytest_autotune.space.conditions.constraints import Constraint
from pytest_autotune.space.errors import EmptySpaceError

if TYPE_CHECKING:
    from pytest_autotune.space.base import Space
    from pytest_autotune.space.declaration import ConstraintLike
    from pytest_autotune.space.params import Param

__all__ = ["Pruned", "limit_constraints", "prune_space"]


def _scalars_only(values: Mapping[str, Any]) -> None:
    """Refuse arrays: the vectoriser then calls the constraint one configuration at a time."""
    if any(getattr(value, "ndim", 0) for value in values.values()):
        raise TypeError("a device limit is checked one configuration at a time")


class _WorkGroupFits:
    """True when the local size of a configuration fits the device (per dimension and in total)."""

    def __init__(self, geometry: Geometry, limits: DeviceLimits) -> None:
        self.geometry = geometry
        self.total = limits.max_work_group_size
        self.per_dimension = limits.max_work_item_sizes or ()

    def __call__(self, **values: Any) -> bool:
        _scalars_only(values)
        try:
            local = self.geometry.local_size_of(values)
        except GeometryDeclarationError:
            raise
        except GeometryError:  # a block size of 0 in this configuration: nothing can launch it
            return False
        if any(size > limit for size, limit in zip(local, self.per_dimension, strict=False)):
            return False
        return self.total is None or math.prod(local) <= self.total


class _LocalMemoryFits:
    """True when the declared local memory of a configuration fits the device."""

    def __init__(self, geometry: Geometry, limit: int) -> None:
        self.geometry = geometry
        self.limit = limit

    def __call__(self, **values: Any) -> bool:
        _scalars_only(values)
        used = self.geometry.local_memory_of(values)
        return used is None or used <= self.limit


def limit_constraints(geometry: Geometry, names: Sequence[str], limits: DeviceLimits) -> list[Constraint]:
    """The known constraints that ``limits`` put on a space of parameters ``names`` (may be empty).

    One for the work-group size when the device reports a limit on it, one for the local memory
    when the geometry declares its use and the device reports its size. Their ``source`` text
    says which limit they hold.
    """
    candidates: list[tuple[Any, tuple[str, ...], str]] = []
    if limits.max_work_group_size is not None or limits.max_work_item_sizes:
        per_dimension = ", ".join(map(str, limits.max_work_item_sizes or ())) or "-"
        text = (
            f"device limit: work-group of at most {limits.max_work_group_size} work-items "
            f"and ({per_dimension}) per dimension"
        )
        candidates.append((_WorkGroupFits(geometry, limits), geometry.local_size_reads(names), text))
    local_limit = limits.local_memory_limit
    if geometry.local_memory is not None and local_limit is not None:
        opt_in = " (opt-in)" if limits.local_memory_opt_in is not None else ""
        text = f"device limit: at most {local_limit} bytes of local memory{opt_in}"
        fits = _LocalMemoryFits(geometry, local_limit)
        candidates.append((fits, geometry.local_memory_reads(names), text))
    constraints: list[Constraint] = []
    for check, reads, text in candidates:
        if reads:
            constraints.append(Constraint(check, reads, text))
        elif not check():  # the same for every configuration
            raise EmptySpaceError(f"no configuration fits the {text}")
    return constraints


@dataclass(frozen=True)
class Pruned:
    """How many configurations of a declared space the device limits removed, and why.

    ``declared`` and ``kept`` count configurations (the discrete part, as :attr:`Space.size`);
    ``reasons`` gives, per limit that removed any, its text and how many configurations it
    removes on its own (a configuration beyond two limits counts for both).
    """

    declared: int
    kept: int
    reasons: tuple[tuple[str, int], ...]

    @property
    def count(self) -> int:
        """Configurations removed."""
        return self.declared - self.kept

    def describe(self) -> str:
        """One line for the summary, e.g. ``pruned 12 of 80 configurations beyond the device's
        limits (work-group of at most 256 work-items ...: 12)``."""
        why = "; ".join(f"{text.removeprefix('device limit: ')}: {n}" for text, n in self.reasons)
        return f"pruned {self.count} of {self.declared} configurations beyond the device's limits ({why})"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        return {"declared": self.declared, "kept": self.kept, "reasons": [list(r) for r in self.reasons]}


def prune_space(
    params: Mapping[str, Param],
    constraints: Sequence[ConstraintLike],
    declared: Space,
    geometry: Geometry,
    limits: DeviceLimits,
) -> tuple[Space, Pruned | None]:
    """The space of ``params`` and ``constraints`` within ``limits``, and what was pruned.

    Returns ``declared`` itself and None when no limit applies or none removes a configuration.
    Raises :class:`~pytest_autotune.space.errors.EmptySpaceError` when no configuration fits.
    """
    from pytest_autotune.space.chain import build_space

    extra = limit_constraints(geometry, declared.names, limits)
    if not extra:
        return declared, None
    limited = build_space(params, [*constraints, *extra])
    if limited.size == declared.size:
        return declared, None
    reasons: tuple[tuple[str, int], ...]
    if len(extra) == 1:
        reasons = ((extra[0].source, declared.size - limited.size),)
    else:
        alone = [(c.source, declared.size - build_space(params, [*constraints, c]).size) for c in extra]
        reasons = tuple((text, n) for text, n in alone if n)
    return limited, Pruned(declared.size, limited.size, reasons)
