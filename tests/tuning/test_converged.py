"""Stop when converged: the strategy's expected gain over the budget left, and bo's own."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pytest_autotune import Interval, Tuner, build_space
from pytest_autotune.outcome import Outcome
from pytest_autotune.space.base import Points
from pytest_autotune.strategies.base import Strategy
from pytest_autotune.testing import bowl

# bo's engine (torch) is imported while this module is collected: a pytester run inside the same
# xdist worker restores sys.modules afterwards, and torch cannot be imported a second time in a
# process once it was dropped from there.
pytest.importorskip("torch")
pytest.importorskip("pytest_autotune.strategies.bo")
from pytest_autotune.tuning.abort import Duration, Evaluations, TuningState, budget_left, converged


def _state(evaluations: int, elapsed: float = 0.0, size: int | None = 1000) -> TuningState:
    return TuningState(evaluations, evaluations, elapsed, size)


def test_the_budget_left_is_counted_or_extrapolated_from_its_progress() -> None:
    assert budget_left(Evaluations(100), _state(30)) == 70
    assert budget_left(Evaluations(100), _state(100)) == 0
    assert budget_left(Duration(60), _state(10, elapsed=20.0)) == pytest.approx(20)  # at 2 s a trial
    assert budget_left(Evaluations(100), _state(30, size=40)) == 10  # what the space still holds
    assert budget_left(Evaluations(100) & Duration(60), _state(0)) == 1  # no progress to tell: one


def test_converged_when_the_gain_over_the_budget_left_is_below_the_fraction() -> None:
    assert converged(1e-4, 0.01, 70)  # 0.7 %
    assert not converged(2e-4, 0.01, 70)  # 1.4 %
    assert not converged(None, 0.01, 70)  # no model yet
    assert not converged(0.0, 0.0, 70)  # the rule is off
    assert not converged(math.nan, 0.01, 70)


class Sweep(Strategy):
    """Proposes the configurations in index order; its "model" expects ``gains[n]`` at trial n."""

    name = "sweep"

    def __init__(self, space: Any, *, rng: np.random.Generator, gains: list[float | None]) -> None:
        super().__init__(space, rng=rng)
        self.gains = gains
        self.told = 0
        self.converge = 0.01

    def ask(self) -> Points:
        self.expected_gain = self.gains[self.told] if self.told < len(self.gains) else None
        return self.space.at_index([self.told])

    def tell(self, point: Points, outcome: Outcome) -> None:
        self.told += 1


def test_the_tuner_stops_when_its_strategy_converged_and_says_so() -> None:
    space = build_space({"A": Interval(1, 50)})
    # budget 20: at trial 5 (15 left) 1e-3 sums to 1.5 %, at trial 6 (14 left) 5e-4 to 0.7 %
    strategy = Sweep(space, rng=np.random.default_rng(0), gains=[None] * 5 + [1e-3, 5e-4])
    tuner = Tuner(space, strategy, abort=20, seed=0)
    result = tuner.run(lambda config: float(config["A"]))
    assert result.evaluations == 6
    assert result.converged
    assert tuner.converged
    assert tuner.ask() is None  # stays stopped


def test_bo_stops_once_converged_with_the_trials_of_a_run_without_the_rule() -> None:
    space = build_space({"A": Interval(1, 8), "B": Interval(1, 8)})
    stopped = Tuner(space, "bo", abort=30, seed=1).run(bowl)
    assert stopped.converged
    assert stopped.evaluations < 20
    assert stopped.best_value == pytest.approx(bowl({"A": 3, "B": 3}))  # the optimum: nothing lost
    full = Tuner(space, "bo", abort=stopped.evaluations + 2, seed=1, strategy_options={"converge": 0})
    result = full.run(bowl)
    assert not result.converged
    assert result.evaluations == stopped.evaluations + 2
    assert [r.config for r in result.history[: stopped.evaluations]] == [r.config for r in stopped.history]
