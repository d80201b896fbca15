"""Isolated trials: crashes, hangs, fixture errors, leaks and pytest outcomes in a worker process."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.plugin.workers import parent  # imported here: pytester drops modules a run imports
from pytest_autotune.timing.regression import BASELINE_MIN_PROCESSES, BASELINE_RUNS, PROCESS_RUNS
from pytest_autotune.tuning.tuner import Tuner

FAULTY = """
import ctypes, os, sys, time
from pytest_autotune import Interval, Set, tunable


@tunable(A=Interval(1, 4, default=2), B=Set(1, 2, default=1), strategy="exhaustive", trial_timeout=1)
def test_faulty(autotune):
    A, B = autotune.config["A"], autotune.config["B"]
    print("GARBLE-OUT", A, B)
    print("GARBLE-ERR", A, B, file=sys.stderr)
    if (A, B) == (4, 1):
        ctypes.string_at(0)  # null pointer read: SIGSEGV
    if (A, B) == (4, 2):
        os.abort()
    if (A, B) == (1, 1):
        time.sleep(60)
    if (A, B) == (1, 2):
        os._exit(3)
    autotune.measure(lambda: None)
"""


def _journal(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    (path,) = (pytester.path / ".pytest_cache").rglob("*.done.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


def test_crashes_and_a_hang_fail_their_trials_and_tuning_goes_on(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=FAULTY)
    result = project.runpytest_subprocess("--autotune", "-p", "no:hypothesispytest")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_k.py::test_faulty  200us  200us  *≥3.0x  *8 (ok 4, runtime 3, timeout 1)  "
            "{'A': 3, 'B': 2}",
            "      [[]trial worker restarted: 3 crashes, 1 timeout (details: *.done.jsonl)]",
        ]
    )
    output = result.stdout.str() + result.stderr.str()
    assert "GARBLE" not in output  # the worker's output never reaches the terminal
    assert "Fatal Python error" not in output
    trials = {(t["config"]["A"], t["config"]["B"]): t for t in _journal(project)}
    assert {k: t["label"] for k, t in trials.items() if t["label"] != "ok"} == {
        (4, 1): "runtime",
        (4, 2): "runtime",
        (1, 1): "timeout",
        (1, 2): "runtime",
    }
    segfault = trials[(4, 1)]["detail"]
    assert segfault.startswith("the trial worker was killed by signal SIGSEGV (Segmentation fault)")
    assert "GARBLE-OUT 4 1" in segfault  # the body's output of that trial, and
    assert re.search(r'test_k.py", line \d+ in test_faulty', segfault)  # faulthandler's frame of the crash
    assert "_pytest" not in segfault  # machinery frames left out
    assert trials[(4, 2)]["detail"].startswith("the trial worker was killed by signal SIGABRT (Aborted)")
    assert trials[(1, 1)]["detail"].startswith("no result within the trial timeout of 1s")
    assert 1.0 <= trials[(1, 1)]["eval_s"] < 10
    assert trials[(1, 2)]["detail"].startswith("the trial worker exited with status 3")


PIDS = """
import os
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3), strategy="exhaustive", finalists=1)
def test_where(autotune):
    with open("pids.txt", "a") as f:
        f.write(f"{autotune.config['A']} {os.getpid()}\\n")
    autotune.measure(lambda: None)
"""


def _pids(pytester: pytest.Pytester) -> list[int]:
    path = pytester.path / "pids.txt"
    pids = [int(line.split()[1]) for line in path.read_text().splitlines()]
    path.unlink()
    return pids


@pytest.mark.parametrize(("isolate", "isolated"), [("auto", os.name == "posix"), ("none", False)])
def test_where_trials_run(project: pytest.Pytester, isolate: str, isolated: bool) -> None:
    project.makepyfile(test_k=PIDS)
    project.runpytest("--autotune", f"--autotune-isolate={isolate}").assert_outcomes(passed=1)
    pids = _pids(project)
    # 3 trials, the winner's 3 finalist rounds and the default's 1 (5x slower: outclassed after the
    # first round) in the worker (or here), then the final call here, then
    # the baseline: isolated, PROCESS_RUNS measurements in each of BASELINE_MIN_PROCESSES fresh
    # processes (a steady fake time needs no more); else BASELINE_RUNS - 1 more here
    trials, final, baseline = pids[:7], pids[7], pids[8:]
    assert all((pid != os.getpid()) == isolated for pid in trials)
    assert len(set(trials)) == 1  # one persistent worker (or this process)
    assert final == os.getpid()
    if isolated:
        fresh = sorted(set(baseline), key=baseline.index)
        assert baseline == [pid for pid in fresh for _ in range(PROCESS_RUNS)]
        assert len(fresh) == BASELINE_MIN_PROCESSES
        assert not {os.getpid(), trials[0]} & set(fresh)
    else:
        assert baseline == [os.getpid()] * (BASELINE_RUNS - 1)
    project.runpytest().assert_outcomes(passed=1)  # a normal run: in this process, whatever the option
    assert _pids(project) == [os.getpid()]


def test_the_trial_worker_sets_up_while_the_tuner_is_built(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    launch_recipe, build_tuner = parent.launch_recipe, Tuner.__init__

    def launch(recipe: Any, *args: Any, **kwargs: Any) -> Any:
        events.append(f"launch {recipe.role}")
        return launch_recipe(recipe, *args, **kwargs)

    def build(self: Tuner, *args: Any, **kwargs: Any) -> None:
        events.append("tuner")
        build_tuner(self, *args, **kwargs)

    monkeypatch.setattr(parent, "launch_recipe", launch)
    monkeypatch.setattr(Tuner, "__init__", build)
    project.makepyfile(test_k=PIDS)
    project.runpytest("--autotune", "--autotune-isolate=process").assert_outcomes(passed=1)
    # started first, not on the first trial: its set-up overlaps the tuner's
    assert events == ["launch trial", "tuner"] + ["launch baseline"] * BASELINE_MIN_PROCESSES


SETUP_ERRORS = """
import os
import pytest
from pytest_autotune import Interval, tunable


@pytest.fixture
def broken():
    raise RuntimeError("no device today")


@pytest.fixture
def once():
    if os.path.exists("set-up-once"):
        raise RuntimeError("this fixture cannot be set up twice")
    open("set-up-once", "w").close()


@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_broken_fixture(autotune, broken):
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_fixture_fails_in_the_worker(autotune, once):
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_fine(autotune):
    autotune.measure(lambda: None)
"""


def test_fixture_setup_errors_fail_their_test_and_the_run_goes_on(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=SETUP_ERRORS)
    result = project.runpytest("--autotune")
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_broken_fixture*",
            "*RuntimeError: no device today",
            "*tuning failed: the trial worker exited with status 1 before running any trial; its output:*",
        ]
    )
    # the worker's own report of its setup error is quoted in the failure
    assert "RuntimeError: this fixture cannot be set up twice" in result.stdout.str()
    stored = json.loads((project.path / "autotune.json").read_text())
    (device,) = stored["devices"].values()
    assert sorted(device["tests"]) == ["test_k.py::test_fine"]


LEAKY = """
from pytest_autotune import Interval, tunable

LEAK = []


@tunable(A=Interval(1, 4, default=1), strategy="exhaustive", finalists=1, worker_memory="100MB")
def test_leaky(autotune):
    LEAK.append(b"x" * (40 << 20))  # 40 MB that stay referenced: a leak across trials
    autotune.measure(lambda: None)
"""


def test_a_leaking_worker_is_replaced_and_every_trial_is_measured(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=LEAKY)
    result = project.runpytest("--autotune")
    result.assert_outcomes(passed=1)
    # 4 trials, the winner's 3 finalist rounds and the 5x slower default's 1: 8 calls, a new worker
    # after every third (120 MB > 100 MB)
    result.stdout.fnmatch_lines(
        [
            "*test_leaky  100us  100us  *≥5.0x  *4 (ok 4)  {'A': 3}",
            "      [[]trial worker restarted: 2 memory restarts (details: *)]",
        ]
    )


def test_worker_command_forwards_the_parent_settings(pytester: pytest.Pytester) -> None:
    from pytest_autotune.plugin.workers.parent import worker_arguments

    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(test_k="def test_x(): pass")
    (item,), _ = pytester.inline_genitems(
        "--import-mode=importlib", "-W", "error::UserWarning", "-o", "xfail_strict=true", "--noconftest"
    )
    args = worker_arguments(item, Path("/private"))
    joined = " ".join(args)
    assert args[:4] == [sys.executable, "-m", "pytest", str(pytester.path / "test_k.py")]
    assert f"--rootdir {pytester.path} " in joined
    assert f"-c {pytester.path / 'tox.ini'} " in joined
    assert "-o addopts= " in joined  # the ini's addopts arrive through the parsed options below
    assert "-p no:cacheprovider " in joined
    assert "--import-mode=importlib " in joined
    assert "-W error::UserWarning " in joined
    assert "-o xfail_strict=true " in joined
    assert "--noconftest " in joined
    assert "-p no:hypothesispytest " in joined  # the test does not use @given
    assert "--basetemp /private/tmp " in joined
