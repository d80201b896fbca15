"""The regression check in a real run: disturbed measurements are measured again, baselines too.

A timer slows the first ``AUTOTUNE_DISTURBED`` timed calls of each test (one measurement is
``MEASURE_REPEAT`` timed calls), as interference from other processes would, and leaves the rest
at the fake cost. The check must judge the least disturbed of up to CONFIRMATIONS + 1 measurements and a
refreshed baseline must be the least disturbed of its measurements.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune.fixture import MEASURE_REPEAT
from pytest_autotune.timing.measure import DefaultTimer, pause_before_remeasuring
from pytest_autotune.timing.regression import BASELINE_RUNS, CONFIRMATIONS

Entries = Callable[[], dict[str, dict[str, Any]]]

DISTURBED_TIMER_CONFTEST = """
import os

import pytest

from pytest_autotune.testing import ConstantTimer


class DisturbedTimer(ConstantTimer):
    def seconds(self, autotune):
        disturbed = self.calls <= int(os.environ.get("AUTOTUNE_DISTURBED", "0"))
        return super().seconds(autotune) * (1.5 if disturbed else 1.0)


@pytest.fixture
def autotune_timer():
    return DisturbedTimer(1e-4 * float(os.environ.get("AUTOTUNE_SLOW", "1")))
"""

ONE_TEST = """
from pytest_autotune import Set, tunable


@tunable(A=Set(1, 2, default=1), strategy="exhaustive")
def test_k(autotune):
    autotune.measure(lambda: None)
"""


@pytest.fixture
def tuned(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose one test is tuned (baseline 100us) under the disturbed timer."""
    project.makeconftest(DISTURBED_TIMER_CONFTEST)
    project.makepyfile(test_k=ONE_TEST)
    project.runpytest("--autotune").assert_outcomes(passed=1)
    return project


@pytest.mark.parametrize("disturbed_measurements", range(CONFIRMATIONS + 1))
def test_disturbed_measurements_are_measured_again_and_pass(
    tuned: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, disturbed_measurements: int
) -> None:
    monkeypatch.setenv("AUTOTUNE_DISTURBED", str(disturbed_measurements * MEASURE_REPEAT))
    result = tuned.runpytest()
    result.assert_outcomes(passed=1)
    assert "performance regression" not in result.stdout.str()


def test_a_slowdown_seen_by_every_measurement_fails(
    tuned: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTOTUNE_DISTURBED", str((CONFIRMATIONS + 1) * MEASURE_REPEAT))
    result = tuned.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*median 150us vs baseline 100us (+50.0%)*the least disturbed of {CONFIRMATIONS + 1} measurements*"]
    )


def test_confirmations_wait_the_timers_growing_pauses(
    tuned: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A timer that asks for pauses gets them, before each re-measurement and in order.
    tuned.makeconftest(
        DISTURBED_TIMER_CONFTEST
        + """

class PausingTimer(DisturbedTimer):
    def confirmation_pause(self, attempt):
        with open("pauses.txt", "a") as log:
            log.write(f"{attempt}\\n")
        return 0.001 * attempt


@pytest.fixture
def autotune_timer():
    return PausingTimer(1e-4)
"""
    )
    monkeypatch.setenv("AUTOTUNE_DISTURBED", str((CONFIRMATIONS + 1) * MEASURE_REPEAT))
    tuned.runpytest().assert_outcomes(failed=1)
    pauses = (tuned.path / "pauses.txt").read_text().split()
    assert pauses == [str(attempt) for attempt in range(1, CONFIRMATIONS + 1)]


def test_the_default_timer_pauses_longer_each_time_up_to_a_cap() -> None:
    timer = DefaultTimer()
    pauses = [pause_before_remeasuring(timer, attempt) for attempt in range(1, 8)]
    assert pauses[0] > 0
    assert all(later >= earlier for earlier, later in itertools.pairwise(pauses))
    assert pauses[1] == 2 * pauses[0]
    assert max(pauses) <= 2.0
    assert sum(pauses[:CONFIRMATIONS]) <= 5.0  # what a failing test waits in all
    # A timer without confirmation_pause (a simulator) is never paused for.
    assert pause_before_remeasuring(lambda fn, autotune: (fn(), 0.0), 1) == 0.0  # type: ignore[arg-type]


def test_a_real_slowdown_fails_even_when_later_measurements_are_clean(
    tuned: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTOTUNE_SLOW", "1.2")
    monkeypatch.setenv("AUTOTUNE_DISTURBED", str(MEASURE_REPEAT))
    result = tuned.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*median 120us vs baseline 100us (+20.0%)*"])


def test_a_refreshed_baseline_is_the_least_disturbed_measurement(
    tuned: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, stored_entries: Entries
) -> None:
    monkeypatch.setenv("AUTOTUNE_DISTURBED", str((BASELINE_RUNS - 1) * MEASURE_REPEAT))
    tuned.runpytest("--autotune-update-baseline").assert_outcomes(passed=1)
    assert stored_entries()["test_k.py::test_k"]["baseline"]["median"] == pytest.approx(1e-4)


LUCKY_FINALISTS_CONFTEST = """
import inspect

import pytest

from pytest_autotune.testing import FakeTimer


def lucky(config):
    \"\"\"100us, except in the search and the finalist rounds (50us): a winner that was lucky.\"\"\"
    tuning = any(frame.function in ("_search", "_remeasure") for frame in inspect.stack())
    return 5e-5 if tuning else 1e-4


@pytest.fixture
def autotune_timer():
    return FakeTimer(lucky)
"""


def test_a_tuned_baseline_is_measured_after_the_choice_not_taken_from_the_lucky_rounds(
    project: pytest.Pytester, stored_entries: Entries
) -> None:
    project.makeconftest(LUCKY_FINALISTS_CONFTEST)
    project.makepyfile(test_k=ONE_TEST)
    project.runpytest("--autotune").assert_outcomes(passed=1)
    assert stored_entries()["test_k.py::test_k"]["baseline"]["median"] == pytest.approx(1e-4)
    project.runpytest().assert_outcomes(passed=1)  # unchanged code passes against that baseline
