"""The summary's speedup over the default compares measurements taken side by side."""

from __future__ import annotations

import re

import pytest

#: A machine that slows down steadily: every timed call takes 5 % longer than the first did.
DRIFTING_TIMER_CONFTEST = """
import pytest

class DriftingTimer:
    calls = 0

    def __call__(self, fn, autotune):
        result = fn()
        DriftingTimer.calls += 1
        base = 1e-4 * (1 + sum((v - 3) ** 2 for v in autotune.config.values()))
        return result, base * (1.0 + 0.05 * DriftingTimer.calls)

@pytest.fixture
def autotune_timer():
    return DriftingTimer()
"""

ONE_TEST = """
from pytest_autotune import Interval, Set, tunable

@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_b(autotune):
    autotune.measure(lambda: None)
"""


def test_speedup_is_not_skewed_by_a_machine_that_drifts_after_the_finalists(project: pytest.Pytester) -> None:
    # Without drift the default (A=1, B=1: 900us) is 9x the optimum (A=3, B=3: 100us). The
    # finalist rounds interleave the two, so their ratio stays near 9; the baseline is measured
    # later, on a slower machine, and dividing the default's rounds by it would report about 6.7x.
    project.makeconftest(DRIFTING_TIMER_CONFTEST)
    project.makepyfile(test_k=ONE_TEST)
    result = project.runpytest("--autotune")
    result.assert_outcomes(passed=1)
    match = re.search(r"test_k\.py::test_b  \S+  ([0-9.]+)x vs default", result.stdout.str())
    assert match is not None, result.stdout.str()
    assert 8.1 <= float(match.group(1)) <= 9.9
