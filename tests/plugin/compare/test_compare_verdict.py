"""What ``--autotune-compare`` says when the time cap ends it short of a verdict (issue 43).

The workers' timer is a fake (a ``conftest.py`` override of ``autotune_timer``, committed so both
sides have it): REF's workers take 1 ms; the working tree's n-th worker process takes 1.35 ms or
3 ms, alternately, for its whole life. Whatever the count of pairs a short cap allows (up to
seven), the pairs disagree too much to confirm a regression, yet every pair sees the change
slower and the estimate lies beyond the 30% tolerance: a likely regression, which must be said
loudly, and be red under ``--autotune-compare-strict`` and under warnings as errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.plugin.compare.git_ref import REF_DIR_PREFIX
from tests.plugin.compare.git_commands import committed_project

CONFTEST = f"""
import itertools
import os
from pathlib import Path

import pytest

SIDE = "ref" if "{REF_DIR_PREFIX}" in __file__ else "working"
FACTORS = {{"ref": [1.0], "working": [1.4, 1.8]}}
JITTER = itertools.cycle([1.0, 1.004, 0.996, 1.002, 0.998])
_drawn = []


def _factor():
    # at the first measurement of this process: the parent process collects but never measures
    if not _drawn:
        folder = Path(os.environ["BIAS_DIR"])
        index = len(list(folder.glob(f"{{SIDE}}-*")))
        (folder / f"{{SIDE}}-{{index}}").touch()
        _drawn.append(FACTORS[SIDE][index % len(FACTORS[SIDE])])
    return _drawn[0]


class ProcessTimer:
    def __call__(self, fn, autotune):
        return fn(), 1e-3 * _factor() * next(JITTER)


@pytest.fixture
def autotune_timer():
    return ProcessTimer()
"""

TESTS = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 2, default=1))
def test_k(autotune):
    autotune.measure(lambda: None)
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.Pytester:
    return committed_project(pytester, monkeypatch, CONFTEST, TESTS)


def run(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, folder: Path, *args: str
) -> tuple[Any, dict[str, Any]]:
    """The comparison, each run with fresh worker processes (their factors counted from the first)."""
    (folder / "biases").mkdir(parents=True)
    monkeypatch.setenv("BIAS_DIR", str(folder / "biases"))
    out = folder / "out.json"
    result = project.runpytest(
        "--autotune-compare=HEAD",
        "--autotune-compare-tolerance=30%",
        "--autotune-compare-max-time=3",
        f"--autotune-json={out}",
        f"--autotune-report-md={folder / 'summary.md'}",
        *args,
    )
    info = json.loads(out.read_text())["benchmarks"][0]["extra_info"]
    compare = {**info["autotune_compare"], **info["autotune_compare_detail"], "md": folder / "summary.md"}
    return result, compare


def test_a_likely_regression_at_the_cap_is_said_loudly_and_is_red_under_strict(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result, compare = run(project, monkeypatch, tmp_path / "plain")
    assert compare["verdict"] == "inconclusive", compare
    assert compare["likely_regression"] is True
    assert compare["ratio"] > 1.3
    assert compare["low"] > 1.0
    assert all(pair["ratio"] > 1.3 for pair in compare["pairs"])
    assert result.ret == 0  # inconclusive stays a warning without --autotune-compare-strict
    result.stdout.fnmatch_lines(
        [
            "*AutotuneInconclusiveWarning: test_k.py::test_k: likely regression: +*% [[]+*%, +*%[]] against "
            "HEAD * (tolerance 30%), not confirmed within --autotune-compare-max-time=3s; raise "
            "--autotune-compare-max-time*",
            "*test_k.py::test_k  +*%*tolerance 30%  inconclusive: LIKELY REGRESSION, not confirmed*",
        ]
    )
    assert "⚠️ likely regression (not confirmed)" in compare["md"].read_text()

    strict, compare = run(project, monkeypatch, tmp_path / "strict", "--autotune-compare-strict")
    assert compare["likely_regression"] is True
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*likely regression: +*(--autotune-compare-strict)*"])


def test_an_inconclusive_comparison_under_warnings_as_errors_fails_the_test_and_keeps_its_result(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    result, compare = run(project, monkeypatch, tmp_path / "errors", "-W", "error")
    result.assert_outcomes(failed=1)
    assert compare["verdict"] == "inconclusive"
    output = result.stdout.str()
    assert "INTERNALERROR" not in output
    assert "pytest_autotune/plugin" not in output  # no traceback through the plugin
    result.stdout.fnmatch_lines(
        ["*AutotuneInconclusiveWarning (an error under the warning filters*", "*LIKELY REGRESSION*"]
    )
