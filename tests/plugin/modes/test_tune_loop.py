"""The tuning loop inside pytest: trial labels, pytest outcomes in the body, shared fixtures, resume."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune.tuning.journal import read_journal

Entries = Callable[[], dict[str, dict[str, Any]]]

LABELS = """
import pytest
from pytest_autotune import Interval, Set, tunable

@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_labels(autotune):
    A, B = autotune.config["A"], autotune.config["B"]
    if A == 6:
        autotune.reject("A=6 needs too much local memory")
    if A == 5:
        raise ValueError("launch failed")
    autotune.measure(lambda: None)
    assert not (A == 4 and B == 3), "wrong result"
"""


def test_trial_outcomes_are_labelled(project: pytest.Pytester, stored_entries: Entries) -> None:
    project.makepyfile(test_k=LABELS)
    result = project.runpytest("--autotune")
    result.assert_outcomes(passed=1)
    entry = stored_entries()["test_k.py::test_labels"]
    assert entry["config"] == {"A": 3, "B": 3}
    counts = {label: n for label, n in entry["tuning"]["counts"].items() if n}
    assert counts == {"ok": 11, "constraints": 3, "runtime": 3, "correctness": 1}
    result.stdout.fnmatch_lines(["*18 trials (ok 11, correctness 1, runtime 3, constraints 3)*"])


INFEASIBLE = """
from pytest_autotune import Interval, Set, tunable

@tunable(A=Interval(1, 3), B=Set(1, 2), strategy="exhaustive")
def test_never_right(autotune):
    if autotune.config["B"] == 2:
        raise RuntimeError("out of resources")
    autotune.measure(lambda: None)
    assert False, "always wrong"
"""


def test_a_space_without_feasible_configuration_fails_with_counts(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=INFEASIBLE)
    result = project.runpytest("--autotune")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*tuning failed: no feasible configuration: all 6 evaluated configurations failed "
            "(correctness 3, runtime 3; space size 6)",
            "*first correctness failure, config {'A': 1, 'B': 1}: AssertionError: always wrong*",
            "*first runtime failure, config {'A': 1, 'B': 2}: RuntimeError: out of resources*",
            "tuning failed: 1",
        ]
    )
    assert not (project.path / "autotune.json").exists()


OUTCOMES = """
import pytest
from pytest_autotune import Interval, tunable

@tunable(A=Interval(1, 6), strategy="exhaustive")
def test_skips(autotune):
    with open("calls.txt", "a") as f:
        f.write("s")
    if autotune.config["A"] == 3:
        pytest.skip("no device for A=3")
    autotune.measure(lambda: None)

@tunable(A=Interval(1, 6), strategy="exhaustive")
def test_xfails(autotune):
    with open("calls.txt", "a") as f:
        f.write("x")
    if autotune.config["A"] == 2:
        pytest.xfail("known bug for A=2")
    autotune.measure(lambda: None)

@tunable(A=Interval(1, 6), strategy="exhaustive")
def test_fails(autotune):
    with open("calls.txt", "a") as f:
        f.write("f")
    if autotune.config["A"] == 4:
        pytest.fail("explicit failure")
    autotune.measure(lambda: None)
"""


@pytest.mark.parametrize("isolate", ["none", "process"])
def test_pytest_outcomes_in_the_body_end_the_loop(project: pytest.Pytester, isolate: str) -> None:
    """Also when the body runs in a trial worker: the outcome is raised again in pytest's process."""
    project.makepyfile(test_k=OUTCOMES)
    result = project.runpytest("--autotune", "-rsx", f"--autotune-isolate={isolate}")
    result.assert_outcomes(skipped=1, xfailed=1, failed=1)
    # exhaustive order visits A = 1, 2, 3, ...: the loop stops at the first pytest outcome
    assert (project.path / "calls.txt").read_text() == "sssxxffff"
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED * no device for A=3",
            "XFAIL test_k.py::test_xfails - known bug for A=2",
            "*explicit failure*",
        ]
    )
    assert not (project.path / "autotune.json").exists()


SHARED_FIXTURES = """
import pytest
from pytest_autotune import Interval, tunable

@pytest.fixture
def buffer():
    return []

@pytest.fixture(scope="module")
def device_data():
    return [1, 2, 3]

@tunable(A=Interval(1, 3), strategy="exhaustive")
@pytest.mark.parametrize("n", [4])
def test_uses_fixtures(autotune, buffer, device_data, tmp_path, n):
    buffer.append(autotune.config["A"])
    autotune.measure(lambda: None)
"""


def test_function_scoped_fixtures_shared_by_trials_are_warned_about(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=SHARED_FIXTURES)
    tuned = project.runpytest(
        "--autotune", "-W", "error::pytest_autotune.warning_types.AutotuneNoMeasurementWarning"
    )
    tuned.assert_outcomes(passed=1, warnings=1)
    tuned.stdout.fnmatch_lines(
        ["*AutotuneSharedFixtureWarning: test_k.py::test_uses_fixtures[[]4]: function-scoped fixture(s) *"]
    )
    warning = next(line for line in tuned.stdout.lines if "AutotuneSharedFixtureWarning" in line)
    assert "buffer" in warning
    assert "tmp_path" in warning
    assert "device_data" not in warning  # module scope
    assert "n," not in warning  # a parametrized argument, not a fixture
    project.runpytest().assert_outcomes(passed=1)  # no warning in a normal run


RESUMABLE = """
import json, os
from pytest_autotune import Interval, Set, tunable

@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_long(autotune):
    with open("calls.jsonl", "a") as f:
        f.write(json.dumps(autotune.config) + "\\n")
    stop_at = int(os.environ.get("STOP_AT", "0"))
    if stop_at and sum(1 for _ in open("calls.jsonl")) == stop_at:
        raise KeyboardInterrupt
    autotune.measure(lambda: None)
"""


def _calls(pytester: pytest.Pytester) -> list[dict[str, int]]:
    path = pytester.path / "calls.jsonl"
    calls = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    return calls


@pytest.mark.parametrize("isolate", ["none", "process"])
def test_an_interrupted_tuning_run_resumes_from_its_journal(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, stored_entries: Entries, isolate: str
) -> None:
    """KeyboardInterrupt in the body (in a trial worker too) interrupts the run; the next one resumes."""
    project.makepyfile(test_k=RESUMABLE)
    monkeypatch.setenv("STOP_AT", "6")
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", isolate)
    interrupted = project.runpytest("--autotune", no_reraise_ctrlc=True)
    assert interrupted.ret == pytest.ExitCode.INTERRUPTED
    first = _calls(project)
    assert len(first) == 6
    journals = list((project.path / ".pytest_cache").rglob("*.jsonl"))
    assert len(journals) == 1
    assert not journals[0].name.endswith(".done.jsonl")
    contents = read_journal(journals[0])
    assert len(contents.entries) == 5  # five completed trials
    assert contents.unfinished == []  # the interrupted sixth was cancelled: it runs again on resume

    monkeypatch.delenv("STOP_AT")
    project.runpytest("--autotune").assert_outcomes(passed=1)
    second = _calls(project)
    # the five journaled configurations are not evaluated again (the default A=1, B=1 returns only
    # as a finalist, re-measured three times); the interrupted sixth one is
    resumed_trials = second[: 18 - 5]
    assert not any(call in first[:5] for call in resumed_trials)
    assert first[5] in resumed_trials
    assert [c for c in second[13:] if c in first[1:5]] == []
    entry = stored_entries()["test_k.py::test_long"]
    assert entry["tuning"]["trials"] == 18
    assert entry["config"] == {"A": 3, "B": 3}
    assert [p.name.endswith(".done.jsonl") for p in (project.path / ".pytest_cache").rglob("*.jsonl")] == [
        True
    ]

    project.runpytest("--autotune").assert_outcomes(passed=1)
    assert len(_calls(project)) > 18  # a completed search is not resumed: the next run starts afresh
