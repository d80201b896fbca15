"""xdist: results reach the controller, the store is written once, shared devices are handled.

These run pytest in subprocesses (xdist cannot run in-process), a few seconds each; plugins that
play no part here (hypothesis, pytest-benchmark) are switched off to keep the start-up short.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Entries = Callable[[], dict[str, dict[str, Any]]]


def run_xdist(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest -n 2 in a subprocess."""
    return pytester.runpytest_subprocess("-n", "2", "-p", "no:hypothesispytest", "-p", "no:benchmark", *args)


def test_workers_results_are_written_once_by_the_controller(
    project: pytest.Pytester, two_tests: str, stored_entries: Entries, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=two_tests, test_m=two_tests)
    tuned = run_xdist(project, "--autotune", "--autotune-allow-shared-device")
    tuned.assert_outcomes(passed=4)
    text = (project.path / "autotune.json").read_text()
    nodeids = ["test_k.py::test_a", "test_k.py::test_b", "test_m.py::test_a", "test_m.py::test_b"]
    assert sorted(stored_entries()) == nodeids
    assert all(text.count(f'"{nodeid}"') == 1 for nodeid in nodeids)
    assert all(entry["config"] == {"A": 3, "B": 3} for entry in stored_entries().values())
    assert [line for line in tuned.stdout.lines if "entries written" in line] == [
        f"{project.path / 'autotune.json'}: 4 entries written"
    ]
    # a regression is a failure under xdist too (pytest-benchmark switches itself off there)
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_b=1.3")
    checked = run_xdist(project, "--autotune-allow-shared-device")
    checked.assert_outcomes(passed=2, failed=2)
    checked.stdout.fnmatch_lines_random(
        [
            "FAILED test_k.py::test_b - Failed: performance regression*",
            "FAILED test_m.py::test_b - Failed: performance regression*",
            "*autotune: performance regressions*",
        ]
    )
    # what the workers collected reaches the controller: unused entries are found and pruned
    monkeypatch.delenv("AUTOTUNE_SLOW")
    (project.path / "test_m.py").unlink()
    pruned = run_xdist(project, "--autotune-prune", "--autotune-allow-shared-device")
    pruned.assert_outcomes(passed=2)
    pruned.stdout.fnmatch_lines(
        ["unused entries (remove: pytest --autotune-prune): 2", "*0 entries written, 2 removed"]
    )
    assert sorted(stored_entries()) == nodeids[:2]


def test_shared_device_refuses_tuning_and_leaves_timing_unchecked(
    project: pytest.Pytester, two_tests: str
) -> None:
    project.makepyfile(test_k=two_tests)
    refused = run_xdist(project, "--autotune")
    refused.assert_outcomes(errors=2)
    refused.stdout.fnmatch_lines(["*refusing to tune on 'host:*': 2 xdist workers share it*"])
    assert not (project.path / "autotune.json").exists()

    project.runpytest("--autotune").assert_outcomes(passed=2)  # tuned without xdist
    checked = run_xdist(project)
    checked.assert_outcomes(passed=2)
    checked.stdout.fnmatch_lines(
        [
            "timing not checked: 2",
            "  test_k.py::test_a  * device shared by 2 xdist workers: timings would interfere",
        ]
    )
    strict = run_xdist(project, "--autotune-check=fail")
    strict.assert_outcomes(failed=2)
    strict.stdout.fnmatch_lines(["*--autotune-check=fail was requested but timing cannot be checked*"])
