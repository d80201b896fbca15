"""The initial design: distinct valid configurations spread over the unit coordinates."""

from __future__ import annotations

import numpy as np

from pytest_autotune.space import Interval, Pow2, build_space
from pytest_autotune.strategies.bo.design import default_design_size, latin_hypercube_design


def test_design_size_grows_with_dimension_within_bounds() -> None:
    assert default_design_size(1) == 4
    assert default_design_size(15) == 4
    assert default_design_size(24) == 6
    assert default_design_size(39) == 10
    assert default_design_size(100) == 10


def test_design_is_distinct_valid_and_stratified() -> None:
    space = build_space({"x": Interval(0, 99), "y": Interval(0, 99)})
    design = latin_hypercube_design(space, 10, np.random.default_rng(0))
    assert len(design) == 10
    assert len(set(design.keys())) == 10
    configs = space.configs(design)
    assert all(space.contains(configs))
    # Latin hypercube: one point per tenth of each coordinate
    assert sorted(c["x"] // 10 for c in configs) == list(range(10))
    assert sorted(c["y"] // 10 for c in configs) == list(range(10))


def test_design_respects_constraints_and_exclusions() -> None:
    space = build_space(
        {"a": Pow2(1, 64), "b": Pow2(1, 64, where=lambda a, b: a * b <= 64)},
    )
    first = latin_hypercube_design(space, 6, np.random.default_rng(1))
    second = latin_hypercube_design(space, 6, np.random.default_rng(2), exclude=set(first.keys()))
    assert all(space.contains(space.configs(second)))
    assert not set(first.keys()) & set(second.keys())


def test_small_space_gives_all_it_has() -> None:
    space = build_space({"a": Interval(1, 3)})
    design = latin_hypercube_design(space, 10, np.random.default_rng(3))
    assert sorted(c["a"] for c in space.configs(design)) == [1, 2, 3]


def _smallest_gap(points: np.ndarray) -> float:
    diff = points[:, None, :] - points[None, :, :]
    dist = np.sqrt((diff * diff).sum(-1))
    return float(dist[np.triu_indices(len(points), 1)].min())


def test_maximin_design_spreads_configurations_further() -> None:
    space = build_space({"a": Pow2(1, 64), "b": Pow2(1, 64, where=lambda a, b: a * b <= 64)})

    def features(points: object) -> np.ndarray:
        return np.asarray(space.features(points), dtype=np.float64)  # type: ignore[arg-type]

    gaps = {}
    for tries in (1, 16):
        found = []
        for seed in range(8):
            design = latin_hypercube_design(
                space, 5, np.random.default_rng(seed), tries=tries, features=features
            )
            assert len(design) == 5
            assert all(space.contains(space.configs(design)))
            found.append(_smallest_gap(features(design)))
        gaps[tries] = found
    # Each maximin design is at least as spread as the first draw of the same seed (its first try).
    assert all(m >= p for m, p in zip(gaps[16], gaps[1], strict=True))
    assert np.mean(gaps[16]) > np.mean(gaps[1]) + 0.05


def test_one_try_draws_the_plain_design() -> None:
    space = build_space({"x": Interval(0, 99), "y": Interval(0, 99)})
    plain = latin_hypercube_design(space, 6, np.random.default_rng(5))
    one = latin_hypercube_design(
        space, 6, np.random.default_rng(5), tries=1, features=lambda p: np.zeros((6, 1))
    )
    assert plain.keys() == one.keys()
