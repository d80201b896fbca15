"""Fixtures of the tuner tests: a small constrained space with a known optimum and failures."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Categorical, Interval, Pow2, Space, build_space

MODE_COST = {"a": 0.0, "b": 1.0, "c": 0.5}


def _toy_objective(config: dict[str, Any]) -> Outcome:
    """Minimum 1.0 at x=5, y=4, mode='a'; x == 7 fails to compile, y == 16 with mode 'c' at runtime."""
    x, y, mode = config["x"], config["y"], config["mode"]
    if x == 7:
        return Outcome.failed("compile", "x == 7 does not build")
    if y == 16 and mode == "c":
        return Outcome.failed("runtime", "out of resources")
    return Outcome.ok(1.0 + (x - 5) ** 2 + (math.log2(y) - 2) ** 2 + MODE_COST[mode])


def make_toy_space() -> Space:
    return build_space(
        {"x": Interval(1, 8), "y": Pow2(1, 16), "mode": Categorical("a", "b", "c")},
        [lambda x, y: x * y <= 64],
    )


Objective = Callable[[dict[str, Any]], Outcome]


@pytest.fixture
def toy_objective() -> Objective:
    """The toy objective (see ``_toy_objective``)."""
    return _toy_objective


@pytest.fixture
def toy_space() -> Space:
    return make_toy_space()


@pytest.fixture
def toy_optimum(toy_space: Space) -> tuple[dict[str, Any], float]:
    """Brute-force optimum of the toy objective over the toy space."""
    configs = toy_space.configs(toy_space.at_index(range(toy_space.size)))
    scored = [(_toy_objective(c).value, c) for c in configs if _toy_objective(c).feasible]
    value, config = min(scored, key=lambda vc: vc[0] or 0.0)
    assert value is not None
    return config, value
