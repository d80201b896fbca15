"""The additive ridge model that orders the local search's moves, and the model-guided local search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Interval, Set, build_space
from pytest_autotune.strategies.classic.additive import AdditiveModel
from pytest_autotune.strategies.classic.local import LocalSearch


def test_gain_is_the_difference_of_primal_ridge_effects() -> None:
    """The dual solve must agree with the textbook primal ridge solution on a small one-hot design."""
    model = AdditiveModel()
    rows = [({"a": 1, "b": "x"}, 1.0), ({"a": 2, "b": "x"}, 3.0), ({"a": 2, "b": "y"}, 5.0)]
    for config, log_value in rows:
        model.add(config, math.exp(log_value))
    columns = [("a", 1), ("a", 2), ("b", "x"), ("b", "y")]
    design = np.array([[float(config[n] == v) for n, v in columns] for config, _ in rows])
    target = np.array([lv for _, lv in rows])
    target -= target.mean()
    effects = np.linalg.solve(design.T @ design + np.eye(len(columns)), design.T @ target)
    a1, a2, bx, by = effects
    assert model.gain({"a": 1, "b": "x"}, {"a": 2, "b": "x"}) == pytest.approx(a2 - a1)
    assert model.gain({"a": 1, "b": "x"}, {"a": 2, "b": "y"}) == pytest.approx(a2 - a1 + by - bx)


def test_unseen_values_have_no_effect_and_failures_rank_last() -> None:
    model = AdditiveModel()
    assert model.gain({"a": 1}, {"a": 2}) == 0.0
    model.add({"a": 1}, 2.0)
    model.add({"a": 2}, math.inf)
    gain_to_unseen = model.gain({"a": 1}, {"a": 3})
    assert gain_to_unseen == pytest.approx(-model.gain({"a": 3}, {"a": 1}))
    assert gain_to_unseen > 0.0  # a=1 has a good (negative) effect, an unseen value none
    assert model.gain({"a": 1}, {"a": 2}) > gain_to_unseen
    assert model.gain({"a": 2}, {"a": 1}) == pytest.approx(-model.gain({"a": 1}, {"a": 2}))


def test_ridge_effects_recover_an_additive_landscape_from_correlated_samples() -> None:
    """Log-fitness is a sum of per-value effects; the fitted gains must rank one-parameter moves right.

    The samples are a walk (consecutive configurations share most values), the design for which plain
    per-value means are confounded and a joint fit is needed.
    """
    rng = np.random.default_rng(5)
    names = ["p", "q", "r", "s", "t"]
    effects = {n: rng.normal(0.0, 1.0, size=6) for n in names}

    def value(config: dict[str, int]) -> float:
        return math.exp(sum(effects[n][config[n]] for n in names))

    model = AdditiveModel()
    config = {n: int(rng.integers(6)) for n in names}
    for _ in range(120):
        model.add(config, value(config))
        name = names[int(rng.integers(len(names)))]
        config = {**config, name: int(rng.integers(6))}
    base = dict.fromkeys(names, 0)
    moves = [{**base, n: v} for n in names for v in range(1, 6)]
    predicted = [model.gain(base, m) for m in moves]
    true = [math.log(value(m)) - math.log(value(base)) for m in moves]
    assert np.corrcoef(predicted, true)[0, 1] > 0.95


def test_model_order_handles_categorical_parameters_and_failures() -> None:
    space = build_space({"kind": Set("a", "b", "c"), "n": Interval(1, 6)})
    search = LocalSearch(space, rng=np.random.default_rng(0), initial=2, order="model")
    seen = set()
    for _ in range(space.size):
        point = search.ask()
        config = space.configs(point)[0]
        seen.add((config["kind"], config["n"]))
        failed = config["kind"] == "c"
        search.tell(point, Outcome.failed("runtime") if failed else Outcome.ok(float(config["n"])))
    assert len(seen) == space.size
