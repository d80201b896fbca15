"""``--autotune-report-md=PATH``: this run's autotune results as Markdown, for a CI job summary.

One table row per tunable test, whatever the mode: a comparison (``--autotune-compare``: the ratio
of the working tree's time over REF's with its interval), a check against the stored baseline (the
change of the median, and the limit the rule allowed) or a tuning run (the speedup over the
declared default and the configuration chosen), each with its tolerance and verdict. Below the
table every red gets its reason: the regression message, why tuning failed, and the first line of
each other failed test. The text is appended to ``PATH`` (GitHub's ``$GITHUB_STEP_SUMMARY`` is a
file that a job's steps append to), so nothing written there before is lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from pytest_autotune.input_file import open_output
from pytest_autotune.plugin.compare.report import configurations, percent
from pytest_autotune.plugin.report.formats.reporter import ReportContext, Reporter, ReportOutcome
from pytest_autotune.plugin.report.results import AutotuneResult
from pytest_autotune.plugin.report.summary_table import judged_medians
from pytest_autotune.plugin.report.summary_text import format_value, speedup_text

__all__ = ["FAILED_STATES", "MarkdownSummary", "failed_tests", "markdown_report", "write_markdown"]

_MARKS: Final = {
    "regression": "❌ regression",
    "tune-failed": "❌ tuning failed",
    "inconclusive": "⚠️ inconclusive",
    "skipped": "⏭️ skipped",
    "failed": "❌ failed",
    "refused": "❌ cannot compare",
    "passed": "✅ pass",
    "faster": "✅ faster",
    "tuned": "✅ tuned",
    "baseline-updated": "✅ baseline updated",
    "missing": "➖ no entry (defaults)",
    "stale": "⚠️ stale entry, not checked",
    "unchecked": "➖ not checked",
    "unmeasured": "➖ never measured",
}
#: States that fail a test (their reason is the autotune one, not the failure's first line).
FAILED_STATES: Final = ("regression", "tune-failed", "failed", "refused")
#: States that warn: the run could not judge the kernel (a stale entry: no baseline of this declaration).
_WARNED: Final = ("inconclusive", "stale")
#: States that fail (or, for inconclusive and stale, warn about) a test: each gets its reason below the table.
_RED: Final = (*FAILED_STATES, *_WARNED)


def _cell(text: Any) -> str:
    """Text safe inside a table cell (no pipes, no line breaks)."""
    return " ".join(str(text).replace("|", "\\|").split())


def _code(text: str, *, in_table: bool = False) -> str:
    """``text`` as inline code; in a table cell a ``|`` is escaped (GitHub reads it as a cell border
    even inside backticks)."""
    code = f"`{text.replace('`', '')}`"
    return code.replace("|", "\\|") if in_table else code


def _compare_row(result: AutotuneResult) -> list[str]:
    compare = result.compare or {}
    verdict = compare.get("verdict")
    if verdict in ("skipped", "failed", "refused"):
        reason = compare.get("reason") or result.message or "no reason given"
        return ["compare", "–", "–", "–", _MARKS[str(verdict)], _cell(reason)]
    tolerance = compare.get("tolerance")
    return [
        f"compare with {_code(str(compare.get('ref', '?')), in_table=True)}",
        f"{percent(compare.get('ratio'))} (B/A)",
        f"[{percent(compare.get('low'))}, {percent(compare.get('high'))}], {compare.get('blocks')} blocks",
        f"+{tolerance:.0%}" if isinstance(tolerance, float) else "–",
        "⚠️ likely regression (not confirmed)"
        if result.state == "inconclusive" and compare.get("likely_regression")
        else _MARKS.get(result.state, result.state),
        _cell(configurations(compare)),
    ]


def _check_row(result: AutotuneResult) -> list[str]:
    median, baseline = judged_medians(result)
    change = f"{median / baseline - 1:+.1%} vs baseline" if median and baseline else "–"
    if result.clock and change != "–":  # the clock that judged, and the other one's change
        other = "wall" if result.clock == "cpu" else "cpu"
        now, then = judged_medians(result, other)
        change += f" ({result.clock} time" + (f"; {other} {now / then - 1:+.1%})" if now and then else ")")
    tolerance = "–"
    if result.limit and baseline:
        # the tolerance as `show` gives it, then the limit it led to (tolerance plus the noise band)
        limit = f"limit {result.limit / baseline - 1:+.1%} = {_value(result.limit, result.unit)}"
        limit += " with the noise band"
        tolerance = f"{result.tolerance:.0%} ({limit})" if result.tolerance is not None else limit
    notes = [result.clock_note, (result.parallelism or {}).get("message", "")]
    note = "; ".join(n for n in [result.message if result.state not in _RED else "", *notes] if n)
    return [
        "check",
        change,
        "–",
        tolerance,
        _MARKS.get(result.state, result.state),
        _cell(note or result.config),
    ]


def _tune_row(result: AutotuneResult) -> list[str]:
    speedup = f"{speedup_text(result.speedup, result.speedup_at_least)} vs default" if result.speedup else "–"
    median = (result.stats or {}).get("median")
    return [
        "tune",
        speedup,
        "–",
        "–",
        _MARKS.get(result.state, result.state),
        _cell(f"{_value(median, result.unit)} with {result.config}" if median else result.config),
    ]


def _value(value: float | None, unit: str) -> str:
    """:func:`~pytest_autotune.plugin.report.summary_text.format_value`, with the table's dash for none."""
    return "–" if value is None else format_value(value, unit)


def _row(result: AutotuneResult) -> list[str]:
    if result.mode == "compare":
        cells = _compare_row(result)
    elif result.mode == "tune":
        cells = _tune_row(result)
    else:
        cells = _check_row(result)
    return [_code(result.nodeid, in_table=True), *cells]


def _headline(results: list[AutotuneResult], failures: list[tuple[str, str]]) -> str:
    counts = Counter(result.state for result in results)
    parts = [f"{n} {state}" for state, n in sorted(counts.items())]
    red = sum(counts[state] for state in FAILED_STATES) + len(failures)
    mark = "❌" if red else "⚠️" if any(counts[state] for state in _WARNED) else "✅"
    return (
        f"{mark} {len(results)} tunable test{'s' if len(results) != 1 else ''}: {', '.join(parts) or 'none'}"
    )


def markdown_report(
    results: list[AutotuneResult],
    *,
    notes: Iterable[str] = (),
    failures: Iterable[tuple[str, str]] = (),
) -> str:
    """The Markdown text: headline, notes, the table, then the reasons of every red.

    ``failures`` are ``(node id, first line of the reason)`` of failed tests without an autotune
    verdict of their own (a failed assert, an error in setup).
    """
    failed = list(failures)
    lines = ["## pytest-autotune", "", _headline(results, failed), ""]
    lines += [f"> **Note:** {_cell(note)}" for note in dict.fromkeys(notes)]
    if results:
        lines += [
            "",
            "| test | mode | ratio / change | interval | tolerance | verdict | configuration / note |",
        ]
        lines.append("|---|---|---|---|---|---|---|")
        lines += ["| " + " | ".join(_row(result)) + " |" for result in results]
    reds = [result for result in results if result.state in _RED]
    if reds or failed:
        lines += ["", "### Why", ""]
        for result in reds:
            reason = result.message
            if result.state == "stale":
                reason += f"; re-tune: {_code(f'pytest --autotune=missing {result.nodeid}')}"
            lines.append(f"- {_code(result.nodeid)} ({_MARKS[result.state]}): {_cell(reason)}")
        for nodeid, reason in failed:
            lines.append(f"- {_code(nodeid)} (❌ failed): {_cell(reason)}")
    return "\n".join(lines) + "\n"


def _compare_notes(results: list[AutotuneResult]) -> list[str]:
    notes: list[str] = []
    for result in results:
        notes += (result.compare or {}).get("notes", [])
    return notes


def failed_tests(reports: Iterable[Any], explained: set[str]) -> list[tuple[str, str]]:
    """``(node id, reason)`` of failed reports (``failed`` and ``error`` of the terminal's stats) whose
    test has no autotune verdict of its own in ``explained``; the reason is the first ``E`` line."""
    found: dict[str, str] = {}
    for report in reports:
        nodeid = getattr(report, "nodeid", "")
        if not nodeid or nodeid in explained or nodeid in found:
            continue
        text = str(getattr(report, "longreprtext", "") or "")
        errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        reason = errors[0] if errors else (lines[-1] if lines else "failed")
        found[nodeid] = (
            f"{getattr(report, 'when', '')}: {reason}"
            if getattr(report, "when", "call") != "call"
            else reason
        )
    return list(found.items())


def write_markdown(
    path: Path, results: Sequence[AutotuneResult], failures: Iterable[tuple[str, str]]
) -> None:
    """Append :func:`markdown_report` of ``results`` to ``path`` (created with its folders if need be)."""
    results = list(results)
    text = markdown_report(results, notes=_compare_notes(results), failures=failures)
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = path.exists() and path.stat().st_size > 0
    with open_output(path, append=True) as handle:
        handle.write(("\n" if existing else "") + text)


class MarkdownSummary(Reporter):
    """The Markdown summary of ``--autotune-report-md``; a failed write fails the run."""

    name = "markdown"

    def enabled(self, context: ReportContext) -> bool:
        """Asked for by ``--autotune-report-md`` (or its ini key or environment variable)."""
        return context.settings.report_md is not None

    def write(self, results: Sequence[AutotuneResult], context: ReportContext) -> ReportOutcome:
        """Append the summary, with the first line of each failed test that has no verdict of its own."""
        path = context.settings.report_md
        assert path is not None
        reds = {r.nodeid for r in results if r.state in FAILED_STATES}
        failures = failed_tests(context.failed_reports, reds)
        try:
            write_markdown(path, results, failures)
        except OSError as exc:
            return ReportOutcome(error=f"--autotune-report-md: cannot write {path} ({exc})")
        return ReportOutcome(written=path)
