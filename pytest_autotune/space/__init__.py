"""Constrained search spaces (no pytest, no torch).

``build_space(params, constraints)`` validates a declaration and returns a
:class:`Space`. See :mod:`pytest_autotune.space.base` for the contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_autotune.space.base import Config, FeatureBlock, Points, Space
from pytest_autotune.space.constraints import Constraint
from pytest_autotune.space.declaration import ConstraintLike, Declaration
from pytest_autotune.space.errors import ConstraintError, EmptySpaceError, SpaceError
from pytest_autotune.space.params import (
    NO_DEFAULT,
    Bool,
    Categorical,
    Interval,
    Param,
    Permutation,
    Pow2,
    Real,
    Set,
)

__all__ = [
    "NO_DEFAULT",
    "Bool",
    "Categorical",
    "Config",
    "Constraint",
    "ConstraintError",
    "ConstraintLike",
    "Declaration",
    "EmptySpaceError",
    "FeatureBlock",
    "Interval",
    "Param",
    "Permutation",
    "Points",
    "Pow2",
    "Real",
    "Set",
    "Space",
    "SpaceError",
    "build_space",
]


def build_space(params: Mapping[str, Param], constraints: Sequence[ConstraintLike] = ()) -> Space:
    """Validate ``params`` and ``constraints`` and build the search space (a chain of trees).

    ``constraints`` are configuration-level: callables reading parameters by
    argument name, or Kernel Tuner restriction strings. Declaration errors raise
    :class:`SpaceError` (or a subclass) naming the parameter at fault.
    """
    from pytest_autotune.space.chain import ChainSpace

    return ChainSpace(Declaration(params, constraints))
