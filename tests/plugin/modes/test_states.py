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
            "  test_k.py::test_a  100us vs 100us (+0.0%, not judged)  the search space changed since it was "
            "tuned",
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


SLOW_DEFAULT_TIMER = """
import pytest


class OnlyAThreeIsFast:
    def __call__(self, fn, autotune):
        return fn(), 1e-4 if autotune.config["A"] == 3 else 7.4e-4


@pytest.fixture
def autotune_timer():
    return OnlyAThreeIsFast()
"""


def _narrowed(project: pytest.Pytester) -> None:
    """Tune (A=3 wins), then narrow the space so that A=3 is gone: the tests fall back to the
    (slow) defaults, +640% over the stored baseline of another configuration."""
    project.makeconftest(SLOW_DEFAULT_TIMER)
    project.makepyfile(test_k=RECORDING)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    project.makepyfile(test_k=RECORDING.replace("Interval(1, 6, default=1)", "Interval(1, 2, default=1)"))


def test_a_stale_entry_warns_on_the_test_and_in_the_markdown_and_fails_on_request(
    project: pytest.Pytester,
) -> None:
    """Issue 44: a stale entry whose defaults ran +636.9% slower passed with one summary line."""
    _narrowed(project)
    summary = project.path / "summary.md"
    warned = project.runpytest(f"--autotune-report-md={summary}")
    warned.assert_outcomes(passed=2, warnings=2)
    warned.stdout.fnmatch_lines(
        [
            "*test_k.py:*: AutotuneStaleWarning: test_k.py::test_a: stale entry on host:*: the search space "
            "changed since it was tuned; ran the declared defaults {'A': 1, 'B': 1} "
            "at 740us, +640.0% against the stored baseline 100us of {'A': *, 'B': *}; its time is not "
            "checked until it is re-tuned: pytest --autotune=missing 'test_k.py::test_a' "
            "(--autotune-missing=fail *",
        ]
    )
    warned.stdout.fnmatch_lines(["  test_k.py::test_a  740us  100us * +640.0% (not judged)  stale"])
    text = summary.read_text()
    assert "⚠️ 2 tunable tests: 2 stale" in text
    assert "| ⚠️ stale entry, not checked |" in text
    assert (
        "- `test_k.py::test_a` (⚠️ stale entry, not checked): the search space changed since it was tuned"
        in text
    )
    failing = project.runpytest("--autotune-missing=fail")
    failing.assert_outcomes(failed=2)
    assert failing.ret == pytest.ExitCode.TESTS_FAILED
    failing.stdout.fnmatch_lines(["*stale entry on host:*+640.0% against the stored baseline*"])
    as_errors = project.runpytest("-W", "error::pytest_autotune.warning_types.AutotuneStaleWarning")
    as_errors.assert_outcomes(failed=2)
    assert "Traceback" not in as_errors.stdout.str()


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
