"""Report formats are reporters: a project adds its own through ``pytest_autotune_reporters``, and
each format keeps its own outcome (one failed write never hides another)."""

from __future__ import annotations

import csv

import pytest

from pytest_autotune.plugin.report.formats.registry import BUILT_IN, built_in_reporters
from pytest_autotune.plugin.report.formats.reporter import Reporter

#: A report format from outside the package: a CSV of node id, configuration and median time, written
#: where ``AUTOTUNE_CSV`` says; ``AUTOTUNE_CSV_FAIL`` makes its write fail as a full disk would.
CSV_CONFTEST = """

import csv
import os
from pathlib import Path

from pytest_autotune.plugin.report.formats.reporter import ReportOutcome, Reporter


class CsvReporter(Reporter):
    name = "csv"

    def enabled(self, context):
        return bool(os.environ.get("AUTOTUNE_CSV"))

    def write(self, results, context):
        path = context.rootpath / os.environ["AUTOTUNE_CSV"]
        if os.environ.get("AUTOTUNE_CSV_FAIL"):
            raise OSError(28, "No space left on device")
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["nodeid", "config", "time"])
            for result in results:
                writer.writerow([result.nodeid, repr(result.config), (result.stats or {}).get("median")])
        return ReportOutcome(written=path, message=f"csv: {path}")


def pytest_autotune_reporters(config):
    return [CsvReporter()]
"""

#: A plain test that puts a file where the reports' folders would go, once start-up checked them.
BLOCKER = """
from pathlib import Path


def test_blocks_the_report_folders():
    Path("json-out").write_text("a file, not a folder")
    Path("md-out").write_text("a file, not a folder")
"""


def test_a_conftest_adds_a_csv_report_format(
    project: pytest.Pytester, two_tests: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=two_tests)
    project.makeconftest((project.path / "conftest.py").read_text() + CSV_CONFTEST)
    project.runpytest("--autotune").assert_outcomes(passed=2)  # commits the entries; no CSV asked for
    assert not (project.path / "out.csv").exists()

    monkeypatch.setenv("AUTOTUNE_CSV", "out.csv")
    result = project.runpytest()  # a plain check run against the committed store
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    with open(project.path / "out.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["nodeid", "config", "time"]
    assert sorted(rows[1:]) == [
        ["test_k.py::test_a", "{'A': 3, 'B': 3}", "0.0001"],
        ["test_k.py::test_b", "{'A': 3, 'B': 3}", "0.0001"],
    ]
    result.stdout.fnmatch_lines([f"autotune: csv: {project.path / 'out.csv'}"])


def test_a_third_party_format_that_cannot_write_fails_the_run(
    project: pytest.Pytester, two_tests: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=two_tests)
    project.makeconftest((project.path / "conftest.py").read_text() + CSV_CONFTEST)
    monkeypatch.setenv("AUTOTUNE_CSV", "out.csv")
    monkeypatch.setenv("AUTOTUNE_CSV_FAIL", "1")
    result = project.runpytest("--autotune", "--autotune-json=bench.json")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["autotune: csv: cannot write (*No space left on device)"])
    assert (project.path / "bench.json").is_file()  # the built-in formats wrote all the same


def test_json_and_markdown_write_failures_are_both_reported(project: pytest.Pytester, two_tests: str) -> None:
    """Each format keeps its own outcome: the Markdown error no longer overwrites the JSON one."""
    project.makepyfile(test_k=two_tests, test_blocker=BLOCKER)
    json_path = project.path / "json-out" / "bench.json"
    md_path = project.path / "md-out" / "summary.md"
    result = project.runpytest(
        "--autotune", f"--autotune-json={json_path}", f"--autotune-report-md={md_path}"
    )
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"autotune: --autotune-json: cannot write {json_path} (*File exists*)",
            f"autotune: --autotune-report-md: cannot write {md_path} (*File exists*)",
        ]
    )


def test_the_built_in_formats_come_from_one_list() -> None:
    reporters = built_in_reporters()
    assert [type(reporter) for reporter in reporters] == list(BUILT_IN)
    assert all(isinstance(reporter, Reporter) for reporter in reporters)
    names = [reporter.name for reporter in reporters]
    assert names == ["terminal", "json", "markdown", "html"]
    assert [reporter.name for reporter in reporters if not reporter.fails_run] == ["terminal", "html"]


#: Two formats of a project: one whose write has a bug, one that takes a built-in format's name.
BROKEN_CONFTEST = """

from pytest_autotune.plugin.report.formats.reporter import ReportOutcome, Reporter


class Broken(Reporter):
    name = "broken"

    def enabled(self, context):
        return True

    def write(self, results, context):
        raise ValueError("a bug in the project's format")


class Impostor(Reporter):
    name = "json"

    def enabled(self, context):
        return True

    def write(self, results, context):
        (context.rootpath / "impostor.txt").write_text("written")
        return ReportOutcome()


def pytest_autotune_reporters(config):
    return [Broken(), Impostor()]
"""


def test_a_format_that_raises_or_reuses_a_name_fails_the_run_after_the_store_is_written(
    project: pytest.Pytester, two_tests: str
) -> None:
    project.makepyfile(test_k=two_tests)
    project.makeconftest((project.path / "conftest.py").read_text() + BROKEN_CONFTEST)
    result = project.runpytest("--autotune", "--autotune-json=bench.json")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "autotune: broken: failed (ValueError: a bug in the project's format)",
            "autotune: json: two report formats have this name (BenchmarkJson and Impostor); *not written",
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str()
    assert (project.path / "autotune.json").is_file()  # the store was written first
    assert (project.path / "bench.json").is_file()  # the built-in JSON format wrote all the same
    assert not (project.path / "impostor.txt").exists()
