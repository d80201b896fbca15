"""What the user reads in the terminal: the header line and the autotune sections of the summary.

The summary has one section per device (tuned tests with their speedup over the declared default
and trials per outcome label; faster, missing, stale, unused and unchecked tests, each with the
command that resolves them) and its own section for performance regressions. Above them it names
what each other report format wrote, or why it could not (their outcomes,
:class:`~pytest_autotune.plugin.report.formats.reporter.ReportOutcome`). The summary is itself a
report format (:class:`TerminalSummary`) that writes at pytest's terminal-summary stage.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_autotune.plugin.compare.report import write_compare_section
from pytest_autotune.plugin.report.formats.reporter import ReportContext, Reporter, ReportOutcome
from pytest_autotune.plugin.report.results import AutotuneResult
from pytest_autotune.plugin.report.summary_table import (
    CHECK_LEGEND,
    CLOCK_LEGEND,
    TUNED_LEGEND,
    aligned,
    check_rows,
    judged_medians,
    tuned_lines,
)
from pytest_autotune.plugin.report.summary_text import format_value
from pytest_autotune.recovery import merge_command
from pytest_autotune.store.document import printable

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.plugin.session import AutotuneSession
    from pytest_autotune.plugin.store_outcome import StoreOutcome

__all__ = ["TerminalSummary", "header_lines", "isolation_note", "pruned_note", "write_summary"]

#: Unused entries listed by name without ``-v`` (a store of thousands would flood the terminal).
UNUSED_LISTED = 10

_FIXES = {
    "faster": "faster than baseline (refresh: pytest --autotune-update-baseline)",
    "missing": "missing (tune: pytest --autotune=missing)",
    "stale": "stale (re-tune: pytest --autotune=missing)",
    "unchecked": "timing not checked",
    "unmeasured": "never measured (call autotune.measure or autotune.record)",
    "tune-failed": "tuning failed",
    "baseline-updated": "baseline updated",
}


def header_lines(session: AutotuneSession, devices: Iterable[str]) -> list[str]:
    """The header: mode, device keys, cache path and entry counts."""
    settings, store = session.settings, session.store
    shown = sorted(set(devices))
    counts = ", ".join(f"{len(store.tests(d))} for {d}" for d in shown) if shown else ""
    damaged = len(store.damaged())
    total = _entries(store.count()) + (f" ({damaged} damaged)" if damaged else "")
    total += f", {counts}" if counts else ""
    if not store.exists:
        total = "not created yet"
    device_text = ", ".join(shown) if shown else "chosen per test"
    return [
        f"autotune: mode {settings.describe_mode()}, device {device_text}, "
        f"cache {settings.cache_path} ({total})"
    ]


def _entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def isolation_note(isolation: dict[str, Any] | None) -> str:
    """``trial worker restarted: 3 crashes, 1 timeout``, after ``trials on 2 devices at once`` under
    ``--autotune-parallel`` (empty when trials ran on one device and it never restarted)."""
    if not isolation:
        return ""
    reasons = [
        f"{n} {name}{'es' if name == 'crash' and n != 1 else 's' if n != 1 else ''}"
        for name, n in (
            ("crash", isolation.get("crashes", 0)),
            ("timeout", isolation.get("timeouts", 0)),
            ("memory restart", isolation.get("memory_restarts", 0)),
            ("lost GPU context", isolation.get("context_restarts", 0)),
        )
        if n
    ]
    devices = isolation.get("devices", 1)
    spread = f"trials on {devices} devices at once" if devices > 1 else ""
    if not reasons:
        return spread
    where = f" (details: {isolation['journal']})" if isolation.get("journal") else ""
    restarts = f"trial worker{'s' if devices > 1 else ''} restarted: {', '.join(reasons)}{where}"
    return f"{spread}; {restarts}" if spread else restarts


def pruned_note(pruned: dict[str, Any] | None) -> str:
    """``pruned 12 of 80 configurations beyond the device's limits (...: 12)``, empty when none."""
    if not pruned:
        return ""
    from pytest_autotune.backends.launch_limits import Pruned

    reasons = tuple((str(text), int(n)) for text, n in pruned.get("reasons", ()))
    return Pruned(int(pruned["declared"]), int(pruned["kept"]), reasons).describe()


def _converged_note(tuning: dict[str, Any] | None) -> str:
    """``stopped: converged after 31 trials (...)`` when the search stopped before its budget."""
    if not tuning or tuning.get("stopped") != "converged":
        return ""
    warm = tuning.get("warm_from")
    start = f"warm start from {', '.join(map(str, warm))}; " if warm else ""
    return (
        f"stopped: converged after {tuning.get('trials', 0)} trials "
        f"({start}its model expected too little from the rest of the budget: bo option converge)"
    )


def _tuned_note(result: AutotuneResult) -> str:
    """What else the summary says of a tuned test: warm start, kept configuration, restarts, pruning."""
    notes = [
        text
        for text in (
            result.warm_start,
            _converged_note(result.tuning),
            result.message,
            isolation_note(result.isolation),
            pruned_note(result.pruned),
        )
        if text
    ]
    return "; ".join(notes)


def _state_line(result: AutotuneResult) -> str:
    median, baseline = judged_medians(result)
    parts = [f"  {result.nodeid}"]
    if result.state == "baseline-updated" and median is not None:
        was = ""
        if baseline:
            was = f" (was {format_value(baseline, result.unit)}, {median / baseline - 1:+.1%})"
        parts.append(f"stored {format_value(median, result.unit)}{was}")
    elif median is not None and baseline:
        judged = ", not judged" if result.state == "stale" else ""  # the baseline of another declaration
        parts.append(
            f"{format_value(median, result.unit)} vs {format_value(baseline, result.unit)} "
            f"({median / baseline - 1:+.1%}{judged})"
        )
    if result.message:
        parts.append(result.message)
    if result.pruned:
        parts.append(f"[{pruned_note(result.pruned)}]")
    return "  ".join(parts)


def _device_section(
    tr: pytest.TerminalReporter, device: str, results: list[AutotuneResult], unused: list[str]
) -> None:
    tr.write_sep("-", f"autotune: {device}")
    states = Counter(r.state for r in results)
    tuned = [r for r in results if r.state == "tuned"]
    if tuned:
        tr.write_line(f"tuned {len(tuned)}:")
        for line in tuned_lines(tuned, [_tuned_note(r) for r in tuned]):
            tr.write_line(line)
        for line in TUNED_LEGEND:
            tr.write_line(f"  {line}")
    checked = {s: n for s, n in states.items() if s in ("passed", "faster", "regression")}
    if checked:
        detail = ", ".join(f"{n} {s}" for s, n in sorted(checked.items()))
        tr.write_line(f"checked {sum(checked.values())}: {detail}")
    header, rows = check_rows([r for r in results if r.state != "tuned"])
    if rows:
        for line in aligned(header, rows):
            tr.write_line(line)
        if any(r.limit is not None for r in results):
            for line in CHECK_LEGEND + (CLOCK_LEGEND if any(r.clock for r in results) else ()):
                tr.write_line(f"  {line}")
    for line in clock_notes(results):
        tr.write_line(line)
    for state, title in _FIXES.items():
        chosen = [r for r in results if r.state == state]
        if chosen:
            tr.write_line(f"{title}: {len(chosen)}")
            for result in chosen:
                tr.write_line(_state_line(result))
    if unused:
        tr.write_line(f"unused entries (remove: pytest --autotune-prune): {len(unused)}")
        listed = unused if tr.config.get_verbosity() > 0 else unused[:UNUSED_LISTED]
        for nodeid in listed:  # ids read from the store: escaped (a file anyone may have edited)
            tr.write_line(f"  {printable(nodeid)}")
        if len(listed) < len(unused):
            tr.write_line(
                f"  ... and {len(unused) - len(listed)} more (pytest -v lists them all; "
                "python -m pytest_autotune show lists the store)"
            )


def _regressions_section(tr: pytest.TerminalReporter, results: list[AutotuneResult]) -> None:
    regressions = [r for r in results if r.state == "regression"]
    if not regressions:
        return
    tr.write_sep("=", "autotune: performance regressions", red=True, bold=True)
    for r in regressions:
        current, baseline = judged_medians(r)
        guard = r.parallelism or {}
        lost = f"; {guard['message']}" if guard.get("state") == "dropped" else ""
        delta = f"{current / baseline - 1:+.1%}" if current is not None and baseline else "?"
        tolerance = f"tolerance {r.tolerance:.0%}, " if r.tolerance is not None else ""
        tr.write_line(
            f"{r.nodeid} [{r.device}]: baseline {format_value(baseline, r.unit)}, "
            f"current {format_value(current, r.unit)} "
            f"({delta}), limit {format_value(r.limit, r.unit)} "
            f"({tolerance}noise band {format_value(r.noise_band, r.unit)})"
            + (f" on {r.clock} time" if r.clock else "")
            + lost,
            red=True,
        )


class TerminalSummary(Reporter):
    """The autotune sections of pytest's terminal summary (always written when there is a terminal)."""

    name = "terminal"
    stage = "terminal-summary"
    fails_run = False

    def enabled(self, context: ReportContext) -> bool:
        """Whenever pytest's terminal reporter runs."""
        return context.terminal is not None

    def write(self, results: Sequence[AutotuneResult], context: ReportContext) -> ReportOutcome:
        """Write the sections into the terminal reporter."""
        assert context.terminal is not None
        write_summary(context.terminal, results, context)
        return ReportOutcome()


def recovery_lines(outcome: StoreOutcome, store: Path) -> list[str]:
    """What the summary says about results that could not be written to ``store``."""
    if outcome.recovery is not None:
        return [
            f"this run's results ({outcome.recovered} entr{'y' if outcome.recovered == 1 else 'ies'}) "
            f"were saved to {outcome.recovery}",
            f"merge them once {store} can be written: {merge_command(outcome.recovery, store)}",
        ]
    if outcome.recovery_error is not None:
        return [f"this run's results were lost: {outcome.recovery_error}"]
    return []


def write_summary(
    tr: pytest.TerminalReporter, results: Sequence[AutotuneResult], context: ReportContext
) -> None:
    """Write the autotune sections of the terminal summary: each report format's path or error, the
    comparisons, one section per device, the store's outcome and the performance regressions."""
    compared = [r for r in results if r.mode == "compare"]
    checked = [r for r in results if r.mode != "compare"]
    unused = context.unused
    devices = sorted({r.device for r in checked} | set(unused))
    outcome, settings = context.store, context.settings
    for report in context.outcomes.values():
        if report.error is not None:
            tr.write_line(f"autotune: {report.error}", red=True, bold=True)
        elif report.message is not None:
            tr.write_line(f"autotune: {report.message}")
    write_compare_section(tr, compared)
    if not devices and not outcome.error and not outcome.prune_refused:
        return
    for device in devices:
        _device_section(tr, device, [r for r in checked if r.device == device], unused.get(device, []))
    if outcome.changed:
        removed = f", {outcome.removed} removed" if outcome.removed else ""
        tr.write_line(f"{settings.cache_path}: {_entries(outcome.written)} written{removed}")
    if outcome.prune_refused:
        tr.write_line(f"--autotune-prune skipped: {outcome.prune_refused}", yellow=True)
    if outcome.error:
        tr.write_line(f"autotune: could not update the cache: {outcome.error}", red=True, bold=True)
        for line in recovery_lines(outcome, settings.cache_path):
            tr.write_line(f"autotune: {line}", red=True, bold=True)
    _regressions_section(tr, checked)


def clock_notes(results: list[AutotuneResult]) -> list[str]:
    """A line per checked test whose clock says something: why it did not judge on the clock asked
    for, and what the parallelism guard found (:mod:`pytest_autotune.timing.parallelism`)."""
    lines = []
    for result in results:
        notes = [result.clock_note, (result.parallelism or {}).get("message", "")]
        if any(notes):
            lines.append(f"  {result.nodeid}: " + "; ".join(note for note in notes if note))
    return lines
