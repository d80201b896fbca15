"""The summary's speedup over the default compares measurements taken side by side."""

from __future__ import annotations

import re

import pytest

#: Appended to the project's fake-timer conftest: its cost on a machine that slows down steadily,
#: each timed call 5 % more than the first.
DRIFTING_TIMER = """
class DriftingTimer(FakeTimer):
    drift = 0  # timed calls of the whole run (a timer is made per test call)

    def seconds(self, autotune):
        DriftingTimer.drift += 1
        return super().seconds(autotune) * (1.0 + 0.05 * DriftingTimer.drift)

@pytest.fixture
def autotune_timer():
    return DriftingTimer(bowl)
"""


def test_speedup_is_not_skewed_by_a_machine_that_drifts_after_the_finalists(
    project: pytest.Pytester, two_tests: str
) -> None:
    # Without drift the default (A=1, B=1: 900us) is 9x the optimum (A=3, B=3: 100us). The
    # finalist rounds interleave the two, so their ratio stays near 9; the baseline is measured
    # later, on a slower machine, and dividing the default's rounds by it would report about 6.7x.
    conftest = project.path / "conftest.py"
    project.makeconftest(conftest.read_text() + DRIFTING_TIMER)
    project.makepyfile(test_k=two_tests)
    result = project.runpytest("--autotune", "-k", "test_b")
    result.assert_outcomes(passed=1, deselected=1)
    match = re.search(r"test_k\.py::test_b +\S+ +\S+ +≥?([0-9.]+)x ", result.stdout.str())
    assert match is not None, result.stdout.str()
    assert 8.1 <= float(match.group(1)) <= 9.9
