"""``--autotune-report`` never replaces an ``index.html`` it did not write (issue 34).

An empty value named the rootdir and replaced the project's own page; a report folder that is a
symbolic link to a site folder lost its page too. The report's page carries a generator tag, and an
existing page without it is refused at start-up (a usage error) and again before writing.
"""

from __future__ import annotations

import pytest

from pytest_autotune.plugin.report.target import GENERATOR
from tests.plugin.conftest import TWO_TESTS
from tests.test_input_file import fifo

SITE_PAGE = "<!DOCTYPE html>\n<html><head><title>Our project</title></head><body>docs</body></html>\n"


def test_an_empty_report_value_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    page = project.path / "index.html"
    page.write_text(SITE_PAGE)
    result = project.runpytest("--autotune", "--autotune-report=")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--autotune-report: an empty value names no file or folder; give a path" in result.stderr.str()
    assert page.read_text() == SITE_PAGE
    assert not (project.path / "autotune.json").exists()  # refused before any tuning


def test_a_folder_holding_a_foreign_page_is_refused(project: pytest.Pytester) -> None:
    """The issue's case: the report folder is a symbolic link to the project's site folder."""
    project.makepyfile(test_k=TWO_TESTS)
    site = project.path / "site"
    site.mkdir()
    (site / "index.html").write_text(SITE_PAGE)
    (project.path / "report").symlink_to(site)
    result = project.runpytest("--autotune", "--autotune-report=report")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        f"--autotune-report: {site / 'index.html'} exists and was not written by "
        "pytest-autotune; it was left as it was"
    ) in result.stderr.str()
    assert (site / "index.html").read_text() == SITE_PAGE
    assert sorted(p.name for p in site.iterdir()) == ["index.html"]


def test_the_reports_own_page_is_replaced_by_the_next_report(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    project.runpytest("--autotune-report=report").assert_outcomes(passed=2)
    page = project.path / "report" / "index.html"
    assert GENERATOR in page.read_text()
    page.write_text(page.read_text().replace("<h1>", "<h1>old "))
    project.runpytest("--autotune-report=report").assert_outcomes(passed=2)
    assert "<h1>old " not in page.read_text()


def test_a_page_that_appears_during_the_run_is_not_replaced(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_k="""
        from pathlib import Path
        from pytest_autotune import Interval, tunable


        @tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
        def test_a(autotune):
            Path("report").mkdir(exist_ok=True)
            Path("report/index.html").write_text("theirs")
            autotune.measure(lambda: None)
        """
    )
    result = project.runpytest("--autotune-report=report")
    result.assert_outcomes(passed=1)
    assert (project.path / "report" / "index.html").read_text() == "theirs"
    result.stdout.fnmatch_lines(["*--autotune-report: cannot write *index.html exists and was not written*"])


def test_an_index_that_is_a_fifo_is_refused_without_blocking(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    (project.path / "report").mkdir()
    fifo(project.path / "report" / "index.html")
    result = project.runpytest_subprocess("--autotune-report=report", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "index.html: is a FIFO (named pipe), not a regular file" in result.stderr.str()
