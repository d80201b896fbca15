"""The bo strategy end to end: beats random search, avoids failures (the contract: test_conformance.py)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Categorical, Interval, build_space
from pytest_autotune.strategies import get_strategy
from pytest_autotune.strategies.bo import BayesianOptimization
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.tuner import Tuner

FAST = {"candidates": 256, "local_starts": 4}


def synthetic_space():  # type: ignore[no-untyped-def]
    return build_space({"x": Interval(0, 63), "y": Interval(0, 63), "mode": Categorical("a", "b", "c")})


OPTIMUM = {"x": 45, "y": 12, "mode": "b"}


def synthetic_objective(config: dict) -> Outcome:  # type: ignore[type-arg]
    """A smooth bowl whose optimum sits next to a hidden infeasible region (x > 47, y < 30)."""
    x, y = config["x"], config["y"]
    if x > 47 and y < 30:
        return Outcome.failed("runtime", "out of resources")
    offset = {"a": 0.3, "b": 0.0, "c": 0.6}[config["mode"]]
    return Outcome.ok(1.0 + ((x - 45) / 20) ** 2 + ((y - 12) / 20) ** 2 + offset)


def evaluations_to_optimum(strategy: str, seed: int, budget: int) -> tuple[int, int]:
    """(evaluations until the optimum was measured or budget + 1, failed evaluations)."""
    space = synthetic_space()
    options = FAST if strategy == "bo" else {}
    tuner = Tuner(space, strategy, abort=Evaluations(budget), seed=seed, strategy_options=options)
    result = tuner.run(synthetic_objective)
    found = budget + 1
    for number, record in enumerate(result.history, start=1):
        if record.config == OPTIMUM:
            found = number
            break
    failures = sum(not record.outcome.feasible for record in result.history)
    return found, failures


def test_bo_finds_the_optimum_much_faster_than_random_and_fails_less() -> None:
    budget, seeds = 50, (0, 1, 2)
    bo = [evaluations_to_optimum("bo", s, budget) for s in seeds]
    random_found = [evaluations_to_optimum("random", s, budget)[0] for s in seeds]
    bo_found = [found for found, _ in bo]
    # 12,288 configurations: random search almost never meets the optimum within 50 draws.
    assert all(found <= budget for found in bo_found), bo_found
    assert np.mean(bo_found) + 15 < np.mean(random_found), (bo_found, random_found)
    # Random search fails in proportion to the infeasible share of the space (11.7 % here);
    # BO, whose optimum borders that region, must still fail clearly less often.
    space = synthetic_space()
    configs = space.configs(space.at_index(range(space.size)))
    random_share = np.mean([not synthetic_objective(c).feasible for c in configs])
    bo_share = sum(failures for _, failures in bo) / (budget * len(seeds))
    assert bo_share < 0.8 * random_share, (bo_share, random_share)


def test_registry_name_and_string_options() -> None:
    assert get_strategy("bo") is BayesianOptimization
    strategy = BayesianOptimization(
        synthetic_space(), rng=np.random.default_rng(0), feasibility="off", log_transform="false"
    )
    assert strategy.feasibility is None
    assert strategy.options.log_transform is False
    with pytest.raises(TypeError, match="unknown options"):
        BayesianOptimization(synthetic_space(), rng=np.random.default_rng(0), acquisition="ucb")


def test_feasibility_off_feeds_failures_as_the_worst_value() -> None:
    strategy = BayesianOptimization(synthetic_space(), rng=np.random.default_rng(0), feasibility="off")
    space = strategy.space
    points = space.to_points([{"x": 1, "y": 1, "mode": "a"}, {"x": 60, "y": 1, "mode": "a"}, OPTIMUM])
    for i, outcome in enumerate([Outcome.ok(3.0), Outcome.failed("compile"), Outcome.ok(1.0)]):
        strategy.tell(points[i], outcome)
    features, values = strategy._training_data()
    assert len(features) == 3
    assert list(values) == [3.0, 3.0, 1.0]
    on = BayesianOptimization(synthetic_space(), rng=np.random.default_rng(0))
    for i, outcome in enumerate([Outcome.ok(3.0), Outcome.failed("compile"), Outcome.ok(1.0)]):
        on.tell(points[i], outcome)
    assert list(on._training_data()[1]) == [3.0, 1.0]


def test_importing_the_strategy_module_is_light() -> None:
    code = (
        "import sys; import pytest_autotune.strategies.bo; "
        "print(sorted(m for m in ('torch', 'gpytorch', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
