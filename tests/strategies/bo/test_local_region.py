"""The incumbents' region: grid-aware lengthscale floors and one-parameter sweeps over all values."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_autotune.space import Categorical, Interval, Real, Set, build_space
from pytest_autotune.strategies.bo.model.encoding import Encoding
from pytest_autotune.strategies.bo.model.surrogate import GPSurrogate
from pytest_autotune.strategies.bo.optimizer import AcquisitionOptimizer


def test_grid_spacing_per_kind() -> None:
    space = build_space(
        {
            "a": Interval(1, 64),  # 64 consecutive integers on a linear scale: steps of 1/63
            "s": Set(1, 2, 4, 8),  # ordinal positions: steps of 1/3
            "c": Categorical("x", "y", "z"),
            "r": Real(0.0, 1.0),
        }
    )
    spacing = Encoding.of(space).grid_spacing()
    assert spacing == pytest.approx([1 / 63, 1 / 3, 0.0, 0.0])


def test_lengthscales_stay_above_the_grid_floor() -> None:
    # A rough function of a 16-level ordinal parameter pulls its lengthscale down; the floor holds it.
    space = build_space({"s": Set(*range(16, 272, 16)), "t": Set(1, 8)})
    encoding = Encoding.of(space)
    rng = np.random.default_rng(4)
    points = space.at_index(range(space.size))
    rough = rng.uniform(1.0, 100.0, size=16)
    values = np.array([rough[c["s"] // 16 - 1] * c["t"] for c in space.configs(points)])
    floors = encoding.grid_spacing()
    surrogate = GPSurrogate(
        encoding, priors="off", log_transform=True, rng=rng, lengthscale_floor=1.0, cold_iterations=10
    )
    surrogate.fit(encoding.features(points), values)
    lengthscales = np.array(surrogate.hyperparameters()["lengthscale"])
    assert np.all(lengthscales >= floors * (1 - 1e-6))


def test_sweeps_reach_every_value_of_each_parameter() -> None:
    space = build_space({"a": Set(*range(1, 21)), "b": Interval(0, 9), "c": Categorical("x", "y")})
    incumbent = space.to_points([{"a": 5, "b": 3, "c": "y"}])
    optimizer = AcquisitionOptimizer(space, np.random.default_rng(5), sweep=32, perturbations=0)
    region = space.configs(space.from_unit(optimizer.local_coordinates(space.to_unit(incumbent))))
    found = {tuple(c.values()) for c in region}
    for a in range(1, 21):
        assert (a, 3, "y") in found
    for b in range(10):
        assert (5, b, "y") in found
    assert (5, 3, "x") in found
    # sweeps change one parameter only
    assert all(sum(x != y for x, y in zip(key, (5, 3, "y"), strict=True)) <= 1 for key in found)


def test_local_pool_has_no_uniform_samples() -> None:
    space = build_space({"a": Interval(0, 999), "b": Interval(0, 999)})
    incumbent = space.to_points([{"a": 500, "b": 500}])
    optimizer = AcquisitionOptimizer(space, np.random.default_rng(6), candidates=512, step=0.01)
    local = space.configs(optimizer.pool(incumbent, set(incumbent.keys()), local=True))
    # every candidate keeps one coordinate or stays within a few steps of the incumbent
    assert all(c["a"] == 500 or c["b"] == 500 or abs(c["a"] - 500) + abs(c["b"] - 500) < 200 for c in local)
    assert len(optimizer.pool(incumbent, set(incumbent.keys()))) > 512
