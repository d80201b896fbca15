"""The library side of isolation: ``IsolatedObjective`` with ``Tuner.run``, exit descriptions, options."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import ModuleType

import pytest

from pytest_autotune import Interval, Tuner, build_space
from pytest_autotune.policy import PolicyError
from pytest_autotune.tuning.process.isolated import IsolatedObjective, describe_exit, output_excerpt
from pytest_autotune.tuning.validation import validate_policy
from pytest_autotune.values import parse_size

OBJECTIVE = """
import ctypes, os, time


def objective(config):
    x = config["x"]
    if x == 2:
        ctypes.string_at(0)
    if x == 3:
        time.sleep(60)
    if x == 4:
        raise ValueError("x=4 is not supported")
    if x == 5:
        os._exit(9)
    return float((x - 6) ** 2 + 1)


def report_and_hang(config):
    with open(config["pid_file"], "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)
"""


@pytest.fixture
def objectives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A module of objectives importable by name (spawned workers import it again)."""
    (tmp_path / "isolation_objectives.py").write_text(OBJECTIVE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import isolation_objectives  # type: ignore[import-not-found]

    return isolation_objectives  # type: ignore[no-any-return]


def test_isolated_objective_turns_crashes_hangs_and_errors_into_outcomes(objectives: ModuleType) -> None:
    space = build_space({"x": Interval(1, 7)})
    with IsolatedObjective(objectives.objective, timeout=1.0) as objective:
        result = Tuner(space, "exhaustive", seed=0).run(objective)
        stats = objective.stats
    by_x = {record.config["x"]: record.outcome for record in result.history}
    assert result.best_config == {"x": 6}
    assert {x: o.label for x, o in by_x.items()} == {
        1: "ok",
        2: "runtime",
        3: "timeout",
        4: "runtime",
        5: "runtime",
        6: "ok",
        7: "ok",
    }
    assert by_x[2].detail == "the objective worker was killed by signal SIGSEGV (Segmentation fault)"
    assert by_x[3].detail.startswith("no result within the trial timeout of 1s")
    assert by_x[4].detail == "ValueError: x=4 is not supported"  # an exception keeps the worker
    assert by_x[5].detail == "the objective worker exited with status 9"
    assert (stats.starts, stats.crashes, stats.timeouts) == (4, 2, 1)


KILLED_PARENT = """
import sys
sys.path.insert(0, {path!r})
from isolation_objectives import report_and_hang
from pytest_autotune.tuning.process.isolated import IsolatedObjective

with IsolatedObjective(report_and_hang) as objective:
    objective({{"pid_file": {pid_file!r}}})
"""


def test_a_killed_parent_leaves_no_worker_behind(
    objectives: ModuleType, tmp_path: Path, drills: ModuleType
) -> None:
    pid_file = tmp_path / "worker.pid"
    code = KILLED_PARENT.format(path=str(tmp_path), pid_file=str(pid_file))
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the worker never started"
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    assert drills.process_gone(worker, within=15), f"worker {worker} outlived its killed parent"


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (-signal.SIGSEGV, "was killed by signal SIGSEGV (Segmentation fault)"),
        (-signal.SIGABRT, "was killed by signal SIGABRT (Aborted)"),
        (-signal.SIGKILL, "was killed by signal SIGKILL (Killed, out of memory?)"),
        (3, "exited with status 3"),
        (0, "exited with status 0"),
    ],
)
def test_exit_descriptions(code: int, text: str) -> None:
    assert describe_exit(code) == text


def test_output_excerpt_keeps_the_body_and_drops_the_machinery() -> None:
    output = textwrap.dedent(
        """\
        computing 4 1
        Fatal Python error: Segmentation fault

        Thread 0x00007f (most recent call first):
          File "/usr/lib/python3.11/threading.py", line 982 in run

        Current thread 0x00007e (most recent call first):
          File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
          File "/project/test_k.py", line 12 in test_faulty
          File "/venv/site-packages/pytest_autotune/plugin/runner.py", line 95 in _call_test_function
          File "/venv/site-packages/_pytest/python.py", line 157 in pytest_pyfunc_call
          File "/venv/site-packages/pluggy/_callers.py", line 103 in _multicall
          File "<frozen runpy>", line 88 in _run_code

        Extension modules: numpy.core._multiarray_umath (total: 1)
        """
    )
    assert output_excerpt(output) == textwrap.dedent(
        """\
        computing 4 1
        Fatal Python error: Segmentation fault

        Current thread 0x00007e (most recent call first):
          File "/usr/lib/python3.11/ctypes/__init__.py", line 519 in string_at
          File "/project/test_k.py", line 12 in test_faulty"""
    )
    long = "\n".join(f"line {i}" for i in range(1000))
    excerpt = output_excerpt(long)
    assert excerpt.startswith("line 0\n")
    assert excerpt.endswith("line 999")
    assert "\n[...]\n" in excerpt
    assert len(excerpt) < 1600


def test_isolation_policy_values() -> None:
    assert validate_policy(
        {"isolate": "process", "trial_timeout": "90s", "worker_memory": "2GB"}, source="s"
    ) == {
        "isolate": "process",
        "trial_timeout": 90.0,
        "worker_memory": 2_000_000_000,
    }
    assert validate_policy({"trial_timeout": "off", "worker_memory": "off"}, source="s") == {
        "trial_timeout": None,
        "worker_memory": None,
    }
    assert validate_policy({"trial_timeout": 2.5}, source="s") == {"trial_timeout": 2.5}
    assert parse_size("512MiB") == 512 << 20
    assert parse_size(1024) == 1024
    with pytest.raises(PolicyError, match=r"@tunable on t: invalid isolate='thread'"):
        validate_policy({"isolate": "thread"}, source="@tunable on t")
    with pytest.raises(PolicyError, match=r"invalid trial_timeout='soon'"):
        validate_policy({"trial_timeout": "soon"}, source="s")
    with pytest.raises(PolicyError, match=r"invalid worker_memory='lots'"):
        validate_policy({"worker_memory": "lots"}, source="s")


def test_isolation_options_are_validated_at_startup(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_k="def test_x(): pass")
    result = pytester.runpytest("--autotune-isolate=thread")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*command line --autotune-isolate: invalid isolate='thread'*"])
    result = pytester.runpytest("-o", "autotune_trial_timeout=-3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini key autotune_trial_timeout: invalid trial_timeout='-3'*"])


def test_a_crash_or_hang_on_one_slot_fails_that_trial_only_and_restarts_that_slot(
    objectives: ModuleType,
) -> None:
    """Two slots, each its own worker: the crashing and hanging trials fail, the others go on."""
    from pytest_autotune.tuning.parallel.executor import LocalExecutor, ObjectiveRunner
    from pytest_autotune.tuning.parallel.loop import run_parallel

    space = build_space({"x": Interval(1, 7)})
    objectives_by_slot = [IsolatedObjective(objectives.objective, timeout=1.0) for _ in range(2)]
    with LocalExecutor([ObjectiveRunner(o) for o in objectives_by_slot]) as executor:
        tuner = Tuner(space, "exhaustive", seed=0)
        result = run_parallel(tuner, executor, lambda trial, value: value)
    labels = {record.config["x"]: record.outcome.label for record in result.history}
    assert labels == {1: "ok", 2: "runtime", 3: "timeout", 4: "runtime", 5: "runtime", 6: "ok", 7: "ok"}
    stats = [o.stats for o in objectives_by_slot]
    assert all(s.starts >= 1 for s in stats)  # both slots served trials
    assert sum(s.crashes for s in stats) == 2
    assert sum(s.timeouts for s in stats) == 1
    # a failed trial's worker is replaced for the slot's next trial (none after a slot's last one)
    assert all(s.starts >= s.crashes + s.timeouts for s in stats)
    assert sum(s.starts for s in stats) >= 2 + 3 - 2
