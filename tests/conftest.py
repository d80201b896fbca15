"""Fixtures of the tuner tests: the public toy space (constrained, with failures and a known optimum)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from pytest_autotune import testing
from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Space

Objective = Callable[[Mapping[str, Any]], Outcome]


@pytest.fixture
def toy_objective() -> Objective:
    """The toy objective (see :func:`pytest_autotune.testing.toy_objective`)."""
    return testing.toy_objective


@pytest.fixture
def toy_space() -> Space:
    """The toy space (see :func:`pytest_autotune.testing.toy_space`)."""
    return testing.toy_space()


@pytest.fixture
def toy_optimum(toy_space: Space) -> tuple[dict[str, Any], float]:
    """Brute-force optimum of the toy objective over the toy space."""
    configs = toy_space.configs(toy_space.at_index(range(toy_space.size)))
    scored = [(value, c) for c in configs if (value := testing.toy_objective(c).value) is not None]
    value, config = min(scored, key=lambda vc: vc[0])
    return config, value
