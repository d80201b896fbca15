"""The finalist rounds: a finalist far worse than the best after the first round measures no more."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from pytest_autotune.plugin.modes.tune import FINALIST_ROUNDS, OUTCLASSED, _remeasure
from pytest_autotune.plugin.workers.runner import BodyRun


class Runner:
    """A trial runner whose configuration ``{"A": a}`` measures ``a`` seconds; counts the calls."""

    def __init__(self) -> None:
        self.calls: Counter[float] = Counter()

    def __call__(self, config: dict[str, Any], repeat: int) -> BodyRun:
        self.calls[config["A"]] += 1
        return BodyRun(config, (float(config["A"]),) * repeat)


FINALISTS: list[dict[str, Any]] = [{"A": 1}, {"A": 1.5}, {"A": 2 * OUTCLASSED}]


def test_an_outclassed_finalist_is_measured_in_the_first_round_only() -> None:
    runner = Runner()
    measured = _remeasure(runner, FINALISTS)
    assert runner.calls == {1: FINALIST_ROUNDS, 1.5: FINALIST_ROUNDS, 2 * OUTCLASSED: 1}
    assert [len(rounds) for rounds in measured.values()] == [FINALIST_ROUNDS, FINALIST_ROUNDS, 1]
    assert measured[2][0][0] == 2 * OUTCLASSED  # its one round still says how many times worse


def test_the_committed_configuration_is_measured_in_every_round_however_slow() -> None:
    runner = Runner()
    _remeasure(runner, FINALISTS, keep=2)
    assert runner.calls[2 * OUTCLASSED] == FINALIST_ROUNDS


@pytest.mark.parametrize(("maximize", "dropped"), [(False, 1.25 * OUTCLASSED), (True, 1)])
def test_worse_is_the_objectives_direction(maximize: bool, dropped: float) -> None:
    runner = Runner()
    _remeasure(runner, [{"A": 1}, {"A": 0.75 * OUTCLASSED}, {"A": 1.25 * OUTCLASSED}], maximize=maximize)
    assert runner.calls[dropped] == 1
    assert sum(n == FINALIST_ROUNDS for n in runner.calls.values()) == 2


CONVERGING = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 8, default=1), B=Interval(1, 8, default=1), strategy="bo", budget=30, seed=1)
def test_k(autotune):
    autotune.measure(lambda: None)
"""


def test_a_search_that_converged_stops_before_its_budget_and_says_so(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=CONVERGING)
    # in a subprocess: the Bayesian engine's libraries cannot be loaded twice in one process,
    # and an in-process pytester run drops the modules it imported first
    result = project.runpytest_subprocess("--autotune")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*tuned, * trials (ok *) in *s (stopped: converged): *",
            "*[[]stopped: converged after * trials (its model expected too little from the rest of "
            "the budget: bo option converge)*",
        ]
    )
    trials = int(result.stdout.str().split("stopped: converged after ")[1].split()[0])
    assert trials < 30
