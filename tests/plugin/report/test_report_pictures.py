"""What a user sees around tuning: plots and index.html, plain progress lines in logs, the defaults in --help.

pytester's output is not a terminal, so its runs see what a CI log sees.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from pytest_autotune.plugin.report.progress import ProgressEvery

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

#: A timer whose first 75 timed calls (the 15 trials of 5 timed calls each) read 10% fast, as a
#: trial's short measurement picked as the fastest of many does; later calls read the real time.
FAST_TRIALS_TIMER = """
import itertools

import pytest

from pytest_autotune.testing import bowl


class FastTrials:
    def __init__(self):
        self.calls = itertools.count()

    def __call__(self, fn, autotune):
        return fn(), bowl(autotune.config) * (0.9 if next(self.calls) < 75 else 1.0)


@pytest.fixture(scope="session")
def _timer():
    return FastTrials()


@pytest.fixture
def autotune_timer(_timer):
    return _timer
"""


def _png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's header (its signature checked), without an image library."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, path
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


FAILING = """
from pytest_autotune import Interval, Set, tunable


@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_some_fail(autotune):
    assert autotune.config["A"] != 5, "wrong result"
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_all_fail(autotune):
    assert False, "never right"
"""


def test_report_writes_a_plot_per_tuned_test_and_an_index(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=FAILING)
    result = project.runpytest("--autotune", "--autotune-report=report")
    result.assert_outcomes(passed=1, failed=1)
    folder = project.path / "report"
    result.stdout.fnmatch_lines([f"autotune: report: {folder / 'index.html'}"])
    plots = sorted(p for p in folder.glob("*.png") if not p.name.endswith("-params.png"))
    names = [p.name.rsplit("-", 1)[0] for p in plots]
    assert names == ["test_k.py_test_all_fail", "test_k.py_test_some_fail"]
    assert sorted(p.name for p in folder.glob("*-params.png")) == [
        p.name.removesuffix(".png") + "-params.png" for p in plots
    ]
    assert all(_png_size(plot) == (900, 480) for plot in plots)
    page = (folder / "index.html").read_text()
    for plot in plots:
        assert f'<img src="{plot.name}"' in page
    row = re.search(r"<tr><td><a [^>]*>test_k.py::test_some_fail</a></td>(.*?)</tr>", page)
    assert row is not None
    assert "<td>tuned</td>" in row.group(1)
    assert "100us (best trial 100us)" in row.group(1)
    assert "18 (ok 15, correctness 3)" in row.group(1)  # 3 of the 18 configurations have A=5
    assert '<td class="failed">tune-failed</td>' in page


def test_report_of_a_plain_run_is_the_table_without_plots(project: pytest.Pytester, two_tests: str) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    project.runpytest("--autotune-report=report").assert_outcomes(passed=2)
    assert list((project.path / "report").glob("*.png")) == []
    page = (project.path / "report" / "index.html").read_text()
    assert page.count("<td>passed</td>") == 2
    assert "test_k.py::test_b" in page


def test_report_folder_that_is_a_file_is_a_usage_error(project: pytest.Pytester, two_tests: str) -> None:
    project.makepyfile(test_k=two_tests)
    (project.path / "report").write_text("")
    result = project.runpytest("--autotune", "--autotune-report=report")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--autotune-report: */report is not a directory*"])


def test_plain_log_gets_start_progress_and_end_lines(project: pytest.Pytester, two_tests: str) -> None:
    project.makepyfile(test_k=two_tests)
    result = project.runpytest("--autotune", "--autotune-progress=5", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    lines = [line for line in result.stdout.lines if line.startswith("autotune: ") and "test_a" in line]
    assert lines[0] == (
        "autotune: tuning test_k.py::test_a: budget 100 evaluations (default), strategy exhaustive"
    )
    progress = [line for line in lines if "so far" in line]
    assert [line.split(": ", 2)[2].split(" trials")[0] for line in progress] == ["5", "10", "15"]
    assert progress[0].startswith("autotune: test_k.py::test_a: 5 trials (5% of the budget), best trial ")
    assert lines[-1].startswith("autotune: test_k.py::test_a: tuned, 15 trials (ok 15) in ")
    assert lines[-1].endswith(": 100us (best trial 100us), ≥9.0x vs default")


def test_quiet_and_default_runs_write_no_progress_lines(project: pytest.Pytester, two_tests: str) -> None:
    project.makepyfile(test_k=two_tests)
    quiet = project.runpytest("--autotune", "-q")
    assert [line for line in quiet.stdout.lines if line.startswith("autotune: tuning")] == []
    project.runpytest("--autotune").stdout.no_fnmatch_line("*so far")  # tuning takes < 30 s here


def test_summary_explains_the_re_measured_time(project: pytest.Pytester, two_tests: str) -> None:
    project.makeconftest(FAST_TRIALS_TIMER)
    project.makepyfile(test_k=two_tests[: two_tests.index("@tunable", two_tests.index("def test_a"))])
    result = project.runpytest("--autotune")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "autotune: test_k.py::test_a: tuned, *: 100us (best trial 90us), ≥9.0x vs default",
            "  test_k.py::test_a  100us  90us  *≥9.0x  *15 (ok 15)  {'A': 3, 'B': 3}",
            "  time: the winner's new baseline, measured again after the choice; plain runs are checked *",
        ]
    )


def test_help_states_every_default(pytester: pytest.Pytester) -> None:
    text = " ".join(pytester.runpytest("--help").stdout.str().split())
    for default in (
        "default 100 evaluations",
        "default bo",
        "seed of the search (default: derived from each test's node id)",
        "default median:10%,median:2us",
        "auto (default: process on POSIX systems)",
        "autotune.measure makes 1 untimed and 5 timed calls per trial, 10 in checks, baselines and finalists",
        "the best 3 trials, the declared default and the committed configuration are re-measured",
        "'x vs default' compares with the declared defaults, where a parameter without default= takes "
        "its first valid value",
        "(default 30s)",
    ):
        assert default in text, default


@pytest.mark.parametrize(
    ("text", "trials", "seconds"),
    [("30s", None, 30.0), ("10", 10, None), ("10|2min", 10, 120.0), ("off", None, None)],
)
def test_progress_every_parses(text: str, trials: int | None, seconds: float | None) -> None:
    assert ProgressEvery.parse(text) == ProgressEvery(trials, seconds)


def test_progress_every_is_due_by_trials_or_time() -> None:
    every = ProgressEvery(10, 30.0)
    assert not every.due(9, 29.0)
    assert every.due(10, 0.0)
    assert every.due(1, 30.0)
    assert not ProgressEvery(None, None).due(1000, 1e6)


@pytest.mark.parametrize("value", ["0", "-5s", "soon"])
def test_bad_progress_value_is_a_usage_error(project: pytest.Pytester, value: str) -> None:
    result = project.runpytest(f"--autotune-progress={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*command line --autotune-progress: invalid value*"])


def test_tests_tuned_on_xdist_workers_are_drawn_by_the_controller(
    project: pytest.Pytester, two_tests: str
) -> None:
    project.makepyfile(test_k=two_tests)
    result = project.runpytest_subprocess(
        "-n", "2", "-p", "no:hypothesispytest", "-p", "no:benchmark",
        "--autotune", "--autotune-allow-shared-device", "--autotune-report=report",
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    pictures = [p for p in (project.path / "report").glob("*.png") if not p.name.endswith("-params.png")]
    assert sorted(p.name.rsplit("-", 1)[0] for p in pictures) == ["test_k.py_test_a", "test_k.py_test_b"]
    assert all(_png_size(p) == (900, 480) for p in pictures)
    assert len(list((project.path / "report").glob("*-params.png"))) == 2
