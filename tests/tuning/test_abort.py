"""Abort conditions: each rule on hand-built states, the algebra, and argument checking."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pytest_autotune.space import Interval, Real, build_space
from pytest_autotune.tuning.abort import (
    AbortCondition,
    Cost,
    Duration,
    Evaluations,
    Fraction,
    Improvement,
    Speedup,
    TuningState,
    ValidEvaluations,
    as_abort,
)


def state(
    evaluations: int = 0,
    valid: int | None = None,
    elapsed: float = 0.0,
    size: int | None = 100,
    improvements: tuple[tuple[int, float], ...] = (),
    maximize: bool = False,
) -> TuningState:
    """A state whose improvements are (evaluation, value) pairs (elapsed = evaluation seconds)."""
    return TuningState(
        evaluations=evaluations,
        valid_evaluations=evaluations if valid is None else valid,
        elapsed_s=elapsed,
        space_size=size,
        maximize=maximize,
        improvements=tuple(Improvement(e, e, float(e), v) for e, v in improvements),
    )


def test_counting_conditions() -> None:
    assert not Evaluations(3).should_stop(state(2))
    assert Evaluations(3).should_stop(state(3))
    assert Evaluations(4).progress(state(1)) == 0.25
    assert not ValidEvaluations(2).should_stop(state(5, valid=1))
    assert ValidEvaluations(2).should_stop(state(5, valid=2))
    assert Fraction(0.1).should_stop(state(10, size=100))
    assert not Fraction(0.1).should_stop(state(9, size=100))
    assert Duration(2.0).should_stop(state(elapsed=2.0))
    assert not Duration(timedelta(seconds=3)).should_stop(state(elapsed=2.9))


def test_cost_respects_direction() -> None:
    assert not Cost(1.0).should_stop(state(3))
    assert Cost(1.0).should_stop(state(3, improvements=((1, 3.0), (3, 1.0))))
    assert not Cost(1.0).should_stop(state(3, improvements=((1, 1.5),)))
    assert Cost(10.0).should_stop(state(2, improvements=((2, 12.0),), maximize=True))
    assert not Cost(10.0).should_stop(state(2, improvements=((2, 8.0),), maximize=True))


def test_speedup_over_an_evaluation_window() -> None:
    rule = Speedup(1.1, evaluations=5)
    # Not stopped before the window is full.
    assert not rule.should_stop(state(4, improvements=((1, 10.0),)))
    # Best 10 at evaluation 1, still 10 at evaluation 6: no speedup -> stop.
    assert rule.should_stop(state(6, improvements=((1, 10.0),)))
    # 10 -> 5 inside the window: speedup 2 >= 1.1 -> go on.
    assert not rule.should_stop(state(6, improvements=((1, 10.0), (4, 5.0))))
    # 10 -> 9.5 inside the window: speedup 1.05 < 1.1 -> stop.
    assert rule.should_stop(state(6, improvements=((1, 10.0), (4, 9.5))))
    # The first feasible value inside the window is an infinite speedup.
    assert not rule.should_stop(state(6, improvements=((3, 10.0),)))
    # A full window without any feasible value: no progress -> stop.
    assert rule.should_stop(state(6))
    # Maximised objective: 100 -> 150 GFLOP/s is a speedup of 1.5.
    assert not rule.should_stop(state(6, improvements=((1, 100.0), (5, 150.0)), maximize=True))
    assert rule.should_stop(state(6, improvements=((1, 100.0), (5, 101.0)), maximize=True))


def test_speedup_over_a_duration_window() -> None:
    rule = Speedup(2, duration=timedelta(seconds=3))
    assert not rule.should_stop(state(elapsed=2.0, improvements=((1, 8.0),)))
    assert rule.should_stop(state(elapsed=5.0, improvements=((1, 8.0), (4, 5.0))))
    assert not rule.should_stop(state(elapsed=5.0, improvements=((1, 8.0), (4, 3.0))))


def test_algebra() -> None:
    five, valid_two = Evaluations(5), ValidEvaluations(2)
    s = state(5, valid=1)
    assert (five | valid_two).should_stop(s)
    assert not (five & valid_two).should_stop(s)
    assert not (~five).should_stop(s)
    assert (~valid_two).should_stop(s)
    assert (five & valid_two).should_stop(state(5, valid=2))
    # ints and timedeltas combine as Evaluations and Duration, on either side.
    assert (valid_two | 5).should_stop(s)
    assert (5 | valid_two).should_stop(s)
    assert not (timedelta(seconds=10) & five).should_stop(state(5, elapsed=1.0))
    assert (timedelta(seconds=10) & five).should_stop(state(5, elapsed=10.0))
    assert isinstance(~(five | valid_two) & Cost(1.0), AbortCondition)
    assert (five & Evaluations(10)).progress(state(5)) == 0.5
    assert (five | Evaluations(10)).progress(state(5)) == 1.0


def test_as_abort() -> None:
    assert isinstance(as_abort(7), Evaluations)
    assert isinstance(as_abort(timedelta(minutes=1)), Duration)
    with pytest.raises(TypeError, match="abort condition"):
        as_abort("10")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        as_abort(True)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Evaluations(0), "Evaluations: n must be a positive integer"),
        (lambda: Evaluations(2.5), "Evaluations: n must be a positive integer"),
        (lambda: ValidEvaluations(-1), "ValidEvaluations"),
        (lambda: Duration(0), "Duration: the duration must be positive"),
        (lambda: Duration(timedelta(seconds=-1)), "Duration"),
        (lambda: Fraction(0.0), r"Fraction: f must be a number in \(0, 1\]"),
        (lambda: Fraction(1.5), "Fraction"),
        (lambda: Cost(float("nan")), "Cost: c must be a finite number"),
        (lambda: Speedup(0.5, evaluations=3), "Speedup: s must be a finite factor >= 1"),
        (lambda: Speedup(2.0), "give exactly one window"),
        (lambda: Speedup(2.0, evaluations=3, duration=1.0), "got evaluations, duration"),
        (lambda: Speedup(2.0, evaluations=0), "Speedup: evaluations must be a positive integer"),
    ],
)
def test_bad_arguments_fail_at_construction(make: object, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        make()  # type: ignore[operator]


def test_duration_rejects_non_numbers() -> None:
    with pytest.raises(TypeError, match="Duration: expected seconds or a timedelta"):
        Duration("1s")  # type: ignore[arg-type]


def test_fraction_refuses_continuous_spaces() -> None:
    space = build_space({"n": Interval(1, 4), "alpha": Real(0.0, 1.0)})
    with pytest.raises(ValueError, match="Fraction: a space with Real parameters"):
        Fraction(0.5).check(space)
    (Evaluations(3) | Fraction(0.5)).check(build_space({"n": Interval(1, 4)}))
