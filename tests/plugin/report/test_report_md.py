"""``--autotune-report-md``: the Markdown summary of tuning and check runs, with a reason on every red."""

from __future__ import annotations

import dataclasses
import math

import pytest

from pytest_autotune.commands.entry_text import tolerance_text
from pytest_autotune.plugin.report.formats.markdown import markdown_report
from pytest_autotune.plugin.report.results import AutotuneResult
from pytest_autotune.store import Store

FAILING = """
def test_plain_failure():
    assert 1 + 1 == 3, "arithmetic is broken"
"""


def table(text: str) -> dict[str, list[str]]:
    """The report's table rows by test id (cells stripped)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_tuning_and_check_runs_are_summarised(
    project: pytest.Pytester, two_tests: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(test_k=two_tests)
    summary = project.path / "ci" / "summary.md"
    project.runpytest("--autotune", f"--autotune-report-md={summary}").assert_outcomes(passed=2)
    tuned = summary.read_text()
    assert tuned.startswith("## pytest-autotune\n\n✅ 2 tunable tests: 2 tuned\n")
    rows = table(tuned)
    assert rows["test_k.py::test_a"][:5] == ["tune", "≥9.0x vs default", "–", "–", "✅ tuned"]
    assert rows["test_k.py::test_a"][5] == "100us with {'A': 3, 'B': 3}"

    monkeypatch.setenv("AUTOTUNE_SLOW", "test_a=2")
    project.makepyfile(test_plain=FAILING)
    result = project.runpytest(f"--autotune-report-md={summary}")
    result.assert_outcomes(passed=1, failed=2)
    text = summary.read_text()
    assert text.startswith(tuned + "\n## pytest-autotune\n")  # appended: the first report stays
    checked = text[len(tuned) :]
    assert "❌ 2 tunable tests: 1 passed, 1 regression" in checked
    rows = table(checked)
    mode, change, interval, tolerance, verdict, _ = rows["test_k.py::test_a"]
    # the fake timer reports CPU time as well: the check judges on it and gives the wall's change
    expected = "+100.0% vs baseline (cpu time; wall +100.0%)"
    assert (mode, change, interval, verdict) == ("check", expected, "–", "❌ regression")
    # issue 44: the tolerance reads as `show` gives it, the limit beside it labelled as such
    stored = Store.load(project.path / "autotune.json")
    (device,) = stored.devices()
    entry = stored.entry(device, "test_k.py::test_a")
    assert entry is not None
    assert entry.baseline is not None
    shown = tolerance_text(entry.baseline).split()[0]
    assert tolerance.startswith(f"{shown} (limit +")
    assert tolerance.endswith(" with the noise band)")
    assert rows["test_k.py::test_b"][:5] == [
        "check",
        "+0.0% vs baseline (cpu time; wall +0.0%)",
        "–",
        rows["test_k.py::test_b"][3],
        "✅ pass",
    ]
    why = checked.split("### Why\n", 1)[1]
    assert "- `test_k.py::test_a` (❌ regression): performance regression on host:" in why
    assert "- `test_plain.py::test_plain_failure` (❌ failed): AssertionError: arithmetic is broken" in why


def compare_result(state: str, verdict: str, ratio: float, low: float, high: float) -> AutotuneResult:
    return AutotuneResult(
        nodeid=f"k.py::test_{state}",
        name=f"test_{state}",
        device="d",
        mode="compare",
        state=state,  # type: ignore[arg-type]
        config={"A": 1},
        message=f"why {state}",
        compare={
            "verdict": verdict,
            "ratio": ratio,
            "low": low,
            "high": high,
            "blocks": 16,
            "seconds": 3.5,
            "tolerance": 0.05,
            "ref": "origin/main",
            "notes": ["autotune.json has uncommitted changes"],
            "sides": {
                "ref": {"config": {"A": 1}, "state": "missing", "reason": "no entry"},
                "working": {"config": {"A": 2}, "state": "committed", "reason": ""},
            },
        },
    )


def test_comparisons_show_ratio_interval_tolerance_and_reasons() -> None:
    results = [
        compare_result("regression", "regression", 1.2, 1.15, 1.26),
        compare_result("inconclusive", "inconclusive", 1.04, 0.0, math.inf),
        compare_result("passed", "pass", 0.99, 0.97, 1.01),
    ]
    text = markdown_report(results, notes=["autotune.json has uncommitted changes"] * 2)
    assert "❌ 3 tunable tests: 1 inconclusive, 1 passed, 1 regression" in text
    assert text.count("> **Note:** autotune.json has uncommitted changes") == 1
    rows = table(text)
    assert rows["k.py::test_regression"][:5] == [
        "compare with `origin/main`",
        "+20.0% (B/A)",
        "[+15.0%, +26.0%], 16 blocks",
        "+5%",
        "❌ regression",
    ]
    assert (
        rows["k.py::test_regression"][5] == "REF default (no entry) {'A': 1}, working tree committed {'A': 2}"
    )
    assert rows["k.py::test_inconclusive"][2] == "[-inf%, +inf%], 16 blocks"
    why = text.split("### Why\n", 1)[1]
    assert "- `k.py::test_regression` (❌ regression): why regression" in why
    assert "- `k.py::test_inconclusive` (⚠️ inconclusive): why inconclusive" in why
    assert "test_passed" not in why


def test_cells_cannot_break_the_table() -> None:
    result = dataclasses.replace(
        compare_result("regression", "regression", 1.2, 1.1, 1.3), message="a | b\nc"
    )
    assert "(❌ regression): a \\| b c" in markdown_report([result])
