"""Moves of the classic strategies against brute force on the toy space."""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_autotune.space import Space
from pytest_autotune.space.base import Points
from pytest_autotune.strategies.classic.local import hamming_neighbours
from pytest_autotune.strategies.classic.moves import Neighbourhood, mix, random_walk, redraw_one, reflect_unit


def all_configs(space: Space) -> list[dict[str, Any]]:
    return space.configs(space.at_index(range(space.size)))


def differing(a: dict[str, Any], b: dict[str, Any]) -> int:
    return sum(a[k] != b[k] for k in a)


def test_hamming_neighbours_are_exactly_the_valid_one_parameter_changes(toy_space: Space) -> None:
    rng = np.random.default_rng(0)
    configs = all_configs(toy_space)
    for index in (0, 17, 55, toy_space.size - 1):
        point = toy_space.at_index([index])
        found = hamming_neighbours(toy_space, point, rng, max_values=64)
        assert found is not None
        expected = sorted(i for i, c in enumerate(configs) if differing(c, configs[index]) == 1)
        assert sorted(toy_space.index_of(found)) == expected


def test_hamming_neighbours_sample_large_domains(toy_space: Space) -> None:
    point = toy_space.at_index([0])
    found = hamming_neighbours(toy_space, point, np.random.default_rng(1), max_values=2)
    assert found is not None
    base = toy_space.configs(point)[0]
    assert all(differing(c, base) == 1 for c in toy_space.configs(found))
    assert len(found) <= 2 * len(toy_space.names)


def test_redraw_one_changes_one_parameter_and_stays_valid(toy_space: Space) -> None:
    rng = np.random.default_rng(2)
    point = toy_space.at_index([10])
    base = toy_space.configs(point)[0]
    moved = [redraw_one(toy_space, point, rng) for _ in range(50)]
    configs = [toy_space.configs(m)[0] for m in moved if m is not None]
    assert len(configs) >= 45
    assert all(differing(c, base) == 1 for c in configs)
    assert toy_space.contains(configs).all()
    assert len({tuple(c.values()) for c in configs}) > 5


def test_mix_takes_every_value_from_a_parent(toy_space: Space) -> None:
    rng = np.random.default_rng(3)
    a, b = toy_space.at_index([3]), toy_space.at_index([90])
    ca, cb = toy_space.configs(Points.concat([a, b]))
    for _ in range(20):
        child = mix(toy_space, rng, [a, b])
        if child is None:
            continue
        config = toy_space.configs(child)[0]
        assert all(config[k] in (ca[k], cb[k]) for k in config)
    assert mix(toy_space, rng, [a, a]) is None


def test_random_walk_moves_through_valid_neighbours(toy_space: Space) -> None:
    neighbours = Neighbourhood(toy_space)
    start = toy_space.at_index([40])
    ends = {random_walk(neighbours, start, np.random.default_rng(s), 0.0).keys()[0] for s in range(30)}
    assert ends == set(toy_space.neighbours(start).keys())  # jump=0: exactly one step
    assert neighbours(start) is neighbours(start)  # memoised


def test_reflect_unit_stays_in_the_unit_interval() -> None:
    folded = reflect_unit(np.array([-0.25, 0.0, 0.5, 1.0, 1.25, 2.5]))
    assert np.all((folded > 0) & (folded <= 1))
    assert folded.tolist()[2:5] == [0.5, 1.0, 0.75]
