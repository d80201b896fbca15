"""Acquisition optimisation: local search really moves, evaluated points are never returned."""

from __future__ import annotations

import numpy as np

from pytest_autotune.space import Interval, Points, Pow2, build_space
from pytest_autotune.strategies.bo.optimizer import AcquisitionOptimizer


def peak_score(space, target: dict[str, int]):  # type: ignore[no-untyped-def]
    """Score = minus the distance to ``target`` in value space (one sharp peak)."""

    def score(points: Points) -> np.ndarray:
        configs = space.configs(points)
        return np.array([-sum(abs(c[k] - v) for k, v in target.items()) for c in configs], dtype=float)

    return score


def test_local_search_walks_to_a_peak_the_pool_missed() -> None:
    # 10^6 configurations; 16 uniform samples almost surely miss the peak's neighbourhood.
    space = build_space({"a": Interval(0, 999), "b": Interval(0, 999)})
    target = {"a": 731, "b": 12}
    optimizer = AcquisitionOptimizer(
        space, np.random.default_rng(0), candidates=16, local_starts=4, max_steps=3000, max_expansions=10_000
    )
    empty = space.sample(0, np.random.default_rng(1))
    proposal = optimizer.maximise(peak_score(space, target), empty, set())
    assert proposal is not None
    assert space.configs(proposal.point)[0] == target
    assert proposal.score == 0.0


def test_local_search_uses_valid_neighbours_only_and_skips_evaluated() -> None:
    space = build_space({"a": Pow2(1, 1024), "b": Pow2(1, 1024, where=lambda a, b: a * b <= 1024)})
    target = {"a": 32, "b": 32}
    evaluated = space.to_points([target])
    optimizer = AcquisitionOptimizer(space, np.random.default_rng(2), candidates=8, local_starts=2)
    proposal = optimizer.maximise(peak_score(space, target), evaluated, set(evaluated.keys()))
    assert proposal is not None
    config = space.configs(proposal.point)[0]
    assert config != target
    assert config["a"] * config["b"] <= 1024
    assert proposal.score == max(
        -abs(c["a"] - 32) - abs(c["b"] - 32)
        for c in space.configs(space.at_index(range(space.size)))
        if c != target
    )


def test_empty_pool_when_everything_is_evaluated() -> None:
    space = build_space({"a": Interval(1, 4)})
    everything = space.at_index(range(space.size))
    optimizer = AcquisitionOptimizer(space, np.random.default_rng(3), candidates=16)
    score = peak_score(space, {"a": 2})
    assert optimizer.maximise(score, everything, set(everything.keys())) is None


def test_neighbourhoods_are_memoised() -> None:
    space = build_space({"a": Interval(0, 99), "b": Interval(0, 99)})
    calls: list[int] = []
    original = space.neighbours

    def counting(point: Points) -> Points:
        calls.append(1)
        return original(point)

    space.neighbours = counting  # type: ignore[method-assign]
    optimizer = AcquisitionOptimizer(space, np.random.default_rng(4), candidates=4, local_starts=1)
    point = space.sample(1, np.random.default_rng(5))
    first = optimizer.neighbours(point)
    second = optimizer.neighbours(point)
    assert len(calls) == 1
    assert first.keys() == second.keys()
