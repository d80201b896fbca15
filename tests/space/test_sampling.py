"""Uniform sampling over valid configurations, and the index bijection (also beyond 2**63)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chisquare

from pytest_autotune.space import Bool, Interval, Permutation, Set, Space, SpaceError, build_space


def _few_thousand() -> Space:
    # One tree with very unequal subtrees (a uniform draw per level would be far from uniform)
    # times a free dimension: 2 * (tree leaves) configurations.
    n = 720
    return build_space(
        {
            "B": Interval(1, n, where=lambda B: n % B == 0),
            "T": Interval(1, n, where=lambda B, T: B % T == 0),
            "L": Interval(1, n, where=lambda B, T, L: (B // T) % L == 0),
            "F": Bool(),
        }
    )


def test_samples_are_uniform_over_valid_configurations_chi_square() -> None:
    space = _few_thousand()
    assert 500 <= space.size <= 5000
    draws = 60 * space.size
    points = space.sample(draws, np.random.default_rng(11))
    counts = np.bincount(space.index_of(points), minlength=space.size)
    assert counts.sum() == draws
    assert chisquare(counts).pvalue > 1e-4


def test_level_by_level_sampling_would_fail_the_same_test() -> None:
    # Guard that the chi-square test has power: choosing uniformly among children level by level
    # (what a naive tree walk does) is far from uniform on this space.
    space = _few_thousand()
    coords = np.random.default_rng(12).random((60 * space.size, space.n_dims))
    counts = np.bincount(space.index_of(space.from_unit(coords)), minlength=space.size)
    assert chisquare(counts).pvalue < 1e-10


def test_index_bijection_round_trips_and_orders_lexicographically() -> None:
    space = _few_thousand()
    points = space.at_index(range(space.size))
    assert space.index_of(points) == list(range(space.size))
    assert len(points.unique()) == space.size
    with pytest.raises(IndexError):
        space.at_index([space.size])
    with pytest.raises(IndexError):
        space.at_index([-1])


def test_bijection_beyond_two_to_the_63() -> None:
    space = build_space(
        {
            "a": Interval(1, 2**20),
            "b": Interval(1, 2**20),
            "c": Interval(1, 2**20, where=lambda c: c % 3 == 0),
            "d": Interval(1, 2**20),
            "p": Permutation(range(12)),
        }
    )
    assert space.size == 2**60 * (2**20 // 3) * 479001600
    indices = [0, 1, space.size - 1, space.size // 3, 2**63 + 12345, 2**70 + 7]
    points = space.at_index(indices)
    assert space.index_of(points) == indices
    assert space.contains(space.configs(points)).all()
    last = space.configs(space.at_index([space.size - 1]))[0]
    assert last == {"a": 2**20, "b": 2**20, "c": 2**20 - 1, "d": 2**20, "p": tuple(range(11, -1, -1))}


def test_free_dimensions_are_not_materialised() -> None:
    space = build_space({"x": Interval(1, 2**40), "order": Permutation(range(15)), "s": Set(1, 2)})
    assert space.size == 2**40 * 1307674368000 * 2
    configs = space.configs(space.sample(1000, np.random.default_rng(0)))
    assert space.contains(configs).all()
    assert len({c["x"] for c in configs}) > 990  # uniform over 2**40 values: no repeats expected


def test_index_bijection_refuses_real_parameters() -> None:
    from pytest_autotune.space import Real

    space = build_space({"x": Interval(1, 4), "r": Real(0.0, 1.0)})
    with pytest.raises(SpaceError):
        space.index_of(space.sample(2, np.random.default_rng(0)))
    with pytest.raises(SpaceError):
        space.at_index([0])
