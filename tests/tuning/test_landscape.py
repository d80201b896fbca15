"""The landscape measures of ``benchmarks/strategy/landscape.py`` on hand-checked examples."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.strategy import landscape


def test_neighbours_differ_in_exactly_one_parameter() -> None:
    rows = [(1, "a"), (1, "b"), (2, "a"), (2, "b"), (3, "c")]
    neighbours = landscape.one_parameter_neighbours(rows)
    assert [n.tolist() for n in neighbours] == [[1, 2], [0, 3], [0, 3], [1, 2], []]


def test_neighbours_agree_with_the_local_search_moves() -> None:
    from pytest_autotune.space import Set, build_space
    from pytest_autotune.strategies.classic.local import hamming_neighbours

    space = build_space(
        {"a": Set(1, 2, 4, 8), "b": Set(1, 2, 4), "c": Set(0, 1)}, ["a * b <= 16", "c == 0 or a > 1"]
    )
    every = space.at_index(list(range(space.size)))
    configs = space.configs(every)
    neighbours = landscape.one_parameter_neighbours([tuple(c.values()) for c in configs])
    rng = np.random.default_rng(0)
    for i in range(space.size):
        moves = hamming_neighbours(space, every[i], rng, max_values=100)
        expected = [] if moves is None else sorted(space.index_of(moves))
        assert neighbours[i].tolist() == expected, configs[i]


def test_steepest_descent_follows_the_best_better_neighbour() -> None:
    # A line of seven configurations, each next to the one before and after: two valleys (1 and 5)
    # and a failure at 4.
    values = np.array([3.0, 1.0, 2.0, 4.0, math.inf, 0.5, 0.9])
    line = [np.array([j for j in (i - 1, i + 1) if 0 <= j < 7], dtype=np.int64) for i in range(7)]
    assert landscape.descent_ends(values, line).tolist() == [1, 1, 1, 1, 4, 5, 5]


def test_one_parameter_makes_every_configuration_a_neighbour() -> None:
    values = np.array([3.0, 1.0, 2.0, 4.0, math.inf, 0.5, 0.9])
    result = landscape.analyse("line", values, [(i,) for i in range(7)])
    assert (result.minima, result.basin, result.near) == (1, 1.0, 1)
    assert result.best_neighbour == pytest.approx(0.5 / 0.9)


def test_basin_counts_the_starts_that_walk_down_to_the_best() -> None:
    # Two parameters, x in 0..3 and y in 0..1; neighbours share y (the row) or x (the column).
    #   y = 0:  1.0  5.0  9.0  6.0     (0, 0) is a second local minimum
    #   y = 1:  5.0  5.0  9.0  0.5     (3, 1) is the optimum
    table = {0: [1.0, 5.0, 9.0, 6.0], 1: [5.0, 5.0, 9.0, 0.5]}
    rows = [(x, y) for y in (0, 1) for x in range(4)]
    values = np.array([table[y][x] for x, y in rows])
    result = landscape.analyse("two valleys", values, rows)
    # Row y = 1 sees the optimum; (3, 0) sees it in its column; (1, 0) and (2, 0) descend to (0, 0).
    assert result.basin == pytest.approx(5 / 8)
    assert result.minima == 2
    assert result.near == 1
    assert result.best_neighbour == pytest.approx(0.5 / 5.0)
    assert result.random[-1] == 1.0  # 100 evaluations cover the eight configurations
