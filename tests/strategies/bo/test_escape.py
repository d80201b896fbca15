"""Escape steps: stall counting, parameter distances, and proposals away from the incumbents."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Categorical, Interval, Permutation, build_space
from pytest_autotune.strategies.bo import BayesianOptimization
from pytest_autotune.strategies.bo.escape import changed_parameters, trials_since_gain
from pytest_autotune.strategies.bo.options import BOOptions


@pytest.mark.parametrize(
    ("values", "gain", "expected"),
    [
        ([], 0.05, 0),
        ([5.0], 0.05, 0),
        ([5.0, 4.0, 4.0, 4.0], 0.05, 2),  # the gain was the second trial
        ([5.0, 4.9, 4.85], 0.05, 2),  # 2% and 1% steps are no gain at 5%
        ([5.0, 4.9, 4.85], 0.0, 0),  # ... but any step is one at 0
        ([None, None, 3.0, None, 2.0, 2.5], 0.05, 1),  # failures count as trials without gain
        ([None, None], 0.05, 2),
        ([-1.0, -1.2, -1.21], 0.05, 1),  # relative to the magnitude of a negative objective
    ],
)
def test_trials_since_gain(values: list[float | None], gain: float, expected: int) -> None:
    assert trials_since_gain(values, gain) == expected


def test_changed_parameters_counts_differing_parameters_of_every_kind() -> None:
    space = build_space(
        {"n": Interval(0, 7), "c": Categorical("x", "y"), "p": Permutation("abc")},
    )
    points = space.to_points(
        [
            {"n": 3, "c": "x", "p": ("a", "b", "c")},
            {"n": 4, "c": "x", "p": ("a", "b", "c")},
            {"n": 4, "c": "y", "p": ("c", "b", "a")},
        ]
    )
    counts = changed_parameters(space.feature_blocks, space.features(points), space.features(points[:2]))
    np.testing.assert_array_equal(counts, [[0, 1], [1, 0], [3, 2]])


def test_options_validate_escape_settings() -> None:
    assert BOOptions.parse({"escape_after": "0"}).escape_after == 0
    with pytest.raises(ValueError, match="escape_radius"):
        BOOptions.parse({"escape_radius": 0})
    with pytest.raises(ValueError, match="escape_gain"):
        BOOptions.parse({"escape_gain": 2.0})


def _stalled_strategy(escape_after: int) -> BayesianOptimization:
    """A strategy told a bowl around (10, 10, 'a'): its design point, the best trial, then nine worse."""
    space = build_space({"x": Interval(0, 20), "y": Interval(0, 20), "m": Categorical("a", "b")})
    strategy = BayesianOptimization(
        space,
        rng=np.random.default_rng(3),
        escape_after=escape_after,
        escape_radius=3,  # away means every parameter changed: the plain step stays on m="a"
        local_every=0,
        initial=1,
        candidates=256,
        local_starts=4,
    )
    strategy.tell(strategy.ask(), Outcome.ok(100.0))  # the design's one point, far worse than the rest
    configs: list[dict[str, object]] = [{"x": 10, "y": 10, "m": "a"}]
    configs += [{"x": 10 + dx, "y": 10 + dy, "m": "a"} for dx, dy in [(1, 0), (0, 1), (-1, 0), (0, -1)]]
    configs += [{"x": x, "y": y, "m": "b"} for x, y in [(0, 0), (20, 20), (0, 20), (20, 0), (5, 15)]]
    for config in configs:
        value = 1.0 + ((config["x"] - 10) ** 2 + (config["y"] - 10) ** 2) / 50  # type: ignore[operator]
        value += 0.5 if config["m"] == "b" else 0.0
        strategy.tell(space.to_points([config]), Outcome.ok(value))
    return strategy


def test_a_stalled_run_proposes_away_from_its_incumbents() -> None:
    strategy = _stalled_strategy(escape_after=5)
    incumbents = strategy.space.configs(strategy._incumbents())
    proposal = strategy.space.configs(strategy.ask())[0]
    for incumbent in incumbents:
        assert all(proposal[n] != incumbent[n] for n in ("x", "y", "m")), (proposal, incumbents)


def test_no_escape_before_the_stall_is_long_enough() -> None:
    # Nine trials since the last gain: with escape_after=10 the step is the plain one (escape off).
    waiting = _stalled_strategy(escape_after=10)
    off = _stalled_strategy(escape_after=0)
    escaping = _stalled_strategy(escape_after=9)
    plain = off.space.configs(off.ask())
    assert waiting.space.configs(waiting.ask()) == plain
    assert plain[0]["m"] == "a"
    assert escaping.space.configs(escaping.ask())[0]["m"] == "b"
