"""The terminal summary's tables: one row per test, columns aligned, as pytest-benchmark prints them.

Rendering only: the rows are texts the caller computed (:mod:`pytest_autotune.plugin.report`), so
the same numbers read the same in every place (:mod:`pytest_autotune.plugin.report.summary_text`). A
column whose cells are all empty is left out, so a run without metrics shows no metrics column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pytest_autotune.plugin.report.results import AutotuneResult
from pytest_autotune.plugin.report.summary_text import counts_text, format_value, metrics_text, speedup_text

__all__ = [
    "CHECK_LEGEND",
    "CLOCK_LEGEND",
    "TUNED_LEGEND",
    "aligned",
    "check_rows",
    "judged_medians",
    "tuned_lines",
]

#: What the check table's columns mean, printed under it.
CHECK_LEGEND: Final = (
    "time: this run's median; baseline: the stored one (autotune.json)",
    "limit: the slowest time that passes, baseline x (1 + tolerance) + noise band",
)

#: What the clock columns mean, printed under the check table when a check judged on a clock.
CLOCK_LEGEND: Final = (
    "clock: the one that judged (--autotune-clock): cpu = CPU time the test's process consumed (all "
    "threads), wall = device or wall time",
    "time, baseline, change and limit are on that clock; other: the other clock's change",
)

#: What the tuned table's columns mean, printed under it: the one reported time, and the others.
TUNED_LEGEND: Final = (
    "time: the winner's new baseline, measured again after the choice; plain runs are checked against it",
    "best trial: the fastest single trial, one short measurement among many (may differ either way)",
    "vs default: the winner against the declared default in the same interleaved finalist rounds "
    "(≥: a default clearly outclassed by a short probe, measured no further)",
)


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "  ") -> list[str]:
    """``header`` and ``rows`` as lines of left-aligned columns two spaces apart; a column that is
    empty in every row is dropped."""
    keep = [i for i in range(len(header)) if any(row[i] for row in rows)]
    table = [[header[i] for i in keep], *([row[i] for i in keep] for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(keep))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]


def judged_medians(result: AutotuneResult, clock: str | None = None) -> tuple[float | None, float | None]:
    """``(this run's median, the baseline's median)`` on ``clock`` (default: the one that judged the
    result; ``wall`` for results judged before clocks existed); None where one is not known."""
    clock = clock or result.clock or "wall"
    stats, baseline = result.stats or {}, result.baseline or {}
    if clock == "cpu":
        stats, baseline = stats.get("cpu") or {}, baseline.get("cpu") or {}
    median, reference = stats.get("median"), baseline.get("median")
    return (
        float(median) if isinstance(median, int | float) else None,
        float(reference) if isinstance(reference, int | float) else None,
    )


def _change(result: AutotuneResult, clock: str | None = None) -> str:
    median, baseline = judged_medians(result, clock)
    if median is None or not baseline:
        return ""
    judged = " (not judged)" if result.state == "stale" else ""  # a baseline of another declaration
    return f"{median / baseline - 1:+.1%}{judged}"


def _other(result: AutotuneResult) -> str:
    """The other clock's change (``"wall +48.0%"``), empty when a clock did not judge or it is unknown."""
    if result.clock is None:
        return ""
    other = "wall" if result.clock == "cpu" else "cpu"
    change = _change(result, other)
    return f"{other} {change}" if change else ""


def _limit(result: AutotuneResult) -> str:
    if result.limit is None:
        return ""
    tolerance = f" ({result.tolerance:.0%})" if result.tolerance is not None else ""
    return format_value(result.limit, result.unit) + tolerance


def check_rows(results: Sequence[AutotuneResult]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the check table: every measured test of a plain run (metrics or not)."""
    header = ["test", "clock", "time", "baseline", "change", "limit (tolerance)", "other", "state", "metrics"]
    rows = [
        [
            result.nodeid,
            result.clock or "",
            format_value(judged_medians(result)[0], result.unit),
            format_value(judged_medians(result)[1], result.unit) if result.baseline else "",
            _change(result),
            _limit(result),
            _other(result),
            result.state,
            metrics_text(result.metrics),
        ]
        for result in results
        if result.stats
    ]
    return header, rows


def tuned_lines(results: Sequence[AutotuneResult], notes: Sequence[str]) -> list[str]:
    """The tuned table: one row per tuned test, its ``notes`` (if any) on a line below the row."""
    header = ["test", "time", "best trial", "vs default", "trials", "metrics", "configuration"]
    rows = [
        [
            result.nodeid,
            format_value((result.stats or {}).get("median"), result.unit),
            format_value((result.search or {}).get("best_trial"), result.unit) if result.search else "",
            speedup_text(result.speedup, result.speedup_at_least) or "unknown",
            f"{(result.tuning or {}).get('trials', 0)} ({counts_text((result.tuning or {}).get('counts'))})",
            metrics_text(result.metrics),
            str(result.config),
        ]
        for result in results
    ]
    head, *body = aligned(header, rows)
    lines = [head]
    for line, note in zip(body, notes, strict=True):
        lines.append(line)
        if note:
            lines.append(f"      [{note}]")
    return lines
