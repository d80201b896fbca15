"""``--autotune-compare`` says what it could not compare, and why, instead of passing (issue 34).

Each test builds a small project in a git repository (REF tagged ``ref``, the change committed on
top) and runs the comparison in a fresh ``python -m pytest``, as a user would.
"""

from __future__ import annotations

import importlib.machinery
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pytest_autotune.plugin.compare.git_ref import REF_DIR_PREFIX
from pytest_autotune.plugin.report.markdown import markdown_report
from pytest_autotune.plugin.report.results import AutotuneResult
from tests.plugin.compare_projects import (
    REF_PIECES,
    Project,
    commit_ref_then_change,
    install,
    write_project,
)
from tests.plugin.git_commands import git

FAITHFUL = 1 / (REF_PIECES[0] * REF_PIECES[1] * REF_PIECES[2])

SIMPLE = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 2, default=1){policy})
def test_k(autotune):
{body}
"""


def _simple(root: Path, body: str, policy: str = "") -> None:
    text = SIMPLE.format(body="\n".join("    " + line for line in body.strip().splitlines()), policy=policy)
    (root / "test_k.py").write_text(text)


def _repo(tmp_path: Path, ref_body: str, working_body: str, policy: str = "") -> Project:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly\n")
    _simple(root, ref_body, policy)
    commit_ref_then_change(root, lambda: _simple(root, working_body, policy))
    return Project(root, [])


# -- item 1: what REF's side cannot import faithfully is refused ---------------------------------------
def test_a_compiled_extension_ref_has_no_build_of_is_refused_even_when_the_import_is_optional(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    optional = "\ntry:\n    from mylib import _speed\nexcept ImportError:  # a fallback\n    _speed = None\n"

    def write(pieces: tuple[float, int, int]) -> None:
        write_project(root, layout="src", pieces=pieces)
        init = root / "src" / "mylib" / "__init__.py"
        init.write_text(init.read_text() + optional)

    write(REF_PIECES)
    commit_ref_then_change(root, lambda: write((1.0, 1, 1)))
    # an in-place build, ignored by git: the working tree has it, REF's exported files cannot
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    (root / "src" / "mylib" / f"_speed{suffix}").write_bytes(b"not really a build")
    boot = install(root, tmp_path / "prefix", editable=True)

    run = Project(root, [boot]).run("--autotune-compare=ref")

    assert run.rc == 1, run.output[-3000:]
    assert "cannot compare: REF ref: it would not run its own tree's code" in run.output
    assert (
        f"mylib._speed: it is a compiled extension ({root.resolve()}/src/mylib/_speed{suffix})" in run.output
    )
    assert "| ❌ cannot compare |" in run.summary
    assert "mylib._speed: it is a compiled extension" in run.summary.split("### Why")[1]


def test_a_test_in_a_git_submodule_is_compared_at_the_submodules_commit_of_ref(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    _simple(sub, "autotune.record(2.0)")
    git(sub, "init", "-q")
    git(sub, "add", ".")
    git(sub, "commit", "-q", "-m", "sub ref")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly\n")
    git(root, "init", "-q")
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendored")
    git(root, "commit", "-q", "-am", "ref")
    git(root, "tag", "ref")
    _simple(root / "vendored", "autotune.record(1.0)")  # the submodule's change, committed in it
    git(root / "vendored", "commit", "-qam", "faster")
    git(root, "commit", "-qam", "bump the submodule")

    run = Project(root, []).run("--autotune-compare=ref", "vendored/test_k.py")

    verdict = run.verdict("test_k")
    assert verdict["ratio"] == pytest.approx(0.5), run.output[-3000:]
    assert "new test" not in run.output


def test_a_submodule_commit_that_is_not_here_is_named_not_called_a_new_test(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "vendored").mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly\n")
    _simple(root / "vendored", "autotune.record(1.0)")
    git(root, "init", "-q")
    git(root, "add", "pytest.ini")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{'ab' * 20},vendored")  # a gitlink
    git(root, "commit", "-q", "-m", "ref")
    git(root, "tag", "ref")

    run = Project(root, []).run("--autotune-compare=ref", "vendored/test_k.py")

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
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly\n")
    _simple(root, "autotune.record(1.0)")
    for name, text in ref_files.items():
        (root / name).write_text(text)

    def change() -> None:
        _simple(root, "autotune.record(1.0)")
        (root / "autotune.json").unlink(missing_ok=True)

    commit_ref_then_change(root, change)

    run = Project(root, []).run("--autotune-compare=ref")

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
SLOW_START = """
import os
import time
from pathlib import Path

if os.environ.get("PYTEST_AUTOTUNE_TRIAL_WORKER"):  # the compare workers only, not the parent
    Path(os.environ["MARKS"], str(os.getpid())).write_text("")
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_while_the_workers_start_ends_the_run_at_once_and_leaves_the_checkout(tmp_path: Path) -> None:
    project = _repo(tmp_path, "autotune.record(1.0)", "autotune.record(1.0)")
    root = project.root
    (root / "conftest.py").write_text(SLOW_START)
    git(root, "add", "conftest.py")
    git(root, "commit", "-qm", "slow start")
    git(root, "tag", "-f", "ref")
    marks = tmp_path / "marks"
    marks.mkdir()
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_AUTOTUNE")}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--autotune-compare=ref", "-p", "no:cacheprovider"],
        cwd=root,
        env={**env, "MARKS": str(marks)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(list(marks.iterdir())) == 2, "the two workers did not start"
        process.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        workers = [int(mark.name) for mark in marks.iterdir()]
        while any(_alive(pid) for pid in workers) and time.monotonic() - interrupted < 60:
            time.sleep(0.05)
        stopped = time.monotonic() - interrupted
        output, _ = process.communicate(timeout=90)
        took = time.monotonic() - interrupted
    finally:
        process.kill()
    # The workers sleep 120 s in their start-up. They are killed at once; pytest's own ending (the
    # interrupt's report) takes the rest, seconds on a loaded machine. Before, the thread pool
    # waited for both workers to get ready.
    assert stopped < 5, output[-3000:]
    assert took < 30, output[-3000:]
    assert "KeyboardInterrupt" in output
    assert git(root, "status", "--porcelain", "--untracked-files=all") == status
    trees = Path(tempfile.gettempdir()).glob(f"{REF_DIR_PREFIX}{process.pid}-*")
    assert not list(trees)  # REF's exported files were removed
