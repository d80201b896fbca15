"""Output that explains itself (issue 38): the check table, the tuned table's one reported time, the
busy-baseline warning, the JSON's named times, and no lock files left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_autotune.entry import Baseline
from pytest_autotune.plugin.modes.busy_baseline import busy_message
from pytest_autotune.timing.regression import Rule

ONE_PLAIN = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 6, default=1), strategy="exhaustive")
def test_plain(autotune):
    autotune.measure(lambda: None)
"""


def test_a_passing_plain_run_shows_time_baseline_and_limit_per_test(
    project: pytest.Pytester, two_tests: str
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    checked = project.runpytest()
    checked.assert_outcomes(passed=2)
    checked.stdout.re_match_lines(
        [
            r"checked 2: 2 passed",
            r"  test +clock +time +baseline +change +limit \(tolerance\) +other +state$",
            r"  test_k\.py::test_a +cpu +100us +100us +\+0\.0% +110us \(10%\) +wall \+0\.0% +passed$",
            r"  test_k\.py::test_b +cpu +100us +100us +\+0\.0% +110us \(10%\) +wall \+0\.0% +passed$",
            r"  time: this run's median; baseline: the stored one \(autotune\.json\)",
            r"  limit: the slowest time that passes, baseline x \(1 \+ tolerance\) \+ noise band",
        ]
    )


def test_a_slower_test_shows_its_change_and_state_in_the_table(
    project: pytest.Pytester, two_tests: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_b=1.5")
    checked = project.runpytest("--autotune-check=warn")
    checked.stdout.re_match_lines(
        [
            r"checked 2: 1 passed, 1 regression",
            r"  test_k\.py::test_a +cpu +100us +100us +\+0\.0% +110us \(10%\) +wall \+0\.0% +passed$",
            r"  test_k\.py::test_b +cpu +150us +100us +\+50\.0% +110us \(10%\) +wall \+50\.0% +regression$",
        ]
    )


def test_the_tuned_table_names_its_one_time_and_explains_the_others(
    project: pytest.Pytester, two_tests: str
) -> None:
    project.makepyfile(test_k=two_tests)
    tuned = project.runpytest("--autotune", "--autotune-json=tuned.json")
    tuned.stdout.re_match_lines(
        [
            r"tuned 2:",
            r"  test +time +best trial +vs default +trials +configuration$",
            r"  test_k\.py::test_a +100us +100us +≥9\.0x +15 \(ok 15\) +\{'A': 3, 'B': 3\}$",
            r"  time: the winner's new baseline, measured again after the choice; plain runs are checked",
            r"  best trial: the fastest single trial",
            r"  vs default: the winner against the declared default in the same interleaved finalist rounds",
        ]
    )
    data = json.loads((project.path / "tuned.json").read_text())
    bench = next(b for b in data["benchmarks"] if b["name"] == "test_a")
    times = bench["extra_info"]["autotune_time"]
    assert times["reported"] == bench["stats"]["median"] == pytest.approx(1e-4)
    assert times["reported_as"].startswith("the winner's new baseline")
    assert times["best_trial"] == pytest.approx(1e-4)
    assert times["finalist_rounds"] == {"winner": pytest.approx(1e-4), "default": pytest.approx(9e-4)}


def test_a_successful_tuning_run_leaves_no_lock_files(project: pytest.Pytester, two_tests: str) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    cache = project.path / ".pytest_cache" / "d" / "autotune"
    assert sorted(p.name.rsplit("-", 1)[0] for p in cache.iterdir()) == [
        "test_k.py_test_a",
        "test_k.py_test_b",
    ]
    assert list(cache.glob("*.lock")) == []


@pytest.mark.parametrize(
    ("noise", "expected"),
    [(None, None), (0.1, None), (0.15, None), (0.2, "40%"), (0.98, "196%")],
)
def test_a_busy_baseline_is_named_with_its_tolerance(noise: float | None, expected: str | None) -> None:
    message = busy_message("t.py::test_x", "dev", Baseline(1e-3, noise=noise, processes=5), Rule())
    if expected is None:
        assert message is None
        return
    assert message is not None
    assert f"this machine was busy; the check will only catch slowdowns beyond {expected}" in message
    assert "re-measure on a quiet machine with pytest --autotune-update-baseline 't.py::test_x'" in message


def test_a_tolerance_set_by_the_user_is_not_called_busy() -> None:
    rule = Rule(tolerance=0.5, noise_scale=None)
    assert busy_message("t.py::test_x", "dev", Baseline(1e-3, noise=0.4, processes=5), rule) is None


#: Each timer fixture of a process takes a number from a counter file and slows by 50% per earlier one:
#: fresh baseline processes measure 1x, 1.5x, 2x, ... (a busy machine, deterministically).
BUSY_TIMER = """
import fcntl
import os

import pytest

from pytest_autotune.testing import FakeTimer, bowl


@pytest.fixture(scope="session")
def _slowdown():
    if "BUSY_COUNTER" not in os.environ:
        return 1.0
    # baseline processes set up side by side: take a number under a lock, as a ticket machine would
    with open(os.environ["BUSY_COUNTER"], "a+") as counter:
        fcntl.flock(counter, fcntl.LOCK_EX)
        counter.seek(0)
        n = len(counter.read())
        counter.write("x")
    return 1.0 + 0.5 * n


@pytest.fixture
def autotune_timer(_slowdown):
    return lambda fn, autotune: (fn(), bowl(autotune.config) * _slowdown)
"""


def test_writing_a_busy_baseline_warns_then(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fresh baseline processes that disagree by far: the update warns with the tolerance it gives."""
    project.makeconftest(BUSY_TIMER)
    project.makepyfile(test_k=ONE_PLAIN)
    project.runpytest("--autotune").assert_outcomes(passed=1)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "process")
    monkeypatch.setenv("BUSY_COUNTER", str(project.path / "counter.txt"))
    updated = project.runpytest_subprocess("--autotune-update-baseline")
    updated.assert_outcomes(passed=1)
    # issue 44: the warning points at the user's test (file and line), not at the plugin's source
    updated.stdout.re_match_lines(
        [
            r".*[/\\]test_k\.py:\d+: AutotuneBusyBaselineWarning: "
            r"test_k\.py::test_plain: the baseline on .* varied by "
            r"\d+% between the processes that measured it: this machine was busy; the check will only "
            r"catch slowdowns beyond \d+%; re-measure on a quiet machine with "
            r"pytest --autotune-update-baseline 'test_k\.py::test_plain'"
        ]
    )
    stored = json.loads((Path(project.path) / "autotune.json").read_text())
    entry = next(iter(stored["devices"].values()))["tests"]["test_k.py::test_plain"]
    assert entry["baseline"]["noise"] > 0.15
