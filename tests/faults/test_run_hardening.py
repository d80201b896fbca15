"""Issue 23 on real pytest processes: a configuration that crashes pytest, concurrent runs of one
test, and worker directories left behind by a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from pytest_autotune.plugin.workers.parent import WORKER_DIR_PREFIX, remove_stale_worker_dirs

CRASHING = """
import json, os
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 4, default=1), strategy="exhaustive", isolate="none")
def test_c(autotune):
    with open("calls.jsonl", "a") as f:
        f.write(json.dumps(autotune.config) + "\\n")
    if autotune.config["A"] == 2:
        os.abort()
    autotune.measure(lambda: None)
"""


def test_a_configuration_that_crashes_pytest_is_not_run_again_on_resume(
    drills: ModuleType, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "conftest.py").write_text(drills.DRILL_CONFTEST)
    (project / "test_c.py").write_text(CRASHING)
    crashed = drills.run_pytest(project, "--autotune")
    assert crashed.returncode == -signal.SIGABRT
    for _ in range(2):  # the issue: every resume crashed again at the same trial
        resumed = drills.run_pytest(project, "--autotune=missing")
        assert resumed.returncode == 0, resumed.stdout
    calls = [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]
    assert calls.count({"A": 2}) == 1  # crashed once, never run again (not as a finalist either)
    entry = drills.store_entries(project)["test_c.py::test_c"]
    assert dict(entry.config) == {"A": 3}
    assert entry.tuning is not None
    assert entry.tuning.counts["runtime"] == 1
    done = next((project / ".pytest_cache").rglob("*.done.jsonl")).read_text()
    assert "the process running this trial died before it finished" in done


def test_a_second_run_tuning_the_same_test_waits_then_names_the_first(
    drills: ModuleType, tmp_path: Path
) -> None:
    project = drills.make_drill_project(tmp_path / "project", "random")
    first = subprocess.Popen(
        drills.pytest_command("--autotune", "--autotune-isolate=none", "test_drill.py::test_second"),
        cwd=project,
        env=drills.clean_environment(DRILL_TEST="second", DRILL_PAUSE_AT="3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        drills._wait_for_pause(project, first, within=300)
        journal = next((project / ".pytest_cache").rglob("*test_second*.jsonl"))
        before = journal.read_bytes()
        second = drills.run_pytest(
            project, "--autotune", "--autotune-isolate=none", "test_drill.py::test_second"
        )
        assert second.returncode == 1
        assert f"this test is being tuned by another process (pid {first.pid})" in second.stdout
        assert journal.read_bytes() == before
        assert len(drills.read_calls(project, "second")) == 3  # the second run called no body
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    (project / "paused").unlink()
    resumed = drills.run_pytest(project, "--autotune=missing", "--autotune-isolate=none")
    assert resumed.returncode == 0, resumed.stdout
    assert sorted(drills.store_entries(project)) == [
        "test_drill.py::test_first",
        "test_drill.py::test_second",
    ]


def test_only_worker_directories_of_dead_owners_are_removed(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead_pid = int(dead.stdout)
    stale = tmp_path / f"{WORKER_DIR_PREFIX}{dead_pid}-abc"
    mine = tmp_path / f"{WORKER_DIR_PREFIX}{os.getpid()}-abc"
    live = tmp_path / f"{WORKER_DIR_PREFIX}1-abc"  # init: alive (or not ours to judge)
    unnamed = tmp_path / f"{WORKER_DIR_PREFIX}k3j2h1"  # an older version's name: owner unknown
    for path in (stale, mine, live, unnamed):
        (path / "cache").mkdir(parents=True)
    assert remove_stale_worker_dirs(tmp_path) == [stale]
    assert not stale.exists()
    assert mine.exists()
    assert live.exists()
    assert unnamed.exists()
