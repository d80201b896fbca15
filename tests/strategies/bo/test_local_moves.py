"""Local moves of issue 39: plateau and distinct incumbents, recombinations, tabu neighbourhood moves."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Categorical, Interval, Set, build_space
from pytest_autotune.space.base import Points
from pytest_autotune.strategies.bo import BayesianOptimization
from pytest_autotune.strategies.bo.optimizer import AcquisitionOptimizer
from pytest_autotune.strategies.bo.options import BOOptions

SPACE = {"x": Interval(0, 20), "y": Interval(0, 20), "m": Categorical("a", "b")}


def _told(trials: list[tuple[dict[str, object], float]], **options: Any) -> BayesianOptimization:
    space = build_space(SPACE)
    strategy = BayesianOptimization(space, rng=np.random.default_rng(0), initial=1, **options)
    for config, value in trials:
        strategy.tell(space.to_points([config]), Outcome.ok(value))
    return strategy


#: A basin around (10, 10, a) with its best at 1.0, and a second basin's best at (2, 18, b).
TWO_BASINS: list[tuple[dict[str, object], float]] = [
    ({"x": 10, "y": 10, "m": "a"}, 1.0),
    ({"x": 11, "y": 10, "m": "a"}, 1.01),
    ({"x": 10, "y": 11, "m": "a"}, 1.02),
    ({"x": 9, "y": 10, "m": "a"}, 1.03),
    ({"x": 10, "y": 9, "m": "a"}, 1.04),
    ({"x": 2, "y": 18, "m": "b"}, 1.5),
    ({"x": 20, "y": 0, "m": "a"}, 3.0),
]


def _configs(strategy: BayesianOptimization, points: Points) -> list[tuple[object, ...]]:
    return [tuple(c.values()) for c in strategy.space.configs(points)]


def test_options_parse_and_validate_the_local_move_settings() -> None:
    options = BOOptions.parse(
        {"plateau": "0.05", "incumbent_radius": "3", "recombine": "64", "tabu_every": "3", "tabu_tenure": "1"}
    )
    assert (options.plateau, options.incumbent_radius, options.recombine) == (0.05, 3, 64)
    assert (options.tabu_every, options.tabu_tenure) == (3, 1)
    defaults = BOOptions()
    off = (defaults.plateau, defaults.incumbent_radius, defaults.recombine, defaults.tabu_every)
    assert off == (0, 0, 0, 0)
    with pytest.raises(ValueError, match="plateau"):
        BOOptions.parse({"plateau": 2.0})
    with pytest.raises(ValueError, match="tabu_every"):
        BOOptions.parse({"tabu_every": -1})


def test_default_incumbents_are_the_three_best() -> None:
    strategy = _told(TWO_BASINS)
    assert _configs(strategy, strategy._incumbents()) == [(10, 10, "a"), (11, 10, "a"), (10, 11, "a")]


def test_plateau_widens_the_incumbents_to_the_near_best() -> None:
    strategy = _told(TWO_BASINS, plateau=0.035)  # within 3.5 % of 1.0: the four best
    assert _configs(strategy, strategy._incumbents()) == [
        (10, 10, "a"),
        (11, 10, "a"),
        (10, 11, "a"),
        (9, 10, "a"),
    ]


def test_incumbent_radius_keeps_a_second_basin() -> None:
    strategy = _told(TWO_BASINS, incumbent_radius=2)
    # the best's neighbours differ in one parameter only; the next distinct ones are the other basins
    assert _configs(strategy, strategy._incumbents()) == [(10, 10, "a"), (2, 18, "b"), (20, 0, "a")]


def test_recombinations_copy_each_coordinate_from_a_centre_but_one() -> None:
    space = build_space({"a": Set(*range(1, 21)), "b": Interval(0, 9), "c": Categorical("x", "y")})
    optimizer = AcquisitionOptimizer(space, np.random.default_rng(1), recombine=200)
    centres = space.to_unit(space.to_points([{"a": 5, "b": 3, "c": "y"}, {"a": 17, "b": 8, "c": "x"}]))
    coords = optimizer.recombinations(centres)
    assert coords.shape == (200, 3)
    copied = np.isclose(coords[:, None, :], centres[None, :, :]).any(axis=1)
    assert np.all(copied.sum(axis=1) >= 2)  # at most one coordinate redrawn per row
    mixed = space.configs(space.from_unit(coords))
    assert {"a": 5, "b": 8, "c": "x"} in mixed  # a mix of both centres, not either one


def test_one_parameter_moves_are_unevaluated_and_change_one_parameter() -> None:
    space = build_space({"a": Set(*range(1, 21)), "b": Interval(0, 9), "c": Categorical("x", "y")})
    optimizer = AcquisitionOptimizer(space, np.random.default_rng(2))
    centre = space.to_points([{"a": 5, "b": 3, "c": "y"}])
    evaluated = set(space.to_points([{"a": 6, "b": 3, "c": "y"}, {"a": 5, "b": 3, "c": "y"}]).keys())
    moves = [tuple(c.values()) for c in space.configs(optimizer.one_parameter_moves(centre, evaluated))]
    assert len(moves) == len(set(moves)) == 18 + 9 + 1  # all values of each parameter but the told ones
    assert (6, 3, "y") not in moves
    assert all(sum(m != c for m, c in zip(move, (5, 3, "y"), strict=True)) == 1 for move in moves)


def test_tabu_moves_rotate_to_the_next_centre() -> None:
    strategy = _told(TWO_BASINS, tabu_every=1, tabu_tenure=1)

    def prefer_small_y(points: Points) -> np.ndarray:
        return -np.array([c["y"] for c in strategy.space.configs(points)], dtype=np.float64)

    first = strategy._tabu_move(prefer_small_y)
    assert first is not None
    assert _configs(strategy, first) == [(10, 0, "a")]  # a move of the best, which is now tabu
    strategy.tell(first, Outcome.ok(5.0))
    second = strategy._tabu_move(prefer_small_y)
    assert second is not None
    assert _configs(strategy, second) == [(11, 0, "a")]  # a move of the second best
    strategy.tell(second, Outcome.ok(5.0))
    third = strategy._tabu_move(prefer_small_y)  # tenure 1: the best is a centre again
    assert third is not None
    assert _configs(strategy, third) == [(10, 1, "a")]


def test_tabu_steps_replace_every_kth_model_based_suggestion() -> None:
    space = build_space(SPACE)
    strategy = BayesianOptimization(space, rng=np.random.default_rng(0), initial=1, tabu_every=2)
    for config, value in TWO_BASINS:
        strategy.tell(space.to_points([config]), Outcome.ok(value))
    centres = [(10, 10, "a"), (11, 10, "a")]
    proposals = []
    for _ in range(5):
        point = strategy.ask()
        proposals.append(_configs(strategy, point)[0])
        strategy.tell(point, Outcome.ok(9.0))
    # after the design's point, the second and fourth model-based suggestions are one-parameter
    # moves of the best, then of the second best (the best is tabu)
    for proposal, centre in zip((proposals[2], proposals[4]), centres, strict=True):
        assert sum(p != c for p, c in zip(proposal, centre, strict=True)) == 1, (proposal, centre)
