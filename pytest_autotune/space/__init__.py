"""Constrained search spaces (no pytest, no torch).

``build_space(params, constraints)`` validates a declaration and returns a
:class:`Space`. See :mod:`pytest_autotune.space.base` for the contract.
"""

from __future__ import annotations

from pytest_autotune.space.base import Config, FeatureBlock, Points, Space
from pytest_autotune.space.chain import build_space
from pytest_autotune.space.conditions.constraints import Constraint
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
