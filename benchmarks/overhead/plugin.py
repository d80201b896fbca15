"""Cost of the pytest plugin: import time, heavy imports, per-test overhead, per-trial overhead.

Targets (issue 5): ``pytest_autotune.plugin`` imports in <= 50 ms; a plain ``pytest`` run over
tunable tests imports none of torch, gpytorch, scikit-learn. Also reported, to show the plugin adds
little to a run: the overhead of a checked tunable test over an equivalent plain test, and the
plugin's overhead per tuning trial over the bare library loop (``Tuner.run``), and what isolated
trials cost (issue 7): per trial in a worker process against in-process, per worker start (once
per tuned test and after each crash or timeout), and per crashed trial.

Everything runs in subprocesses on a generated project whose timings come from a fake timer (no
hardware), so the numbers measure the plugin, not a kernel. Run with ``nice`` and report the load::

    nice -n 10 .venv/bin/python -m benchmarks plugin-overhead [--tests 40] [--trials 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import format_table
from pytest_autotune.store import Store

HEAVY = ("torch", "gpytorch", "sklearn")
WATCHED = (*HEAVY, "pyopencl", "scipy", "numpy", "rich")

CONFTEST = """
import json, sys
import pytest

from pytest_autotune.testing import FakeTimer

@pytest.fixture
def autotune_timer():
    return FakeTimer(lambda config: 1e-4 * (1 + abs(config["A"] - 7)))

def pytest_unconfigure(config):
    with open("modules.json", "w") as f:
        json.dump(sorted(sys.modules), f)
"""

TUNABLE = """
import pytest
from pytest_autotune import Interval, Set, tunable

@tunable(A=Interval(1, 64), B=Set(1, 2, 4, 8), strategy="random", budget={trials})
@pytest.mark.parametrize("n", range({tests}))
def test_kernel(autotune, n):
    autotune.measure(lambda: None)
"""

PLAIN = """
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_kernel(n):
    for _ in range(11):  # what autotune.measure does by default: one warmup, ten timed calls
        (lambda: None)()
"""

ISOLATION = """
import os
from pytest_autotune import Interval, tunable

@tunable(A=Interval(1, 64), strategy="random", budget={trials}, finalists=1)
def test_trials(autotune):
    autotune.measure(lambda: None)

@tunable(A=Interval(1, 64, default=1), strategy="random", budget={crashes}, finalists=1)
def test_crashes(autotune):
    if autotune.config["A"] % 2 == 0 and autotune.tuning:
        os._exit(1)  # trials of even A kill their worker
    autotune.measure(lambda: None)
"""

MEASURE_IMPORT = """
import time, pytest
wall, cpu = time.perf_counter(), time.process_time()
import pytest_autotune.plugin
print(time.perf_counter() - wall, time.process_time() - cpu)
"""


def _pytest(project: Path, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args],
        cwd=project,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - start


def import_time(repeat: int) -> tuple[float, float]:
    """(min wall, min CPU) seconds of ``import pytest_autotune.plugin`` after pytest, fresh processes."""
    walls, cpus = [], []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", MEASURE_IMPORT], capture_output=True, text=True, check=True
        )
        wall, cpu = (float(x) for x in out.stdout.split())
        walls.append(wall)
        cpus.append(cpu)
    return min(walls), min(cpus)


def library_seconds_per_trial(trials: int, journal: Path | None) -> float:
    """Seconds per trial of the bare library loop on the same space and strategy."""
    from pytest_autotune import Interval, Set, Tuner, build_space

    space = build_space({"A": Interval(1, 64), "B": Set(1, 2, 4, 8)})
    if journal is not None:
        journal.unlink(missing_ok=True)
    start = time.perf_counter()
    tuner = Tuner(space, "random", abort=trials, seed=1, journal=journal)
    with tuner:
        tuner.run(lambda config: 1e-4 * (1 + abs(config["A"] - 7)))
    return (time.perf_counter() - start) / trials


def isolation_costs(trials: int, crashes: int) -> dict[str, float]:
    """Seconds per trial in-process and isolated, per worker start, and per crashed trial."""
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "conftest.py").write_text(CONFTEST)
        (project / "test_isolation.py").write_text(ISOLATION.format(trials=trials, crashes=crashes))
        per_call: dict[str, float] = {}
        starts: list[float] = []
        crash_seconds = 0.0
        for isolate in ("none", "process"):
            out = project / f"{isolate}.json"
            only = ("-k", "test_trials") if isolate == "none" else ()  # a crash would end this pytest
            _pytest(project, "--autotune", f"--autotune-isolate={isolate}", f"--autotune-json={out}", *only)
            benchmarks = {b["name"]: b["extra_info"] for b in json.loads(out.read_text())["benchmarks"]}
            tuned = benchmarks["test_trials"]
            # body calls: the trials, then 2 finalists (best and default) x 3 rounds; the final call
            # runs in the pytest process either way
            seconds = tuned["autotune_tuning"]["duration"]
            isolation = tuned.get("autotune_isolation") or {}
            seconds -= sum(isolation.get("start_seconds", []))
            per_call[isolate] = seconds / (trials + 6)
            if isolate == "process":
                crashing = benchmarks["test_crashes"]
                restarts = crashing["autotune_isolation"]["start_seconds"]
                starts = isolation["start_seconds"] + restarts
                # a crashed trial costs its detection and the next worker start; the trials that
                # ran, the finalists and the first worker start are taken out
                counts = crashing["autotune_tuning"]["counts"]
                survived = crashing["autotune_tuning"]["duration"] - restarts[0]
                survived -= (counts["ok"] + 6) * per_call["process"]
                crash_seconds = survived / max(counts["runtime"], 1)
    return {
        "in_process": per_call["none"],
        "isolated": per_call["process"],
        "start": statistics.median(starts),
        "crashed_trial": crash_seconds,
    }


NAME = "plugin-overhead"  # python -m benchmarks plugin-overhead
QUESTION = "What do the plugin's import, a plain run and isolation cost?"


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks plugin-overhead", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--tests", type=int, default=40, help="parametrized tunable tests in the suite")
    parser.add_argument("--trials", type=int, default=200, help="tuning budget for the per-trial overhead")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (minimum reported)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "conftest.py").write_text(CONFTEST)
        (project / "test_tunable.py").write_text(TUNABLE.format(tests=args.tests, trials=20))
        (project / "test_plain.py").write_text(PLAIN.format(tests=args.tests))
        _pytest(project, "--autotune", "test_tunable.py")  # commit entries so the check compares
        checked = min(_pytest(project, "test_tunable.py") for _ in range(args.repeat))
        modules = set(json.loads((project / "modules.json").read_text()))
        plain = min(_pytest(project, "test_plain.py") for _ in range(args.repeat))

        one = project / "one"
        one.mkdir()
        (one / "conftest.py").write_text(CONFTEST)
        (one / "test_one.py").write_text(TUNABLE.format(tests=1, trials=args.trials))
        _pytest(one, "--autotune", f"--autotune-cache={one / 'autotune.json'}")
        store = Store.load(one / "autotune.json")
        (tuning,) = (e.tuning for d in store.devices() for e in store.entries(d).values())
        assert tuning is not None
        # the tuning duration also covers the finalists' 3 rounds and the final call (about 16 body calls)
        plugin_per_trial = tuning.duration / (tuning.trials + 16)

        library_per_trial = min(library_seconds_per_trial(args.trials, None) for _ in range(3))
        journaled_per_trial = min(library_seconds_per_trial(args.trials, one / "j.jsonl") for _ in range(3))
    costs = isolation_costs(args.trials, crashes=20)
    wall, cpu = import_time(args.repeat * 2)
    imported = sorted(m for m in WATCHED if m in {name.split(".")[0] for name in modules})
    rows = [
        ("import pytest_autotune.plugin (wall, min)", f"{wall * 1e3:.1f} ms", "<= 50 ms", wall <= 0.050),
        ("import pytest_autotune.plugin (CPU, min)", f"{cpu * 1e3:.1f} ms", "<= 50 ms", cpu <= 0.050),
        (
            "heavy modules after a plain run",
            ", ".join(m for m in imported if m in HEAVY) or "none",
            "none of torch, gpytorch, sklearn",
            not set(imported) & set(HEAVY),
        ),
        ("other watched modules after a plain run", ", ".join(imported) or "none", "(info)", None),
        (f"plain run, {args.tests} checked tunable tests", f"{checked:.2f} s", "(info)", None),
        (f"plain run, {args.tests} equivalent plain tests", f"{plain:.2f} s", "(info)", None),
        (
            "overhead per checked tunable test",
            f"{(checked - plain) / args.tests * 1e3:.1f} ms",
            "(info)",
            None,
        ),
        ("plugin tuning loop, per trial (journaled)", f"{plugin_per_trial * 1e3:.2f} ms", "(info)", None),
        ("library Tuner.run, per trial, journaled", f"{journaled_per_trial * 1e3:.2f} ms", "(info)", None),
        ("library Tuner.run, per trial, no journal", f"{library_per_trial * 1e3:.2f} ms", "(info)", None),
        (
            "tuning trial in the pytest process (isolate=none)",
            f"{costs['in_process'] * 1e3:.2f} ms",
            "(info)",
            None,
        ),
        ("tuning trial in a worker (isolate=process)", f"{costs['isolated'] * 1e3:.2f} ms", "(info)", None),
        (
            "isolation cost per trial",
            f"{(costs['isolated'] - costs['in_process']) * 1e3:.2f} ms",
            "(info)",
            None,
        ),
        ("worker start (per tuned test, per restart)", f"{costs['start']:.2f} s", "(info)", None),
        ("crashed trial incl. restart (os._exit)", f"{costs['crashed_trial']:.2f} s", "(info)", None),
    ]
    load = os.getloadavg()[0]
    print(f"pytest-autotune plugin benchmark  (load average {load:.2f} on {os.cpu_count()} CPUs)")
    status = {None: "", True: "OK", False: "MISSED"}
    table = [(name, value, target, status[ok]) for name, value, target, ok in rows]
    print(format_table(["measure", "value", "target", "status"], table, align="lrl"))
    print(
        f"minimum of {args.repeat} runs per timing; a plain run imports numpy for the test module's "
        "search space, nothing heavier"
    )


if __name__ == "__main__":
    main()
