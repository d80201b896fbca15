"""``--autotune-compare`` says what it could not compare, and why, instead of passing (issue 34).

Each test builds a small project in a git repository (REF tagged ``ref``, the change committed on
top) and runs the comparison in a fresh ``python -m pytest``, as a user would.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmarks.drills.compare_kit import (
    Project,
    extension_project,
    interrupt_during_start,
    simple_project,
    submodule_project,
)
from pytest_autotune.plugin.report.formats.markdown import markdown_report
from pytest_autotune.plugin.report.results import AutotuneResult


def _repo(tmp_path: Path, ref_body: str, working_body: str, policy: str = "") -> Project:
    return simple_project(tmp_path, ref_body, working_body, policy)


# -- item 1: what REF's side cannot import faithfully is refused ---------------------------------------
def test_a_compiled_extension_ref_has_no_build_of_is_refused_even_when_the_import_is_optional(
    tmp_path: Path,
) -> None:
    project, build = extension_project(tmp_path)

    run = project.run("--autotune-compare=ref")

    assert run.rc == 1, run.output[-3000:]
    assert "cannot compare: REF ref: it would not run its own tree's code" in run.output
    assert f"mylib._speed: it is a compiled extension ({build})" in run.output
    assert "| ❌ cannot compare |" in run.summary
    assert "mylib._speed: it is a compiled extension" in run.summary.split("### Why")[1]


def test_a_test_in_a_git_submodule_is_compared_at_the_submodules_commit_of_ref(tmp_path: Path) -> None:
    run = submodule_project(tmp_path, available=True).run("--autotune-compare=ref", "vendored/test_k.py")
    verdict = run.verdict("test_k")
    assert verdict["ratio"] == pytest.approx(0.5), run.output[-3000:]
    assert "new test" not in run.output


def test_a_submodule_commit_that_is_not_here_is_named_not_called_a_new_test(tmp_path: Path) -> None:
    run = submodule_project(tmp_path, available=False).run("--autotune-compare=ref", "vendored/test_k.py")
    assert "new test" not in run.output
    assert (
        "not compared: vendored/test_k.py at ref: it lies in the git submodule vendored, whose files at "
        "this commit are not here: the submodule is not checked out in the working tree" in run.output
    ), run.output[-3000:]


@pytest.mark.parametrize(
    ("ref_files", "reason"),
    [
        ({"test_k.py": "def test_k(:\n"}, "not compared: its file does not collect at REF: "),
        ({"autotune.json": "{damaged"}, "not compared: REF's autotune.json cannot be read: "),
        ({"test_k.py": "def test_k():\n    pass\n"}, "not compared: not a @tunable test at REF: "),
    ],
    ids=["syntax-error", "damaged-store", "not-tunable"],
)
def test_a_test_ref_cannot_run_gets_its_own_reason_not_new_test(
    tmp_path: Path, ref_files: dict[str, str], reason: str
) -> None:
    project = simple_project(tmp_path, "autotune.record(1.0)", "autotune.record(1.0)", ref_files=ref_files)
    run = project.run("--autotune-compare=ref")

    assert run.rc == 0, run.output[-3000:]
    assert reason in run.output, run.output[-3000:]
    assert "new test" not in run.output


# -- item 5: failures say why; tolerances; values that are not positive; pipes ---------------------------
def test_a_working_tree_that_crashes_fails_and_both_summaries_say_why(tmp_path: Path) -> None:
    project = _repo(
        tmp_path,
        "autotune.record(1.0)",
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",
    )
    run = project.run("--autotune-compare=ref")
    assert run.rc == 1
    assert (
        "test_k.py::test_k  failed: cannot run the working tree's test: the worker of the working tree was "
        "killed by signal SIGSEGV (Segmentation fault)\n" in run.output
    ), run.output[-3000:]
    assert "skipped: \n" not in run.output
    assert "❌ failed" in run.summary
    assert "⏭️" not in run.summary
    why = run.summary.split("### Why")[1]
    assert "killed by signal SIGSEGV" in why
    assert 'File "<string>"' not in why


def test_the_time_cap_ends_a_hang_of_the_working_tree_which_fails(tmp_path: Path) -> None:
    project = _repo(tmp_path, "autotune.record(1.0)", "import time\ntime.sleep(600)")
    began = time.monotonic()
    run = project.run(
        "--autotune-compare=ref", "--autotune-compare-max-time=3", "--autotune-trial-timeout=off"
    )
    took = time.monotonic() - began
    assert run.rc == 1, run.output[-3000:]
    assert "no result within" in run.output
    assert "the time left of --autotune-compare-max-time=3s" in run.output
    assert took < 90  # start-up of pytest and two workers on a loaded machine, plus the 3 s cap


@pytest.mark.parametrize(
    ("args", "policy", "message"),
    [
        (["--autotune-compare-tolerance=100%"], "", "*compare_tolerance*100%*below 100%*"),
        (["--autotune-compare-tolerance=250%"], "", "*compare_tolerance*250%*below 100%*"),
    ],
)
def test_a_tolerance_of_100_percent_or_more_is_a_usage_error_at_start(
    tmp_path: Path, args: list[str], policy: str, message: str
) -> None:
    project = _repo(tmp_path, "autotune.record(1.0)", "autotune.record(1.0)", policy)
    run = project.run("--autotune-compare=ref", *args)
    assert run.rc == pytest.ExitCode.USAGE_ERROR, run.output[-3000:]
    assert "ValueError" not in run.output
    import fnmatch

    assert any(fnmatch.fnmatch(line, message) for line in run.output.splitlines()), run.output[-3000:]


def test_a_declared_tolerance_of_100_percent_fails_the_test_at_collection(tmp_path: Path) -> None:
    project = _repo(tmp_path, "autotune.record(1.0)", "autotune.record(1.0)", ", compare_tolerance=1.5")
    run = project.run("--autotune-compare=ref")
    assert run.rc != 0
    assert "below 100%" in run.output, run.output[-3000:]
    assert "tolerance must be in [0, 1)" not in run.output


@pytest.mark.parametrize(
    ("policy", "ref", "working", "verdict", "ratio"),
    [
        # a score that is lower in the working tree (better, minimised) and crosses zero
        (', objective="score"', "-1.0", "-1.5", "pass", 0.5),
        # a negative score that grew by half its magnitude: a regression
        (', objective="score"', "-1.0", "-0.5", "regression", 1.5),
        # a rate, maximised, that fell to zero: twice the scale lost
        (', objective="rate", maximize=True', "2.0", "0.0", "regression", 2.0),
    ],
    ids=["negative-better", "negative-worse", "maximised-to-zero"],
)
def test_objectives_that_are_zero_or_negative_are_judged_as_differences(
    tmp_path: Path, policy: str, ref: str, working: str, verdict: str, ratio: float
) -> None:
    project = _repo(tmp_path, f"autotune.record({ref})", f"autotune.record({working})", policy)
    run = project.run("--autotune-compare=ref")
    found = run.verdict("test_k")
    assert found["verdict"] == verdict, run.output[-3000:]
    assert found["ratio"] == pytest.approx(ratio)
    assert found["scale"] == pytest.approx(abs(float(ref)))
    assert "times must be positive" not in run.output


def test_a_pipe_in_a_test_id_stays_in_its_markdown_cell() -> None:
    result = AutotuneResult(
        nodeid="test_k.py::test_k[a|b]",
        name="test_k[a|b]",
        device="host",
        mode="compare",
        state="regression",
        config={"A": 1},
        unit="s",
        compare={
            "verdict": "regression",
            "ref": "main|x",
            "ratio": 1.5,
            "low": 1.4,
            "high": 1.6,
            "blocks": 8,
        },
    )
    row = next(line for line in markdown_report([result]).splitlines() if line.startswith("| `test_k"))
    cells = row.replace("\\|", "").split("|")[1:-1]
    assert len(cells) == 7  # test, mode, ratio, interval, tolerance, verdict, configuration
    assert cells[5].strip() == "❌ regression"


# -- item 6: warnings as errors ------------------------------------------------------------------------
def test_a_comparison_runs_with_warnings_as_errors(tmp_path: Path) -> None:
    project = _repo(tmp_path, "autotune.record(2.0)", "autotune.record(1.0)")
    run = project.run("--autotune-compare=ref", "-W", "error", env={"PYTHONWARNINGS": "error"})
    assert run.rc == 0, run.output[-3000:]
    assert run.verdict("test_k")["ratio"] == pytest.approx(0.5)
    assert "Warning" not in run.output


# -- item 7: Ctrl-C while the workers start ----------------------------------------------------------------
def test_ctrl_c_while_the_workers_start_ends_the_run_at_once_and_leaves_the_checkout(tmp_path: Path) -> None:
    done = interrupt_during_start(tmp_path)
    # The workers sleep 120 s in their start-up. They are killed at once; pytest's own ending (the
    # interrupt's report) takes the rest, seconds on a loaded machine. Before, the thread pool
    # waited for both workers to get ready.
    assert done.workers_gone < 5, done.output[-3000:]
    assert done.ended < 30, done.output[-3000:]
    assert "KeyboardInterrupt" in done.output
    assert done.checkout_kept
    assert done.trees_left == 0  # REF's exported files were removed
