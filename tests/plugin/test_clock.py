"""The work clock on CPU devices: checks judge on the CPU time by default, baselines store both clocks.

The project's tests run on the host (a CPU device). The fake timer reports a wall time and a CPU
time (:class:`pytest_autotune.testing.FakeTimer`): ``AUTOTUNE_SLOW`` is more work (both clocks),
``AUTOTUNE_WALL_SLOW`` wall time only (a busy machine, or a kernel that lost its parallelism),
``AUTOTUNE_PARALLELISM`` the CPU seconds per wall second. The machine's load, which decides
whether the parallelism guard may judge, is replaced (``os.getloadavg``) so that nothing depends
on the real machine.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Entries = Callable[[], dict[str, dict[str, Any]]]

CLOCK_TIMER_CONFTEST = """
import os

import pytest

from pytest_autotune.testing import FakeTimer, bowl


@pytest.fixture
def autotune_timer():
    return FakeTimer(
        bowl,
        slowdown=os.environ.get("AUTOTUNE_SLOW", ""),
        wall_slowdown=os.environ.get("AUTOTUNE_WALL_SLOW", ""),
        parallelism=os.environ.get("AUTOTUNE_PARALLELISM", ""),
    )
"""

ONE_TEST = """
from pytest_autotune import Set, tunable


@tunable(A=Set(1, 2, 3, default=1), strategy="exhaustive", finalists=1)
def test_k(autotune):
    autotune.measure(lambda: None)
"""


@pytest.fixture
def clocked(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with one test and the two-clock timer, on a quiet machine of 4 cores."""
    for name in ("AUTOTUNE_WALL_SLOW", "AUTOTUNE_PARALLELISM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.5, 0.5))
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    project.makeconftest(CLOCK_TIMER_CONFTEST)
    project.makepyfile(test_k=ONE_TEST)
    return project


def test_a_plain_run_on_a_cpu_device_judges_on_cpu_time_by_default(
    clocked: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    clocked.runpytest("--autotune").assert_outcomes(passed=1)
    monkeypatch.setenv("AUTOTUNE_WALL_SLOW", "test_k=1.5")  # a busy machine: wall +50%, same work
    result = clocked.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_k.py::test_k  cpu    100us  100us     +0.0%*wall +50.0%*passed*"])
    result.stdout.fnmatch_lines(["*clock: the one that judged (--autotune-clock)*"])

    result = clocked.runpytest("--autotune-clock=wall")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*performance regression on * (wall/device time): median 150us*"])

    monkeypatch.setenv("AUTOTUNE_WALL_SLOW", "")
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_k=1.5")  # more work: the CPU time sees it
    result = clocked.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*performance regression on * (CPU time): median 150us vs baseline 100us*"])


@pytest.mark.parametrize(("option", "clock"), [((), "cpu"), (("--autotune-clock=wall",), "wall")])
def test_the_entry_records_both_clocks_and_the_one_the_run_chose(
    clocked: pytest.Pytester,
    stored_entries: Entries,
    monkeypatch: pytest.MonkeyPatch,
    option: tuple[str, ...],
    clock: str,
) -> None:
    monkeypatch.setenv("AUTOTUNE_PARALLELISM", "test_k=2")
    clocked.runpytest("--autotune", *option).assert_outcomes(passed=1)
    baseline = stored_entries()["test_k.py::test_k"]["baseline"]
    assert baseline["clock"] == clock
    assert baseline["median"] == pytest.approx(1e-4)
    assert baseline["cpu"]["median"] == pytest.approx(2e-4)
    assert baseline["cpu"]["parallelism"] == pytest.approx(2.0)


def _strip_clocks(path: Path) -> None:
    """Make the stored entry an old one: a baseline without the clock fields."""
    data = json.loads(path.read_text())
    for device in data["devices"].values():
        for entry in device["tests"].values():
            for key in ("clock", "cpu"):
                entry["baseline"].pop(key)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_an_old_baseline_without_cpu_time_is_judged_on_wall_and_the_report_says_so(
    clocked: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, stored_entries: Entries
) -> None:
    clocked.runpytest("--autotune").assert_outcomes(passed=1)
    _strip_clocks(Path(clocked.path) / "autotune.json")
    result = clocked.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*test_k.py::test_k: judged on wall time: the baseline has no CPU time*--autotune-update-baseline*"]
    )
    monkeypatch.setenv("AUTOTUNE_WALL_SLOW", "test_k=1.5")  # judged on wall: this is red
    result = clocked.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*(wall/device time)*"])
    monkeypatch.setenv("AUTOTUNE_WALL_SLOW", "")
    clocked.runpytest("--autotune-update-baseline").assert_outcomes(passed=1)
    assert stored_entries()["test_k.py::test_k"]["baseline"]["cpu"]["median"] == pytest.approx(1e-4)


def test_a_kernel_that_lost_its_parallelism_fails_on_a_quiet_machine(
    clocked: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTOTUNE_PARALLELISM", "test_k=2")
    clocked.runpytest("--autotune").assert_outcomes(passed=1)
    clocked.runpytest().assert_outcomes(passed=1)
    # the same work on one core: CPU time unchanged, wall time doubled
    monkeypatch.setenv("AUTOTUNE_WALL_SLOW", "test_k=2")
    result = clocked.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*parallelism 1.00 CPU s per s vs baseline 2.00 (limit 1.50): the kernel lost parallel speed-up*"]
    )


def test_the_parallelism_guard_says_when_the_machine_is_too_busy_to_judge(
    clocked: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AUTOTUNE_PARALLELISM", "test_k=2")
    clocked.runpytest("--autotune").assert_outcomes(passed=1)
    monkeypatch.setenv("AUTOTUNE_WALL_SLOW", "test_k=2")
    monkeypatch.setattr(os, "getloadavg", lambda: (6.0, 6.0, 6.0))
    result = clocked.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*test_k.py::test_k: parallelism not judged: the machine is busy (load 6.0 on 4 cores*"]
    )


def test_a_serial_baseline_has_no_parallelism_to_lose(clocked: pytest.Pytester) -> None:
    clocked.runpytest("--autotune").assert_outcomes(passed=1)
    result = clocked.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*parallelism not judged: the baseline ran serially (1.00 CPU s per s)*"])


def test_the_json_export_names_the_clock_that_judged_and_both_changes(
    clocked: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    clocked.runpytest("--autotune").assert_outcomes(passed=1)
    monkeypatch.setenv("AUTOTUNE_WALL_SLOW", "test_k=1.5")
    clocked.runpytest("--autotune-json=out.json").assert_outcomes(passed=1)
    (bench,) = json.loads((Path(clocked.path) / "out.json").read_text())["benchmarks"]
    clock = bench["extra_info"]["autotune_clock"]
    assert clock["judged_on"] == "cpu"
    assert clock["cpu"]["change"] == pytest.approx(0.0, abs=1e-6)
    assert clock["wall"]["change"] == pytest.approx(0.5)
    assert clock["parallelism"]["state"] == "unjudged"


def test_a_bad_clock_is_a_usage_error_naming_the_option(clocked: pytest.Pytester) -> None:
    result = clocked.runpytest("--autotune-clock=gpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--autotune-clock*invalid value 'gpu'*auto, wall, cpu*"])


def test_a_timer_that_reads_no_cpu_time_is_judged_on_wall(
    clocked: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    clocked.makeconftest(
        """
import os

import pytest

from pytest_autotune.testing import bowl


@pytest.fixture
def autotune_timer():
    slow = 1.5 if os.environ.get("AUTOTUNE_WALL_SLOW") else 1.0
    return lambda fn, autotune: (fn(), bowl(autotune.config) * slow)
"""
    )
    clocked.runpytest("--autotune").assert_outcomes(passed=1)
    monkeypatch.setenv("AUTOTUNE_WALL_SLOW", "1")
    result = clocked.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*(wall/device time)*"])
