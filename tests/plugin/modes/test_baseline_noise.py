"""Baselines measured as plain runs measure, with their noise; the tolerance derived from it.

The timer of these projects gives each *fresh* process (not this one, where pytester runs pytest,
and not the trial worker, whose body sees ``autotune.tuning``) its own speed, from the list
``SPEEDS`` in the order the processes first measure: so the baseline and its noise that the
plugin derives from them are known exactly. Tuning trials get the fake cost ``bowl``.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.entry import Baseline
from pytest_autotune.plugin.report.summary_text import format_value
from pytest_autotune.store import Store, apply_changes
from pytest_autotune.timing.regression import (
    BASELINE_MIN_PROCESSES,
    BASELINE_PROCESSES,
    NOISE_TOLERANCE_K,
    PROCESS_RUNS,
    baseline_decided,
)

Entries = Callable[[], dict[str, dict[str, Any]]]
SPEEDS = [1.0, 1.2, 0.9, 1.1, 1.0, 1.3, 1.3, 1.0, 1.5, 1.4]

PER_PROCESS_TIMER = f"""
import os

import pytest

from pytest_autotune.testing import FakeTimer, bowl

SPEEDS = {SPEEDS!r}
_number = []


class PerProcessTimer(FakeTimer):
    def seconds(self, autotune):
        if autotune.tuning:
            return bowl(autotune.config)
        speed = 1.0
        if os.getpid() != int(os.environ["MAIN_PID"]):
            if not _number:
                with open("processes.txt", "a+") as log:
                    log.seek(0)
                    _number.append(len(log.read().split()))
                    log.write(f"{{os.getpid()}}\\n")
            speed = SPEEDS[_number[0]]
        return 1e-4 * speed * self.factor(autotune.nodeid)


@pytest.fixture
def autotune_timer():
    return PerProcessTimer(bowl, slowdown=os.environ.get("AUTOTUNE_SLOW", ""))
"""

ONE_TEST = """
import os

from pytest_autotune import Set, tunable


@tunable(A=Set(1, 2, 3, default=1), strategy="exhaustive", finalists=1)
def test_k(autotune):
    with open("calls.txt", "a") as log:
        log.write(f"{os.getpid()} {autotune.tuning}\\n")
    autotune.measure(lambda: None)
"""


def _calls(project: pytest.Pytester) -> list[tuple[int, bool]]:
    path = project.path / "calls.txt"
    calls = [
        (int(pid), tuning == "True")
        for pid, tuning in (line.split() for line in path.read_text().split("\n") if line)
    ]
    path.unlink()
    return calls


@pytest.fixture
def per_process(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with one test and the per-process timer (module docstring)."""
    monkeypatch.setenv("MAIN_PID", str(os.getpid()))
    project.makeconftest(PER_PROCESS_TIMER)
    project.makepyfile(test_k=ONE_TEST)
    return project


def _expected(speeds: list[float]) -> tuple[float, float]:
    """The baseline median and noise that processes of these speeds give."""
    middle = statistics.median(speeds)
    return 1e-4 * middle, (max(speeds) - min(speeds)) / middle


def test_tuning_and_refreshing_measure_the_baseline_in_fresh_processes(
    per_process: pytest.Pytester, stored_entries: Entries
) -> None:
    per_process.runpytest("--autotune", "--autotune-isolate=process").assert_outcomes(passed=1)
    baseline = stored_entries()["test_k.py::test_k"]["baseline"]
    median, noise = _expected(SPEEDS[:BASELINE_PROCESSES])
    assert baseline["median"] == pytest.approx(median)
    assert baseline["noise"] == pytest.approx(noise, abs=1e-4)
    assert baseline["processes"] == BASELINE_PROCESSES
    # the CPU clock's baseline too (the fake timer's CPU time equals its wall time): its own
    # middle process and noise, and a parallelism of 1 in every process
    assert baseline["cpu"]["median"] == pytest.approx(median)
    assert baseline["cpu"]["noise"] == pytest.approx(noise, abs=1e-4)
    assert (baseline["cpu"]["parallelism"], baseline["cpu"]["parallelism_noise"]) == (1.0, 0.0)
    assert baseline["clock"] == "cpu"  # on the host, a CPU device, the run judged on CPU time
    calls = _calls(per_process)
    by_pid: dict[int, list[bool]] = defaultdict(list)
    for pid, tuning in calls:
        by_pid[pid].append(tuning)
    trial_workers = {pid for pid, tuning in calls if tuning and pid != os.getpid()}
    fresh = [pid for pid in by_pid if pid != os.getpid() and pid not in trial_workers]
    assert len(trial_workers) == 1
    # each baseline process is a plain run (autotune.tuning False) measured PROCESS_RUNS times
    assert len(fresh) == BASELINE_PROCESSES
    assert all(by_pid[pid] == [False] * PROCESS_RUNS for pid in fresh)
    assert by_pid[os.getpid()] == [True]  # here only the final call, the real test: never a baseline

    result = per_process.runpytest("--autotune-update-baseline", "--autotune-isolate=process")
    result.assert_outcomes(passed=1)
    refreshed = stored_entries()["test_k.py::test_k"]["baseline"]
    median, noise = _expected(SPEEDS[BASELINE_PROCESSES : 2 * BASELINE_PROCESSES])
    assert (refreshed["median"], refreshed["processes"]) == (pytest.approx(median), BASELINE_PROCESSES)
    assert refreshed["noise"] == pytest.approx(noise, abs=1e-4)
    # issue 44: the summary prints what is stored, not this process's first measurement (100us)
    stored, was = format_value(refreshed["median"], "s"), format_value(baseline["median"], "s")
    assert stored != was
    result.stdout.fnmatch_lines(
        [f"*test_k.py::test_k*{stored}*baseline*", f"*test_k.py::test_k  stored {stored} (was {was}, *"]
    )


def test_without_isolation_the_baseline_is_measured_here_without_noise(
    per_process: pytest.Pytester, stored_entries: Entries
) -> None:
    per_process.runpytest("--autotune", "--autotune-isolate=none").assert_outcomes(passed=1)
    baseline = stored_entries()["test_k.py::test_k"]["baseline"]
    assert "noise" not in baseline
    assert "processes" not in baseline
    assert {pid for pid, _ in _calls(per_process)} == {os.getpid()}


def _tuned_with_noise(project: pytest.Pytester, noise: float | None) -> None:
    """Tune here (fast), then give the baseline ``noise`` as fresh processes would have measured it."""
    project.runpytest("--autotune", "--autotune-isolate=none").assert_outcomes(passed=1)
    path = Path(project.path) / "autotune.json"
    store = Store.load(path)
    (device,) = store.devices()
    entry = store.entry(device, "test_k.py::test_k")
    assert entry is not None
    assert entry.baseline is not None
    processes = None if noise is None else 5
    cpu = entry.baseline.cpu  # the CPU clock's baseline (the one a check on the host judges) too
    assert cpu is not None
    cpu = replace(cpu, noise=noise, processes=processes)
    baseline: Baseline = replace(entry.baseline, noise=noise, processes=processes, cpu=cpu)
    apply_changes(path, updates={(device, "test_k.py::test_k"): replace(entry, baseline=baseline)})


def test_a_noisy_baseline_gets_a_wider_tolerance_and_the_report_says_so(
    per_process: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tuned_with_noise(per_process, 0.2)
    tolerance = max(0.10, NOISE_TOLERANCE_K * 0.2)
    monkeypatch.setenv("AUTOTUNE_SLOW", f"test_k={1 + tolerance - 0.05:.4f}")  # within it: passes
    per_process.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("AUTOTUNE_SLOW", f"test_k={1 + tolerance + 0.1:.4f}")
    result = per_process.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*tolerance {tolerance:.0%} ({NOISE_TOLERANCE_K:g} x the baseline's noise 20%, the spread "
            "between its fresh processes)*",
            f"*limit *(tolerance {tolerance:.0%}, noise band*",
        ]
    )


@pytest.mark.parametrize("where", ["command line", "ini", "@tunable"])
def test_a_tolerance_set_by_the_user_wins_over_the_noise(
    per_process: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    _tuned_with_noise(per_process, 0.2)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_k=1.2")  # +20%: within 2 x 20%, beyond the 15% set
    per_process.runpytest().assert_outcomes(passed=1)
    args = []
    if where == "command line":
        args = ["--autotune-tolerance=median:15%"]
    elif where == "ini":
        per_process.makeini("[pytest]\nautotune_tolerance = median:15%\n")
    else:
        per_process.makepyfile(test_k=ONE_TEST.replace("finalists=1", 'finalists=1, tolerance="15%"'))
    result = per_process.runpytest(*args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*(+20.0%)*tolerance 15% (set explicitly)*"])


def test_an_entry_without_noise_is_judged_with_the_plain_tolerance(
    per_process: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tuned_with_noise(per_process, None)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_k=1.08")
    per_process.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_k=1.15")
    result = per_process.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*(+15.0%); limit 110us (tolerance 10% (the baseline has no noise measured)*"]
    )


def test_a_baseline_process_that_fails_fails_tuning_with_the_reason(per_process: pytest.Pytester) -> None:
    per_process.makepyfile(
        test_k=ONE_TEST.replace(
            "    autotune.measure(lambda: None)",
            "    assert autotune.tuning, 'only measurable while tuning'\n    autotune.measure(lambda: None)",
        )
    )
    result = per_process.runpytest("--autotune", "--autotune-isolate=process")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*measuring the baseline in fresh process 1 of at most {BASELINE_PROCESSES}: "
            "the configuration *failed*"
        ]
    )
    assert not (per_process.path / "autotune.json").exists()


SETUP_AND_CALLS = """
import os

import pytest

from pytest_autotune import Set, tunable


def _log(what):
    with open("events.txt", "a") as log:
        log.write(f"{os.getpid()} {what}\\n")


@pytest.fixture
def device():
    _log("setup")


@tunable(A=Set(1, 2, default=1), strategy="exhaustive", finalists=1)
def test_k(autotune, device):
    _log(f"call {autotune.tuning}")
    autotune.measure(lambda: None)
"""


def test_the_baseline_processes_set_up_side_by_side_then_measure_one_at_a_time(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(test_k=SETUP_AND_CALLS)
    project.runpytest("--autotune", "--autotune-isolate=process").assert_outcomes(passed=1)
    events = [line.split(" ", 1) for line in (project.path / "events.txt").read_text().splitlines()]
    fresh = {pid for pid, what in events if what == "call False" and int(pid) != os.getpid()}
    assert len(fresh) == BASELINE_MIN_PROCESSES  # a steady kernel: no further process needed
    order = [(pid, what) for pid, what in events if pid in fresh]
    setups = [i for i, (_, what) in enumerate(order) if what == "setup"]
    calls = [i for i, (_, what) in enumerate(order) if what != "setup"]
    # every process set the test up before the first one measured (not one start after another)
    assert len(setups) == BASELINE_MIN_PROCESSES
    assert max(setups) < min(calls)
    # and then each measured alone: its PROCESS_RUNS calls in a row
    measuring = [pid for pid, what in order if what != "setup"]
    assert measuring == [pid for pid in dict.fromkeys(measuring) for _ in range(PROCESS_RUNS)]


STEADY_OR_NOISY = """
import os

from pytest_autotune import Set, tunable


@tunable(A=Set(1, 2, 3, default=1), strategy="exhaustive", finalists=1{tolerance})
def test_k(autotune):
    with open("calls.txt", "a") as log:
        log.write(f"{{os.getpid()}} {{autotune.tuning}}\\n")
    autotune.measure(lambda: None)
"""


@pytest.mark.parametrize(
    ("speeds", "tolerance", "processes"),
    [
        ([1.0, 1.01, 0.99, 1.5, 1.5], "", BASELINE_MIN_PROCESSES),  # steady: 2 x 2% x 1.37 < 10%
        ([1.0, 1.2, 0.9, 1.1, 1.0], "", BASELINE_PROCESSES),  # 30% apart: the noise sets the tolerance
        ([1.0, 1.2, 0.9, 1.1, 1.0], ', tolerance="40%"', BASELINE_MIN_PROCESSES),  # set: noise unused
    ],
)
def test_further_baseline_processes_only_while_their_noise_could_widen_the_tolerance(
    project: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    stored_entries: Entries,
    speeds: list[float],
    tolerance: str,
    processes: int,
) -> None:
    monkeypatch.setenv("MAIN_PID", str(os.getpid()))
    project.makeconftest(PER_PROCESS_TIMER.replace(repr(SPEEDS), repr(speeds)))
    project.makepyfile(test_k=STEADY_OR_NOISY.format(tolerance=tolerance))
    project.runpytest("--autotune", "--autotune-isolate=process").assert_outcomes(passed=1)
    baseline = stored_entries()["test_k.py::test_k"]["baseline"]
    median, noise = _expected(speeds[:processes])
    assert baseline["processes"] == processes
    assert baseline["median"] == pytest.approx(median)
    assert baseline["noise"] == pytest.approx(noise, abs=1e-4)
    calls = _calls(project)
    fresh = {pid for pid, tuning in calls if not tuning and pid != os.getpid()}
    assert len(fresh) == processes


def test_baseline_decided_counts_processes_and_scales_their_noise() -> None:
    from pytest_autotune.timing.regression import Rule

    assert not baseline_decided([1.0, 1.0])  # fewer than the minimum
    assert baseline_decided([1.0, 1.0, 1.0])
    # 3 processes 3.5% apart: 2 x 3.5% x d2(5)/d2(3) = 9.6% <= 10%; 4% apart: 11% > 10%
    assert baseline_decided([1.0, 1.035, 1.0])
    assert not baseline_decided([1.0, 1.04, 1.0])
    assert baseline_decided([1.0, 1.04, 1.0], Rule(tolerance=0.2))
    assert baseline_decided([1.0, 2.0, 1.0], Rule(noise_scale=None))  # a set tolerance ignores noise
    assert baseline_decided([1.0, 2.0, 1.0, 3.0, 1.0])  # the most
