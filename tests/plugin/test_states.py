"""Missing, stale, unused entries and pruning: what runs, what is reported, what the store keeps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

Entries = Callable[[], dict[str, dict[str, Any]]]

RECORDING = """
import json, os
from pytest_autotune import Interval, Set, tunable

def record(name, config):
    with open("configs.jsonl", "a") as f:
        f.write(json.dumps([name, config]) + "\\n")

@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_a(autotune):
    record("a", autotune.config)
    autotune.measure(lambda: None)

@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_b(autotune):
    record("b", autotune.config)
    autotune.measure(lambda: None)
"""


def _configs(pytester: pytest.Pytester) -> list[list[Any]]:
    import json

    path = pytester.path / "configs.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    path.unlink(missing_ok=True)
    return [json.loads(line) for line in lines]


def test_missing_entries_run_the_defaults_and_are_reported(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=RECORDING)
    result = project.runpytest()
    result.assert_outcomes(passed=2)
    assert _configs(project) == [["a", {"A": 1, "B": 1}], ["b", {"A": 1, "B": 1}]]
    result.stdout.fnmatch_lines(
        [
            "*autotune: mode check (fail), device host:*, cache */autotune.json (not created yet)",
            "missing (tune: pytest --autotune=missing): 2",
            "  test_k.py::test_a  no tuned configuration for this device",
        ]
    )
    assert not (project.path / "autotune.json").exists()
    failing = project.runpytest("--autotune-missing=fail")
    failing.assert_outcomes(failed=2)
    failing.stdout.fnmatch_lines(
        ["*no tuned configuration for device host:* tune it: pytest --autotune=missing*"]
    )


def test_stale_entries_keep_a_still_valid_config_and_are_retuned_by_missing(
    project: pytest.Pytester, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=RECORDING)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    _configs(project)
    # test_a's domain grows (its committed A=3, B=3 stays valid); test_b's shrinks (A=3 is gone)
    project.makepyfile(
        test_k=RECORDING.replace("Set(1, 2, 3, default=1)", "Set(1, 2, 3, 4, default=1)", 1).replace(
            'Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")\ndef test_b',
            'Interval(4, 6, default=4), B=Set(1, 2, 3, default=1), strategy="exhaustive")\ndef test_b',
        )
    )
    result = project.runpytest()
    result.assert_outcomes(passed=2)
    assert _configs(project) == [["a", {"A": 3, "B": 3}], ["b", {"A": 4, "B": 1}]]
    result.stdout.fnmatch_lines(
        [
            "stale (re-tune: pytest --autotune=missing): 2",
            "  test_k.py::test_a  100us vs 100us (+0.0%)  the search space changed since it was tuned",
        ]
    )
    hashes = {k: v["space_hash"] for k, v in stored_entries().items()}
    retuned = project.runpytest("--autotune=missing")
    retuned.assert_outcomes(passed=2)
    retuned.stdout.fnmatch_lines(["tuned 2:"])
    after = stored_entries()
    assert all(after[k]["space_hash"] != hashes[k] for k in hashes)
    assert after["test_k.py::test_b"]["config"] == {"A": 4, "B": 3}
    project.runpytest().stdout.fnmatch_lines(["checked 2: 2 passed"])


def test_unused_entries_are_reported_and_pruned_only_on_a_full_run(
    project: pytest.Pytester, stored_entries: Entries
) -> None:
    project.makepyfile(test_k=RECORDING, test_gone=RECORDING)
    project.runpytest("--autotune").assert_outcomes(passed=4)
    assert len(stored_entries()) == 4
    (project.path / "test_gone.py").unlink()
    project.makepyfile(test_k=RECORDING.split("@tunable")[0] + "@tunable" + RECORDING.split("@tunable")[1])
    result = project.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "unused entries (remove: pytest --autotune-prune): 3",
            "  test_gone.py::test_a",
            "  test_gone.py::test_b",
            "  test_k.py::test_b",
        ]
    )
    refused = project.runpytest("--autotune-prune", "--deselect", "test_k.py::test_a")
    refused.stdout.fnmatch_lines(["--autotune-prune skipped: 1 test(s) were deselected"])
    assert len(stored_entries()) == 4
    pruned = project.runpytest("--autotune-prune")
    pruned.assert_outcomes(passed=1)
    pruned.stdout.fnmatch_lines(["*autotune.json: 0 entries written, 3 removed"])
    assert list(stored_entries()) == ["test_k.py::test_a"]


def test_unused_is_scoped_to_the_files_of_this_run(project: pytest.Pytester, stored_entries: Entries) -> None:
    project.makepyfile(test_k=RECORDING, test_other=RECORDING)
    project.runpytest("--autotune").assert_outcomes(passed=4)
    result = project.runpytest("test_k.py", "--autotune-prune")
    result.assert_outcomes(passed=2)
    assert "unused entries" not in result.stdout.str()
    assert len(stored_entries()) == 4  # test_other.py's tests merely were not selected


NEVER_MEASURES = """
from pytest_autotune import Interval, tunable

@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_forgets(autotune):
    assert autotune.config["A"] in (1, 2, 3)
"""


def test_a_test_that_never_measures_warns_and_cannot_be_tuned(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=NEVER_MEASURES)
    checked = project.runpytest()
    checked.assert_outcomes(passed=1, warnings=1)
    checked.stdout.fnmatch_lines(
        ["*AutotuneNoMeasurementWarning: test_k.py::test_forgets: the test never called*"]
    )
    tuned = project.runpytest("--autotune")
    tuned.assert_outcomes(failed=1)
    tuned.stdout.fnmatch_lines(["*tuning failed: the test body never called autotune.measure()*"])
