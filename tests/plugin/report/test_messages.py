"""Messages that said the wrong thing (issue 34, item 9).

A declared objective that was never recorded is not a body that "never called autotune.measure()";
advice to "fix or delete the file ... re-run pytest --autotune" belongs to the store a run writes,
not to a recovery file, a transfer source or REF's temporary copy of the store; and two typos:
"the the working tree worker" and "expected 'abc' is not a ...".
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_autotune.tuning.process.worker import Launched, Worker, WorkerStartError
from tests.plugin.compare.git_commands import git
from tests.plugin.test_bad_input import PARAMETRIZED

OBJECTIVE_NOT_RECORDED = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3, default=1), strategy="exhaustive", objective="GFLOP/s", maximize=True)
def test_rate(autotune):
    autotune.measure(lambda: None)
"""


@pytest.mark.parametrize("mode", [["--autotune"], [], ["--autotune", "--autotune-isolate=process"]])
def test_a_declared_objective_never_recorded_is_named(project: pytest.Pytester, mode: list[str]) -> None:
    project.makepyfile(test_k=OBJECTIVE_NOT_RECORDED)
    result = project.runpytest(*mode)
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "never called autotune.measure()" not in output
    assert (
        "the test called autotune.measure() but never recorded its objective 'GFLOP/s'; record it with "
        "autotune.metric('GFLOP/s', value)"
    ) in output


def test_a_failed_configuration_that_measured_is_still_only_a_failed_trial(project: pytest.Pytester) -> None:
    """The check above is for bodies that returned: a body that measured, then failed its assert,
    stays a ``correctness`` trial of that configuration."""
    project.makepyfile(
        test_k=OBJECTIVE_NOT_RECORDED.replace(
            "    autotune.measure(lambda: None)",
            "    autotune.measure(lambda: None)\n    assert autotune.config['A'] != 2\n"
            "    autotune.metric('GFLOP/s', autotune.config['A'])",
        )
    )
    result = project.runpytest("--autotune")
    result.assert_outcomes(passed=1)
    assert "correctness 1" in result.stdout.str()


def test_a_bad_value_message_does_not_put_expected_before_its_reason(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=PARAMETRIZED)
    result = project.runpytest("--autotune", "--autotune-budget=abc")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "invalid budget='abc': 'abc' is not a duration" in result.stderr.str()
    assert "expected 'abc'" not in result.stderr.str()


class _Ended:
    """A worker process that has exited with status 3."""

    pid = 0

    def exitcode(self) -> int | None:
        return 3

    def kill(self) -> None:
        pass

    def wait(self, timeout: float) -> int | None:
        return 3


def test_a_worker_named_with_its_article_is_not_named_twice() -> None:
    def launch() -> Launched:
        parent, child = multiprocessing.Pipe()
        child.close()
        return Launched(_Ended(), parent)

    with pytest.raises(WorkerStartError) as info:
        Worker(launch, timeout=None, name="the working tree worker").request("hello")
    assert "the the" not in str(info.value)
    assert "the working tree worker exited with status 3 before running any trial" in str(info.value)


def test_only_the_store_itself_gets_repair_advice(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=PARAMETRIZED)
    (project.path / "other.json").write_text("{not json")
    result = project.runpytest("--autotune", "--autotune-transfer-from=other.json")
    assert "--autotune-transfer-from: not used: " in result.stdout.str()
    assert "fix or delete" not in result.stdout.str()
    recovery = project.path / "autotune.json.recovered-20260101T000000Z.json"
    recovery.write_text("{not json")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "merge", str(recovery)],
        capture_output=True,
        text=True,
        check=False,
        cwd=project.path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 1
    assert f"{recovery}: not valid JSON" in done.stderr
    assert "fix or delete" not in done.stderr
    (project.path / "autotune.json").write_text("{not json")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "fix or delete the file (it was left untouched)" in result.stderr.str()


def test_refs_damaged_store_gets_no_repair_advice(project: pytest.Pytester, tmp_path: Path) -> None:
    """REF's store is a temporary copy: "fix or delete" it would be advice about a file that is gone."""
    project.makepyfile(test_k=PARAMETRIZED)
    project.makeini("[pytest]\naddopts = -p no:randomly -p no:cacheprovider\n")
    (project.path / "autotune.json").write_text(json.dumps({"schema_version": 1, "devices": {"x": 1}}))
    git(project.path, "init", "-q")
    git(project.path, "add", ".")
    git(project.path, "commit", "-q", "-m", "damaged store")
    (project.path / "autotune.json").unlink()
    result = project.runpytest("--autotune-compare=HEAD", "-rA")
    output = result.stdout.str() + result.stderr.str()
    assert "device 'x' must be an object with a 'tests' object" in output
    assert "fix or delete" not in output
