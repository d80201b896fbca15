"""The tuning loop: dedup, exhaustion, maximisation, objective errors, results."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Interval, Space, build_space
from pytest_autotune.space.base import Points
from pytest_autotune.strategies.base import Strategy
from pytest_autotune.tuning.abort import Cost, Duration, ValidEvaluations
from pytest_autotune.tuning.tuner import DEFAULT_STRATEGY, MAX_KNOWN_PROPOSALS, Tuner


class Stubborn(Strategy):
    """Always proposes index 0; records every tell."""

    name: ClassVar[str] = "stubborn"

    def __init__(self, space: Space, *, rng: np.random.Generator) -> None:
        super().__init__(space, rng=rng)
        self.asks = 0
        self.told: list[tuple[Any, Outcome]] = []

    def ask(self) -> Points:
        self.asks += 1
        return self.space.at_index([0])

    def tell(self, point: Points, outcome: Outcome) -> None:
        self.told.append((point.keys()[0], outcome))


Objective = Callable[[dict[str, Any]], Outcome]


def line_space(n: int = 10) -> Space:
    return build_space({"i": Interval(0, n - 1)})


def test_no_configuration_is_evaluated_twice(toy_space: Space, toy_objective: Objective) -> None:
    strategy = Stubborn(toy_space, rng=np.random.default_rng(0))
    evaluated: list[tuple[Any, ...]] = []

    def objective(config: dict[str, Any]) -> Outcome:
        evaluated.append(tuple(config.values()))
        return toy_objective(config)

    result = Tuner(toy_space, strategy, abort=40, seed=3).run(objective)
    assert result.evaluations == 40
    assert len(set(evaluated)) == 40
    # After the first trial every proposal is known: the recorded outcome is told again
    # (bounded per ask) and the tuner draws unseen configurations instead.
    first = strategy.told[0]
    retold = [t for t in strategy.told[1:] if t[0] == first[0]]
    assert len(retold) == 39 * MAX_KNOWN_PROPOSALS
    assert all(t[1] == first[1] for t in retold)


def test_exhaustion_ends_the_run_with_every_configuration_once(
    toy_space: Space, toy_objective: Objective
) -> None:
    seen: Counter[tuple[Any, ...]] = Counter()

    def objective(config: dict[str, Any]) -> Outcome:
        seen[tuple(config.values())] += 1
        return toy_objective(config)

    tuner = Tuner(toy_space, Stubborn(toy_space, rng=np.random.default_rng(1)), abort=10_000, seed=0)
    result = tuner.run(objective)
    assert result.evaluations == toy_space.size
    assert len(seen) == toy_space.size
    assert set(seen.values()) == {1}
    assert result.exhausted
    assert tuner.done
    assert tuner.ask() is None


def test_maximize_negates_for_the_strategy_only() -> None:
    space = line_space()
    strategy = Stubborn(space, rng=np.random.default_rng(0))
    tuner = Tuner(space, strategy, abort=10, seed=0, maximize=True)
    result = tuner.run(lambda c: float(c["i"] * 2))
    assert result.best_value == 18.0
    assert result.best_config == {"i": 9}
    assert all(r.outcome.value == 2 * r.config["i"] for r in result.history)
    told_values = {k: o.value for k, o in strategy.told}
    assert told_values[(9,)] == -18.0
    assert [r.outcome.value for r in result.top(2)] == [18.0, 16.0]


def test_result_counts_every_label(
    toy_space: Space, toy_optimum: tuple[dict[str, Any], float], toy_objective: Objective
) -> None:
    result = Tuner(toy_space, "exhaustive", abort=10_000, seed=0).run(toy_objective)
    assert set(result.counts) == {"ok", "correctness", "compile", "runtime", "timeout", "constraints"}
    assert result.counts["correctness"] == 0
    assert result.counts["timeout"] == 0
    expected = Counter(toy_objective(r.config).label for r in result.history)
    assert {k: v for k, v in result.counts.items() if v} == dict(expected)
    assert sum(result.counts.values()) == result.evaluations == toy_space.size
    assert (result.best_config, result.best_value) == toy_optimum
    top = result.top(3)
    assert [r.outcome.value for r in top] == sorted(r.outcome.value or 0 for r in top)
    assert top[0].config == toy_optimum[0]
    assert result.strategy == "exhaustive"
    assert result.seed == 0
    assert result.space_size == toy_space.size


def test_ask_tell_by_hand_and_misuse() -> None:
    tuner = Tuner(line_space(), "random", abort=3, seed=5)
    trial = tuner.ask()
    assert trial is not None
    assert trial.number == 0
    assert trial.config == tuner.space.configs(trial.point)[0]
    record = tuner.tell(trial, 1.5, seconds=0.25)
    assert record.eval_seconds == 0.25
    assert record.outcome == Outcome.ok(1.5)
    with pytest.raises(ValueError, match="trial 0 was not asked from this tuner, or was already told"):
        tuner.tell(trial, 2.0)
    second = tuner.ask()
    assert second is not None
    with pytest.raises(TypeError, match="must return a number or an Outcome"):
        tuner.tell(second, "fast")  # type: ignore[arg-type]
    tuner.tell(second, float("nan"))
    assert tuner.result.counts["runtime"] == 1
    third = tuner.ask()
    assert third is not None
    assert tuner.ask() is None
    tuner.cancel(third)
    assert not tuner.done


def test_objective_errors_raise_or_are_recorded() -> None:
    def flaky(config: dict[str, Any]) -> float:
        if config["i"] % 2:
            raise RuntimeError("kernel crashed")
        return float(config["i"])

    tuner = Tuner(line_space(), "exhaustive", abort=10, seed=0)
    with pytest.raises(RuntimeError, match="kernel crashed"):
        tuner.run(flaky)
    assert tuner.result.evaluations == 1
    assert not tuner._ledger.pending
    result = Tuner(line_space(), "exhaustive", abort=10, seed=0).run(flaky, errors="record")
    assert result.counts["runtime"] == 5
    assert result.counts["ok"] == 5
    assert "RuntimeError: kernel crashed" in result.history[1].outcome.detail


def test_abort_conditions_are_honoured() -> None:
    space = line_space(50)
    result = Tuner(space, "exhaustive", abort=ValidEvaluations(3), seed=0).run(
        lambda c: Outcome.failed("runtime") if c["i"] < 4 else float(c["i"])
    )
    assert result.evaluations == 7
    assert result.counts["ok"] == 3
    result = Tuner(space, "exhaustive", abort=Cost(2.0) | 40, seed=0).run(lambda c: float(10 - c["i"]))
    assert result.best_value == 2.0
    assert result.evaluations == 9

    def slow(config: dict[str, Any]) -> float:
        time.sleep(0.01)
        return float(config["i"])

    result = Tuner(space, "random", abort=Duration(0.05), seed=0).run(slow)
    assert result.duration_s >= 0.05
    assert 1 <= result.evaluations < 50


def test_construction_errors(toy_space: Space) -> None:
    with pytest.raises(ValueError, match=r"unknown strategy 'nope'; available: .*random"):
        Tuner(toy_space, "nope")
    with pytest.raises(ValueError, match="strategy 'random': unknown option\\(s\\) speed; accepted: none"):
        Tuner(toy_space, "random", strategy_options={"speed": 2})
    with pytest.raises(ValueError, match="strategy_options apply only"):
        Tuner(toy_space, Stubborn(toy_space, rng=np.random.default_rng(0)), strategy_options={"a": 1})
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        Tuner(toy_space, "random", seed=-1)
    with pytest.raises(TypeError, match="expected a Space"):
        Tuner({"x": [1, 2]}, "random")  # type: ignore[arg-type]
    assert DEFAULT_STRATEGY == "bo"


def test_seed_none_draws_and_records_a_seed(toy_space: Space, toy_objective: Objective) -> None:
    first = Tuner(toy_space, "random", abort=20).run(toy_objective)
    again = Tuner(toy_space, "random", abort=20, seed=first.seed).run(toy_objective)
    assert [r.config for r in again.history] == [r.config for r in first.history]
