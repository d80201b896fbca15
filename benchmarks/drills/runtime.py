"""Bad-input drills of the run-time area: options, per-test marks, prune selections, bad measured
values, crashes, signals, stale worker directories and concurrent runs (issue 23).

Every drill is a real ``pytest`` subprocess on a generated project whose times come from a fake
timer. Most start from a copy of one tuned *template* project (two files, four tunable tests, all
tuned into ``autotune.json``), so "data lost" compares the store, the journals and the tuned
entries the user had before the drill with what is left after it.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.drills.bad_input_kit import Drill, Observation, digest
from benchmarks.drills.faults_kit import (
    DrillResult,
    _interrupt,
    _start_tuning,
    _wait_for_pause,
    clean_environment,
    make_drill_project,
    pytest_command,
    read_calls,
    reference_run,
    resume_drill,
    run_pytest,
    store_entries,
)

__all__ = ["DRILLS"]

AREA = "run"

TEMPLATE_CONFTEST = """
import os
import pytest


class FakeTimer:
    def __call__(self, fn, autotune):
        value = 1e-4 * (1 + (autotune.config["A"] - 3) ** 2)
        if "BAD_TIME" in os.environ and autotune.config["A"] == 2:
            value = eval(os.environ["BAD_TIME"])
        return fn(), value


@pytest.fixture
def autotune_timer():
    return FakeTimer()
"""

TEMPLATE_X = """
import json, os
import pytest
from pytest_autotune import Interval, tunable


@pytest.mark.parametrize("n", [1, 2, 3])
@tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
def test_t(autotune, n):
    with open("calls.jsonl", "a") as f:
        f.write(json.dumps([n, autotune.config]) + "\\n")
    if "CRASH_AT" in os.environ and autotune.config["A"] == int(os.environ["CRASH_AT"]):
        os.abort()
    if "BAD_RECORD" in os.environ:
        bad = eval(os.environ["BAD_RECORD"])
        autotune.record(bad if autotune.config["A"] == 2 else 1e-4 * autotune.config["A"])
    else:
        autotune.measure(lambda: None)
"""

TEMPLATE_Y = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
def test_u(autotune):
    autotune.measure(lambda: None)
"""

TUNED = ["test_x.py::test_t[1]", "test_x.py::test_t[2]", "test_x.py::test_t[3]", "test_y.py::test_u"]

_template_lock = threading.Lock()
_template: Path | None = None
_reference_lock = threading.Lock()
_references: dict[str, Any] = {}
_scratch = Path(tempfile.mkdtemp(prefix="drills-run-"))
atexit.register(shutil.rmtree, _scratch, True)


def _template_project() -> Path:
    """The tuned template (built once per process, in-process trials)."""
    global _template
    with _template_lock:
        if _template is None:
            path = _scratch / "template"
            path.mkdir()
            (path / "pytest.ini").write_text("[pytest]\n")
            (path / "conftest.py").write_text(TEMPLATE_CONFTEST)
            (path / "test_x.py").write_text(TEMPLATE_X)
            (path / "test_y.py").write_text(TEMPLATE_Y)
            done = run_pytest(path, "--autotune", "--autotune-isolate=none")
            if done.returncode != 0 or sorted(store_entries(path)) != TUNED:
                raise RuntimeError(f"template tuning failed:\n{done.stdout[-2000:]}")
            (path / "calls.jsonl").unlink()
            _template = path
        return _template


def _project(path: Path) -> Path:
    project = path / "project"
    shutil.copytree(_template_project(), project)
    return project


def _snapshot(project: Path) -> dict[str, str | None]:
    """Digests of the store and of every journal: what the user has."""
    files = [project / "autotune.json", *sorted((project / ".pytest_cache").rglob("*.jsonl"))]
    return {str(p.relative_to(project)): digest(p) for p in files}


def _calls(project: Path) -> int:
    path = project / "calls.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _tail(result: subprocess.CompletedProcess[str]) -> str:
    return (result.stdout + result.stderr).strip()


# -- usage errors ---------------------------------------------------------------------------------------
def _usage(
    name: str,
    args: Sequence[str],
    message: str,
    *,
    env: dict[str, str] | None = None,
    ini: str | None = None,
) -> Drill:
    def run(path: Path) -> Observation:
        project = _project(path)
        if ini is not None:
            (project / "pytest.ini").write_text(f"[pytest]\n{ini}\n")
        before = _snapshot(project)
        result = run_pytest(project, "--autotune", "--autotune-isolate=none", *args, **(env or {}))
        lost = _snapshot(project) != before
        text = _tail(result)
        line = next((x for x in text.splitlines() if message in x), text.splitlines()[-1] if text else "")
        ok = result.returncode == 4 and message in text and _calls(project) == 0
        return Observation(f"rc {result.returncode}: {line}", ok, lost)

    return Drill(AREA, name, f"usage error (rc 4) before any tuning: ...{message}...", run)


USAGE = [
    _usage(
        "--autotune-strategy=bo:initial=abc",
        ["--autotune-strategy=bo:initial=abc"],
        "--autotune-strategy: invalid strategy='bo:initial=abc': expected bo option initial='abc'",
    ),
    _usage(
        "--autotune-strategy=random:bogus=1",
        ["--autotune-strategy=random:bogus=1"],
        "strategy 'random': unknown option(s) bogus",
    ),
    _usage(
        "--autotune-json=/proc/nope/x.json",
        ["--autotune-json=/proc/nope/x.json"],
        "--autotune-json: cannot write /proc/nope/x.json",
    ),
    _usage(
        "--autotune-tolerance=10", ["--autotune-tolerance=10"], "--autotune-tolerance: '10': '10' has no unit"
    ),
    _usage("--autotune-budget=abc", ["--autotune-budget=abc"], "--autotune-budget: invalid budget='abc'"),
    _usage("--autotune-budget=-5", ["--autotune-budget=-5"], "--autotune-budget: invalid budget='-5'"),
    _usage("--autotune-budget=0", ["--autotune-budget=0"], "evaluations must be positive"),
    _usage("--autotune-seed=x", ["--autotune-seed=x"], "--autotune-seed: invalid seed='x'"),
    _usage(
        "--autotune-trial-timeout=0",
        ["--autotune-trial-timeout=0"],
        "--autotune-trial-timeout: invalid trial_timeout='0'",
    ),
    _usage(
        "--autotune-trial-timeout=-3",
        ["--autotune-trial-timeout=-3"],
        "--autotune-trial-timeout: invalid trial_timeout='-3'",
    ),
    _usage(
        "--autotune-worker-memory=lots",
        ["--autotune-worker-memory=lots"],
        "--autotune-worker-memory: invalid worker_memory='lots'",
    ),
    _usage(
        "ini autotune_strategy = bo:initial=abc",
        [],
        "ini key autotune_strategy: invalid strategy='bo:initial=abc'",
        ini="autotune_strategy = bo:initial=abc",
    ),
    _usage(
        "ini autotune_tolerance = 10",
        [],
        "ini key autotune_tolerance: '10': '10' has no unit",
        ini="autotune_tolerance = 10",
    ),
    _usage(
        "ini autotune_budget = abc",
        [],
        "ini key autotune_budget: invalid budget='abc'",
        ini="autotune_budget = abc",
    ),
    _usage(
        "ini autotune_json = /proc/nope/x.json",
        [],
        "ini key autotune_json: cannot write /proc/nope/x.json",
        ini="autotune_json = /proc/nope/x.json",
    ),
    _usage(
        "env PYTEST_AUTOTUNE_STRATEGY=bo:initial=abc",
        [],
        "environment variable PYTEST_AUTOTUNE_STRATEGY: invalid strategy='bo:initial=abc'",
        env={"PYTEST_AUTOTUNE_STRATEGY": "bo:initial=abc"},
    ),
    _usage(
        "env PYTEST_AUTOTUNE_TOLERANCE=10",
        [],
        "environment variable PYTEST_AUTOTUNE_TOLERANCE: '10': '10' has no unit",
        env={"PYTEST_AUTOTUNE_TOLERANCE": "10"},
    ),
    _usage(
        "env PYTEST_AUTOTUNE_JSON=/proc/nope/x.json",
        [],
        "environment variable PYTEST_AUTOTUNE_JSON: cannot write /proc/nope/x.json",
        env={"PYTEST_AUTOTUNE_JSON": "/proc/nope/x.json"},
    ),
    _usage(
        "env PYTEST_AUTOTUNE_TRIAL_TIMEOUT=0",
        [],
        "environment variable PYTEST_AUTOTUNE_TRIAL_TIMEOUT: invalid trial_timeout='0'",
        env={"PYTEST_AUTOTUNE_TRIAL_TIMEOUT": "0"},
    ),
    _usage(
        "env PYTEST_AUTOTUNE_SEED=-1",
        [],
        "environment variable PYTEST_AUTOTUNE_SEED: invalid seed='-1'",
        env={"PYTEST_AUTOTUNE_SEED": "-1"},
    ),
]


# -- per-test marks -------------------------------------------------------------------------------------
def _mark(name: str, decoration: str, message: str) -> Drill:
    def run(path: Path) -> Observation:
        project = _project(path)
        (project / "test_z.py").write_text(
            "import pytest\nfrom pytest_autotune import Interval, tunable\n\n"
            f"{decoration}\ndef test_z(autotune):\n    autotune.measure(lambda: None)\n"
        )
        before = _snapshot(project)
        result = run_pytest(project, "--autotune", "--autotune-isolate=none", "test_z.py")
        text = _tail(result)
        line = next((x for x in text.splitlines() if message in x), text.splitlines()[-1] if text else "")
        ok = result.returncode in (1, 2) and message in text
        return Observation(f"rc {result.returncode}: {line}", ok, _snapshot(project) != before)

    return Drill(AREA, name, f"the test errors at collection/setup naming it: ...{message}...", run)


MARKS = [
    _mark(
        '@tunable(strategy="bo:initial=abc")',
        '@tunable(A=Interval(1, 3), strategy="bo:initial=abc")',
        "@tunable on test_z.test_z: invalid strategy='bo:initial=abc'",
    ),
    _mark(
        '@pytest.mark.autotune(budget="abc")',
        '@pytest.mark.autotune(budget="abc")\n@tunable(A=Interval(1, 3))',
        "@pytest.mark.autotune on test_z.py::test_z: invalid budget='abc'",
    ),
    _mark(
        '@pytest.mark.autotune(strategy="anneal:cycle=0")',
        '@pytest.mark.autotune(strategy="anneal:cycle=0")\n@tunable(A=Interval(1, 3))',
        "@pytest.mark.autotune on test_z.py::test_z: invalid strategy='anneal:cycle=0'",
    ),
    _mark(
        '@pytest.mark.autotune(tolerance="10")',
        '@pytest.mark.autotune(tolerance="10")\n@tunable(A=Interval(1, 3))',
        "@pytest.mark.autotune on test_z.py::test_z: invalid tolerance='10'",
    ),
]


# -- prune ----------------------------------------------------------------------------------------------
def _prune(
    name: str,
    args: Sequence[str],
    expected: str,
    *,
    refused: str | None,
    prepare: Callable[[Path], None] | None = None,
    removed: Sequence[str] = (),
) -> Drill:
    """Prune with ``args``: refused with ``refused`` in the output, or removes exactly ``removed``."""

    def run(path: Path) -> Observation:
        project = _project(path)
        store = json.loads((project / "autotune.json").read_text())
        device = next(iter(store["devices"]))
        gone = dict(store["devices"][device]["tests"]["test_y.py::test_u"])
        store["devices"][device]["tests"]["test_x.py::test_gone"] = gone  # a test that no longer exists
        (project / "autotune.json").write_text(json.dumps(store, indent=2))
        if prepare is not None:
            prepare(project)
        result = run_pytest(project, "--autotune-prune", *args)
        kept = set(store_entries(project))
        text = _tail(result)
        live = set(TUNED)
        lost = not live <= kept
        if refused is not None:
            line = next(
                (x for x in text.splitlines() if "--autotune-prune skipped" in x), "no refusal printed"
            )
            ok = refused in text and kept == live | {"test_x.py::test_gone"}
        else:
            line = next((x for x in text.splitlines() if "removed" in x), text.splitlines()[-1])
            ok = kept == live | {"test_x.py::test_gone"} - set(removed)
        return Observation(f"{line}; {len(kept)} entries left", ok, lost)

    return Drill(AREA, name, expected, run)


def _break_y(project: Path) -> None:
    (project / "test_y.py").write_text("import no_such_module_anywhere\n" + TEMPLATE_Y)


def _fail_once(project: Path) -> None:
    cache = project / ".pytest_cache" / "v" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "lastfailed").write_text(json.dumps({"test_x.py::test_t[2]": True}))


PRUNE = [
    _prune(
        "prune test_x.py::test_t[2] (a node id)",
        ["test_x.py::test_t[2]"],
        "refused: node ids select part of a file; every entry kept",
        refused="node ids select only part of their file",
    ),
    _prune(
        "prune -k 't and 2'",
        ["-k", "t and 2"],
        "refused (deselected); every entry kept",
        refused="deselected",
    ),
    _prune("prune -m 'not autotune'", ["-m", "not autotune"], "refused (deselected)", refused="deselected"),
    _prune(
        "prune --deselect test_x.py::test_t[1]",
        ["--deselect", "test_x.py::test_t[1]"],
        "refused (deselected); every entry kept",
        refused="deselected",
    ),
    _prune(
        "prune --lf",
        ["--lf"],
        "refused: --lf selects only the last failures",
        refused="--lf selects only",
        prepare=_fail_once,
    ),
    _prune(
        "prune test_y.py (narrower than the project; test_x.py has a gone test)",
        ["test_y.py"],
        "test_x.py not collected: its entries (the gone one too) kept",
        refused=None,
    ),
    _prune(
        "prune while test_y.py fails to import",
        ["--continue-on-collection-errors"],
        "refused (collection error); test_y.py's entry kept",
        refused="collection error",
        prepare=_break_y,
    ),
    _prune(
        "prune the whole project (control)",
        [],
        "removes only test_x.py::test_gone",
        refused=None,
        removed=["test_x.py::test_gone"],
    ),
]


# -- bad measured values --------------------------------------------------------------------------------
def _bad_value(name: str, env: dict[str, str], message: str) -> Drill:
    def run(path: Path) -> Observation:
        project = _project(path)
        before = _snapshot(project)
        entries = store_entries(project)
        result = run_pytest(project, "--autotune", "--autotune-isolate=none", "test_x.py::test_t[1]", **env)
        text = _tail(result)
        line = next((x for x in text.splitlines() if message in x), text.splitlines()[-1] if text else "")
        ok = result.returncode == 1 and message in text and "for configuration {'A': 2}" in text
        lost = (
            store_entries(project) != entries or digest(project / "autotune.json") != before["autotune.json"]
        )
        return Observation(f"rc {result.returncode}: {line}", ok, lost)

    return Drill(AREA, name, f"the test fails: ...{message}... for configuration {{'A': 2}}; store kept", run)


VALUES = [
    _bad_value(
        "timer returns -1e-4", {"BAD_TIME": "-1e-4"}, "the timer FakeTimer returned -0.0001 is not a positive"
    ),
    _bad_value("timer returns 0", {"BAD_TIME": "0"}, "the timer FakeTimer returned 0 is not a positive time"),
    _bad_value("timer returns NaN", {"BAD_TIME": "float('nan')"}, "returned nan is not a finite number"),
    _bad_value("timer returns '1e-4' (a str)", {"BAD_TIME": "'1e-4'"}, "returned '1e-4' is not a number"),
    _bad_value("timer returns True", {"BAD_TIME": "True"}, "returned True is not a number"),
    _bad_value(
        "autotune.record(-1.0)", {"BAD_RECORD": "-1.0"}, "autotune.record got -1.0 is not a positive time"
    ),
    _bad_value("autotune.record(0)", {"BAD_RECORD": "0"}, "autotune.record got 0 is not a positive time"),
    _bad_value(
        "autotune.record(inf)", {"BAD_RECORD": "float('inf')"}, "autotune.record got inf is not a finite"
    ),
    _bad_value(
        "autotune.record('fast')", {"BAD_RECORD": "'fast'"}, "autotune.record got 'fast' is not a number"
    ),
]


# -- crash with --autotune-isolate=none, then resume twice ----------------------------------------------
def _crash_then_resume(path: Path) -> Observation:
    project = _project(path)
    entries = store_entries(project)
    crashed = run_pytest(
        project, "--autotune", "--autotune-isolate=none", "test_x.py::test_t[2]", CRASH_AT="2"
    )
    first = _calls(project)
    resumed = run_pytest(
        project, "--autotune", "--autotune-isolate=none", "test_x.py::test_t[2]", CRASH_AT="2"
    )
    calls = [json.loads(x) for x in (project / "calls.jsonl").read_text().splitlines()]
    crashing_calls = sum(1 for _, config in calls if config == {"A": 2})
    again = run_pytest(project, "--autotune=missing", "--autotune-isolate=none", CRASH_AT="2")
    after = store_entries(project)
    tuned = after["test_x.py::test_t[2]"]
    counts = dict(tuned.tuning.counts) if tuned.tuning else {}
    ok = (
        (crashed.returncode < 0 or crashed.returncode == 134)
        and resumed.returncode == 0
        and again.returncode == 0
        and crashing_calls == 1
    )
    ok = ok and counts.get("runtime") == 1 and dict(tuned.config) == {"A": 3}
    lost = any(after.get(k) != v for k, v in entries.items() if k != "test_x.py::test_t[2]")
    observed = (
        f"crash rc {crashed.returncode} after {first} calls; resume rc {resumed.returncode}: A=2 run "
        f"{crashing_calls}x in all, counts {counts}; 2nd resume rc {again.returncode}"
    )
    return Observation(observed, ok, lost)


# -- signals: the existing resume drills ----------------------------------------------------------------
def _reference(strategy: str) -> Any:
    with _reference_lock:
        if strategy not in _references:
            _references[strategy] = reference_run(_scratch / f"reference-{strategy}", strategy)
        return _references[strategy]


def _signal_drill(sig: signal.Signals, pause_at: int) -> Callable[[Path], Observation]:
    def run(path: Path) -> Observation:
        result = resume_drill(path / "drill", _reference("random"), sig, pause_at)
        observed = (
            f"rc {result.exit_code}; {result.journaled_before} trials journaled; resumed "
            f"{result.resumed_evaluated}, repeated {result.repeated}; same trials {result.same_trials}, "
            f"same winner {result.same_winner}" + (f"; {result.problems[0]}" if result.problems else "")
        )
        lost = not (result.store_valid_after_kill and result.first_entry_kept)
        return Observation(observed, result.passed, lost)

    return run


# -- stale worker directories after SIGKILL -------------------------------------------------------------
def _stale_worker_dirs(path: Path) -> Observation:
    project = make_drill_project(path / "project", "random")
    tmp = path / "tmp"
    tmp.mkdir()
    live = tmp / f"pytest-autotune-worker-{os.getpid()}-live"  # a live run's directory (this process)
    live.mkdir()
    process = _start_tuning(project, DRILL_TEST="second", DRILL_PAUSE_AT="2", TMPDIR=str(tmp))
    _wait_for_pause(project, process, within=300)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(p.name.endswith(str(process.pid)) for p in tmp.iterdir()):
        time.sleep(0.1)  # the orphaned worker notices its parent is gone
    left = sorted(p.name for p in tmp.glob("pytest-autotune-worker-*") if p != live)
    (project / "paused").unlink()
    read_calls(project, "second")
    resumed = run_pytest(project, "--autotune=missing", TMPDIR=str(tmp))
    after = sorted(p.name for p in tmp.glob("pytest-autotune-worker-*") if p != live)
    ok = bool(left) and not after and live.exists() and resumed.returncode == 0
    observed = (
        f"after SIGKILL {len(left)} stale dir(s); next run rc {resumed.returncode} left {len(after)}, "
        f"live run's dir kept: {live.exists()}"
    )
    return Observation(observed, ok, not live.exists())


# -- two concurrent tuning runs of one test -------------------------------------------------------------
def _concurrent(path: Path) -> Observation:
    project = make_drill_project(path / "project", "random")
    first = subprocess.Popen(
        pytest_command("--autotune", "--autotune-isolate=none", "test_drill.py::test_second"),
        cwd=project,
        env=clean_environment(DRILL_TEST="second", DRILL_PAUSE_AT="3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_pause(project, first, within=300)
    journals = sorted((project / ".pytest_cache").rglob("*test_second*.jsonl"))
    before = {str(p): digest(p) for p in journals}
    second = run_pytest(project, "--autotune", "--autotune-isolate=none", "test_drill.py::test_second")
    untouched = {str(p): digest(p) for p in journals} == before
    text = _tail(second)
    named = f"being tuned by another process (pid {first.pid})" in text
    line = next((x for x in text.splitlines() if "another process" in x), text.splitlines()[-1])

    _interrupt(project, first, signal.SIGINT, DrillResult("random", "SIGINT", "trial 3"))
    (project / "paused").unlink()
    resumed = run_pytest(project, "--autotune=missing", "--autotune-isolate=none")
    entries = store_entries(project)
    ok = second.returncode == 1 and named and untouched and resumed.returncode == 0 and len(entries) == 2
    observed = (
        f"2nd run rc {second.returncode}: {line.strip()}; journal untouched {untouched}; resume rc "
        + str(resumed.returncode)
    )
    return Observation(observed, ok, not untouched or len(entries) != 2)


# -- xdist: a refusal printed once ----------------------------------------------------------------------
def _xdist_refusal(path: Path) -> Observation:
    project = _project(path)
    before = _snapshot(project)
    result = run_pytest(project, "-n", "2", "--autotune", "test_x.py")
    text = _tail(result)
    count = text.count("test_x.py::test_t[1]: refusing to tune on")
    chained = "During handling of the above exception" in text
    ok = result.returncode == 1 and count == 1 and not chained
    observed = f"rc {result.returncode}; refusal of test_t[1] printed {count}x; chained traceback: {chained}"
    return Observation(observed, ok, _snapshot(project) != before)


DRILLS: list[Drill] = [
    *USAGE,
    *MARKS,
    *PRUNE,
    *VALUES,
    Drill(
        AREA,
        "configuration crashes pytest (--autotune-isolate=none), resume twice",
        "crash; resuming records it as a runtime failure, not re-run; --autotune=missing then: no-op",
        _crash_then_resume,
    ),
    Drill(
        AREA,
        "SIGINT during tuning, then resume",
        "rc 2; resume evaluates exactly the remaining trials; same winner",
        _signal_drill(signal.SIGINT, 5),
    ),
    Drill(
        AREA,
        "SIGKILL during tuning, then resume",
        "resume evaluates exactly the remaining trials; same winner",
        _signal_drill(signal.SIGKILL, 5),
    ),
    Drill(
        AREA,
        "SIGKILL leaves a worker dir; next run",
        "the next run removes the dead run's worker dir, keeps a live run's",
        _stale_worker_dirs,
    ),
    Drill(
        AREA,
        "two concurrent tune runs of one test",
        "2nd waits, then fails the test naming the 1st's pid; journal untouched; 1st resumes",
        _concurrent,
    ),
    Drill(
        AREA,
        "pytest -n 2 --autotune on one device",
        "each refusal printed once, no chained traceback",
        _xdist_refusal,
    ),
]
