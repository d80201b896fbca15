"""``bo:failures=...``: what failed trials teach the engine (the rows of benchmarks/ablations/failures.py)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Interval, build_space
from pytest_autotune.space.base import Space
from pytest_autotune.strategies.base import SpaceExhausted
from pytest_autotune.strategies.bo import BayesianOptimization
from pytest_autotune.strategies.bo.options import BOOptions
from pytest_autotune.strategies.bo.strategy import FAILURE_PENALTY

FAST = {"candidates": 128, "local_starts": 2, "initial": 4}


def grid() -> Space:
    return build_space({"x": Interval(0, 7), "y": Interval(0, 7)})


def objective(config: dict[str, int]) -> Outcome:
    """A bowl with its minimum at (5, 2) beside two failing regions with different causes."""
    x, y = config["x"], config["y"]
    if x >= 6 and y <= 3:
        return Outcome.failed("runtime", "too many work-items")
    if y >= 6:
        return Outcome.failed("compile", "too much local memory")
    return Outcome.ok(1.0 + (x - 5) ** 2 + (y - 2) ** 2)


def tell_all(strategy: BayesianOptimization, configs: list[dict[str, int]]) -> None:
    points = strategy.space.to_points(configs)
    for i, config in enumerate(configs):
        strategy.tell(points[i], objective(config))


FEASIBLE = [{"x": 1, "y": 1}, {"x": 3, "y": 4}, {"x": 0, "y": 5}, {"x": 4, "y": 0}, {"x": 2, "y": 2}]
FAILING = [{"x": 7, "y": 0}, {"x": 6, "y": 3}, {"x": 1, "y": 7}, {"x": 4, "y": 6}]


def test_failures_option_is_parsed_and_checked() -> None:
    assert BOOptions.parse({}).failures == "model"
    assert BOOptions.parse({"failures": " Skip "}).failure_handling == "skip"
    assert BOOptions.parse({"failures": "single_model"}).failure_handling == "single_model"
    assert BOOptions.parse({"feasibility": "off"}).failure_handling == "worst"
    assert BOOptions.parse({"feasibility": "off", "failures": "worst"}).failure_handling == "worst"
    with pytest.raises(ValueError, match="failures='never'"):
        BOOptions.parse({"failures": "never"})
    with pytest.raises(ValueError, match="feasibility='off' and failures='skip' contradict"):
        BOOptions.parse({"feasibility": "off", "failures": "skip"})
    with pytest.raises(ValueError, match="feasibility='off' and failures='model' contradict"):
        BOOptions.parse({"feasibility": "off", "failures": "model"})
    with pytest.raises(ValueError, match="feasibility='rf' and failures='worst' contradict"):
        BOOptions.parse({"feasibility": "rf", "failures": "worst"})
    with pytest.raises(ValueError, match="contradict"):
        BOOptions(feasibility="off", failures="single_model")


def test_worst_gives_failures_the_worst_value_seen_and_has_no_feasibility_model() -> None:
    strategy = BayesianOptimization(grid(), rng=np.random.default_rng(0), failures="worst", **FAST)
    assert strategy.feasibility is None
    tell_all(strategy, FEASIBLE + FAILING)
    features, values = strategy._training_data()
    worst = max(objective(c).value or 0.0 for c in FEASIBLE)
    assert len(features) == len(FEASIBLE) + len(FAILING)
    assert list(values[len(FEASIBLE) :]) == [worst] * len(FAILING)


def test_skip_learns_nothing_from_failures_but_never_proposes_them_again() -> None:
    with_failures = BayesianOptimization(grid(), rng=np.random.default_rng(3), failures="skip", **FAST)
    without = BayesianOptimization(grid(), rng=np.random.default_rng(3), failures="skip", **FAST)
    assert with_failures.feasibility is None
    tell_all(with_failures, FEASIBLE + FAILING)
    tell_all(without, FEASIBLE)
    features, values = with_failures._training_data()
    assert len(features) == len(FEASIBLE)
    assert list(values) == [objective(c).value for c in FEASIBLE]
    # The failures change nothing but the set of configurations that cannot be proposed.
    proposal = with_failures.space.configs(with_failures.ask())[0]
    assert proposal not in FAILING + FEASIBLE
    assert without.space.configs(without.ask())[0] == proposal


def test_penalty_gives_failures_kernel_tuners_fixed_penalty_which_the_log_gp_takes() -> None:
    assert BOOptions.parse({"failures": "penalty"}).failure_handling == "penalty"
    with pytest.raises(ValueError, match="feasibility='rf' and failures='penalty' contradict"):
        BOOptions.parse({"feasibility": "rf", "failures": "penalty"})
    strategy = BayesianOptimization(grid(), rng=np.random.default_rng(0), failures="penalty", **FAST)
    assert strategy.feasibility is None
    tell_all(strategy, FEASIBLE + FAILING)
    features, values = strategy._training_data()
    assert len(features) == len(FEASIBLE) + len(FAILING)
    assert list(values[len(FEASIBLE) :]) == [FAILURE_PENALTY] * len(FAILING) == [sys.float_info.max] * 4
    proposal = strategy.space.configs(strategy.ask())[0]  # the log-transformed GP fits and suggests
    assert proposal not in FEASIBLE + FAILING


@pytest.mark.parametrize("failures", ["skip", "worst", "penalty"])
def test_every_configuration_is_proposed_once_until_the_space_is_exhausted(failures: str) -> None:
    small = build_space({"x": Interval(4, 7), "y": Interval(0, 3)})  # half of it fails
    strategy = BayesianOptimization(small, rng=np.random.default_rng(1), failures=failures, **FAST)
    seen: list[dict[str, int]] = []
    for _ in range(small.size):
        config = small.configs(point := strategy.ask())[0]
        assert config not in seen
        seen.append(config)
        strategy.tell(point, objective(config))
    assert sum(not objective(c).feasible for c in seen) == 8
    with pytest.raises(SpaceExhausted):
        strategy.ask()


def test_model_splits_failure_labels_and_single_model_does_not() -> None:
    per_label = BayesianOptimization(grid(), rng=np.random.default_rng(0), **FAST)
    single = BayesianOptimization(grid(), rng=np.random.default_rng(0), failures="single_model", **FAST)
    configs = [{"x": x, "y": y} for x in range(8) for y in range(8)]
    labels = [objective(c).label for c in configs]
    assert labels.count("runtime") >= 5
    assert labels.count("compile") >= 5
    for strategy in (per_label, single):
        assert strategy.feasibility is not None
        tell_all(strategy, configs)
        strategy.feasibility.fit(np.asarray(strategy._features), strategy._labels)
    assert per_label.feasibility is not None
    assert single.feasibility is not None
    assert len(per_label.feasibility._forests) == 2
    assert len(single.feasibility._forests) == 1


def test_label_examples_sets_when_a_failure_label_gets_its_own_forest() -> None:
    assert BOOptions.parse({}).label_examples == 5
    assert BOOptions.parse({"label_examples": "1"}).label_examples == 1
    with pytest.raises(ValueError, match="label_examples"):
        BOOptions.parse({"label_examples": 0})
    eager = BayesianOptimization(grid(), rng=np.random.default_rng(0), label_examples=1, **FAST)
    patient = BayesianOptimization(grid(), rng=np.random.default_rng(0), **FAST)
    # one example of each failure label: split at once with label_examples=1, shared by default
    for strategy in (eager, patient):
        assert strategy.feasibility is not None
        tell_all(strategy, [*FEASIBLE, {"x": 7, "y": 0}, {"x": 1, "y": 7}])
        strategy.feasibility.fit(np.asarray(strategy._features), strategy._labels)
    assert eager.feasibility is not None
    assert patient.feasibility is not None
    assert len(eager.feasibility._forests) == 2
    assert len(patient.feasibility._forests) == 1
