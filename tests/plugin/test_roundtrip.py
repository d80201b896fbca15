"""Tune, then check: the round trip, injected slowdowns, faster runs, baselines, selective tuning."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune.timing.regression import CONFIRMATIONS

Entries = Callable[[], dict[str, dict[str, Any]]]


def test_tune_writes_the_optimum_and_check_passes(
    project: pytest.Pytester, two_tests: str, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=two_tests)
    tuned = project.runpytest("--autotune")
    tuned.assert_outcomes(passed=2)
    stored = stored_entries()
    assert sorted(stored) == ["test_k.py::test_a", "test_k.py::test_b"]
    for nodeid, size in (("test_k.py::test_a", 15), ("test_k.py::test_b", 18)):
        entry = stored[nodeid]
        # exhaustive search of the fake cost 1e-4 * (1 + (A-3)^2 + (B-3)^2) finds A=3, B=3 (100us)
        assert entry["config"] == {"A": 3, "B": 3}
        assert entry["baseline"]["median"] == pytest.approx(1e-4)
        assert entry["baseline"]["iqr"] == 0.0
        assert entry["baseline"]["unit"] == "s"
        assert entry["tuning"]["strategy"] == "exhaustive"
        assert entry["tuning"]["trials"] == size
        assert entry["tuning"]["counts"]["ok"] == size
    # the default A=1, B=1 costs 900us: a 9x speedup
    tuned.stdout.fnmatch_lines(
        [
            "*autotune: host:*",
            "tuned 2:",
            "  test  * time  * best trial  vs default  trials  * configuration",
            "  test_k.py::test_a  100us  100us  *≥9.0x  *15 (ok 15)  {'A': 3, 'B': 3}",
        ]
    )

    checked = project.runpytest()
    checked.assert_outcomes(passed=2)
    checked.stdout.fnmatch_lines(["checked 2: 2 passed"])
    assert "performance regressions" not in checked.stdout.str()


def test_injected_slowdown_fails_only_the_slowed_test(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, two_tests: str, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    before = (project.path / "autotune.json").read_bytes()
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_b=1.3")
    result = project.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*performance regression on host:*median 130us vs baseline 100us (+30.0%)*",
            "*pytest --autotune-update-baseline 'test_k.py::test_b'*",
            "*= autotune: performance regressions =*",
            "test_k.py::test_b [[]host:*]: baseline 100us, current 130us (+30.0%), limit 110us*",
            "FAILED test_k.py::test_b - Failed: performance regression*",
        ]
    )
    assert "FAILED test_k.py::test_a" not in result.stdout.str()
    assert (project.path / "autotune.json").read_bytes() == before  # a check never writes


def test_slowdown_within_tolerance_passes_and_tolerance_option_tightens(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, two_tests: str, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_a=1.08")
    project.runpytest().assert_outcomes(passed=2)
    project.runpytest("--autotune-tolerance=median:5%").assert_outcomes(passed=1, failed=1)
    # a 20us floor hides an 8us difference whatever the tolerance
    project.runpytest("--autotune-tolerance=median:5%,median:20us").assert_outcomes(passed=2)


def test_regression_is_a_warning_under_check_warn_and_ignored_under_off(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, two_tests: str, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_a=2")
    warned = project.runpytest("--autotune-check=warn")
    warned.assert_outcomes(passed=2, warnings=1)
    warned.stdout.fnmatch_lines(["*AutotuneRegressionWarning*test_a*", "*autotune: performance regressions*"])
    off = project.runpytest("--autotune-check=off")
    off.assert_outcomes(passed=2)
    off.stdout.fnmatch_lines(["timing not checked: 2"])


def test_faster_than_baseline_is_reported_with_its_fix(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, two_tests: str, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_a=0.5")
    result = project.runpytest()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "checked 2: 1 faster, 1 passed",
            "faster than baseline (refresh: pytest --autotune-update-baseline): 1",
            "  test_k.py::test_a  50us vs 100us (-50.0%)",
        ]
    )


def test_update_baseline_rewrites_only_baselines(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, two_tests: str, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    tuned = stored_entries()
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_a=1.5")
    result = project.runpytest("--autotune-update-baseline")
    result.assert_outcomes(passed=2)
    updated = stored_entries()
    assert updated["test_k.py::test_a"]["baseline"]["median"] == pytest.approx(1.5e-4)
    # the least disturbed of three calls of ten timed runs each
    assert updated["test_k.py::test_a"]["baseline"]["rounds"] == 10
    for key in ("config", "space_hash", "tuning"):
        assert updated["test_k.py::test_a"][key] == tuned["test_k.py::test_a"][key]
    assert (
        updated["test_k.py::test_b"]["baseline"]["median"] == tuned["test_k.py::test_b"]["baseline"]["median"]
    )
    project.runpytest().assert_outcomes(passed=2)  # the slower timing is the new normal


def test_autotune_missing_tunes_only_tests_without_entries(
    project: pytest.Pytester, two_tests: str, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune", "-k", "test_a").assert_outcomes(passed=1)
    first = stored_entries()["test_k.py::test_a"]
    result = project.runpytest("--autotune=missing")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["tuned 1:", "  test_k.py::test_b *", "checked 1: 1 passed"])
    assert stored_entries()["test_k.py::test_a"] == first  # untouched, byte for byte below
    text = (project.path / "autotune.json").read_text()
    assert text.count('"test_k.py::test_a"') == 1


def test_autotune_followed_by_a_path_tunes_that_path(
    project: pytest.Pytester, two_tests: str, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=two_tests, test_other="def test_plain():\n    pass\n")
    result = project.runpytest("--autotune", "test_k.py")
    result.assert_outcomes(passed=2)  # test_other.py was not selected
    assert sorted(stored_entries()) == ["test_k.py::test_a", "test_k.py::test_b"]


def test_bad_mode_is_a_usage_error(project: pytest.Pytester, two_tests: str, stored_entries: Entries) -> None:
    project.makepyfile(test_k=two_tests)
    result = project.runpytest("--autotune=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*command line --autotune: invalid mode 'sometimes'*"])


def test_committed_config_is_kept_unless_beaten_beyond_noise(
    project: pytest.Pytester,
    two_tests: str,
    stored_entries: Entries,
    store_data: Callable[[], dict[str, Any]],
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    data = store_data()
    device = next(iter(data["devices"]))
    # pretend the committed configuration is A=3, B=2 (200us): the optimum (100us) beats it by far
    # more than the band (IQR 0 + 2us floor), so tuning replaces it
    data["devices"][device]["tests"]["test_k.py::test_a"]["config"] = {"A": 3, "B": 2}
    (project.path / "autotune.json").write_text(json.dumps(data))
    project.runpytest("--autotune", "-k", "test_a").assert_outcomes(passed=1)
    assert stored_entries()["test_k.py::test_a"]["config"] == {"A": 3, "B": 3}
    # with a floor larger than the gain, the committed configuration stays
    data["devices"][device]["tests"]["test_k.py::test_a"]["config"] = {"A": 3, "B": 2}
    (project.path / "autotune.json").write_text(json.dumps(data))
    result = project.runpytest("--autotune", "-k", "test_a", "--autotune-tolerance=median:1ms")
    result.assert_outcomes(passed=1)
    assert stored_entries()["test_k.py::test_a"]["config"] == {"A": 3, "B": 2}
    result.stdout.fnmatch_lines(["*kept the committed configuration*"])


MAXIMISED = """
import os
from pytest_autotune import Interval, tunable

@tunable(A=Interval(1, 6, default=1), objective="GFLOP/s", maximize=True, strategy="exhaustive")
def test_throughput(autotune):
    slow = float(os.environ.get("THROUGHPUT_DROP", "1"))
    autotune.record(10.0 * autotune.config["A"] / slow)
"""


def test_a_recorded_maximised_objective_is_tuned_and_checked(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, stored_entries: Entries
) -> None:
    project.makepyfile(test_t=MAXIMISED)
    project.runpytest("--autotune").stdout.fnmatch_lines(
        ["*test_t.py::test_throughput  60 GFLOP/s  60 GFLOP/s  ≥6.0x  *"]
    )
    entry = stored_entries()["test_t.py::test_throughput"]
    assert entry["config"] == {"A": 6}
    assert entry["baseline"]["unit"] == "GFLOP/s"
    assert entry["baseline"]["median"] == 60.0
    project.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("THROUGHPUT_DROP", "1.3")  # 46 GFLOP/s: below 60 * (1 - 10%)
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*performance regression on host:*: median 46.15 GFLOP/s vs baseline 60 GFLOP/s*"]
    )


SPIKY_TIMER = """
import os
import pytest

from pytest_autotune.testing import ConstantTimer

SAMPLES = []


class SpikyTimer(ConstantTimer):
    # 1e-4 s, times AUTOTUNE_FACTOR; six of the first ten samples of a check run are preempted (+5 ms)
    def seconds(self, autotune):
        SAMPLES.append(1)
        spike = 5e-3 if os.environ.get("SPIKES") and len(SAMPLES) <= 10 and len(SAMPLES) % 5 != 0 else 0.0
        return super().seconds(autotune) + spike


@pytest.fixture
def autotune_timer():
    return SpikyTimer(1e-4 * float(os.environ.get("AUTOTUNE_FACTOR", "1")))
"""

ONE_TEST = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_k(autotune):
    autotune.measure(lambda: None)
"""


@pytest.mark.parametrize(("factor", "outcome"), [("1.0", "passed"), ("1.3", "failed")])
def test_a_measurement_hit_by_interference_is_measured_again(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, factor: str, outcome: str
) -> None:
    """Spikes in most of the first measurement neither hide a 30% slowdown nor fail unchanged code."""
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "none")
    pytester.makeconftest(SPIKY_TIMER)
    pytester.makepyfile(test_k=ONE_TEST)
    pytester.runpytest("--autotune").assert_outcomes(passed=1)
    monkeypatch.setenv("SPIKES", "1")
    monkeypatch.setenv("AUTOTUNE_FACTOR", factor)
    result = pytester.runpytest()
    result.assert_outcomes(**{outcome: 1})
    if outcome == "failed":
        result.stdout.fnmatch_lines(
            [f"*median 130us vs baseline 100us (+30.0%)*the least disturbed of {CONFIRMATIONS + 1}*"]
        )
