"""What the user reads: the header line, the terminal summary, and the pytest-benchmark JSON export.

The summary has one section per device (tuned tests with their speedup over the declared default
and trials per outcome label; faster, missing, stale, unused and unchecked tests, each with the
command that resolves them) and its own section for performance regressions.
"""

from __future__ import annotations

import datetime
import json
import platform
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_autotune.input_file import open_output
from pytest_autotune.plugin.compare.report import json_detail, json_fields, write_compare_section
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
from pytest_autotune.store.document import printable

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.plugin.controller import Controller
    from pytest_autotune.plugin.session import AutotuneSession

__all__ = ["export_json", "header_lines", "isolation_note", "pruned_note", "time_fields", "write_summary"]

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


def write_summary(tr: pytest.TerminalReporter, controller: Controller) -> None:
    """Write the autotune sections of the terminal summary."""
    compared = [r for r in controller.results if r.mode == "compare"]
    results = [r for r in controller.results if r.mode != "compare"]
    unused = controller.unused
    devices = sorted({r.device for r in results} | set(unused))
    outcome, settings = controller.outcome, controller.session.settings
    if outcome.json_error:
        tr.write_line(f"autotune: {outcome.json_error}", red=True, bold=True)
    if outcome.report_error or outcome.report:
        failed = outcome.report_error is not None
        tr.write_line(
            f"autotune: {outcome.report_error or f'report: {outcome.report}'}", red=failed, bold=failed
        )
    write_compare_section(tr, compared)
    if not devices and not outcome.error and not outcome.prune_refused:
        return
    for device in devices:
        _device_section(tr, device, [r for r in results if r.device == device], unused.get(device, []))
    if outcome.changed:
        removed = f", {outcome.removed} removed" if outcome.removed else ""
        tr.write_line(f"{settings.cache_path}: {_entries(outcome.written)} written{removed}")
    if outcome.prune_refused:
        tr.write_line(f"--autotune-prune skipped: {outcome.prune_refused}", yellow=True)
    if outcome.error:
        tr.write_line(f"autotune: could not update the cache: {outcome.error}", red=True, bold=True)
        for line in outcome.recovery_lines(settings.cache_path):
            tr.write_line(f"autotune: {line}", red=True, bold=True)
    _regressions_section(tr, results)


def clock_notes(results: list[AutotuneResult]) -> list[str]:
    """A line per checked test whose clock says something: why it did not judge on the clock asked
    for, and what the parallelism guard found (:mod:`pytest_autotune.timing.parallelism`)."""
    lines = []
    for result in results:
        notes = [result.clock_note, (result.parallelism or {}).get("message", "")]
        if any(notes):
            lines.append(f"  {result.nodeid}: " + "; ".join(note for note in notes if note))
    return lines


def clock_fields(result: AutotuneResult) -> dict[str, Any]:
    """``extra_info["autotune_clock"]`` of a check: the clock that judged, why, both clocks' medians
    and changes, and the parallelism guard's verdict."""
    fields: dict[str, Any] = {"judged_on": result.clock, "note": result.clock_note}
    for clock in ("wall", "cpu"):
        median, baseline = judged_medians(result, clock)
        change = median / baseline - 1 if median is not None and baseline else None
        fields[clock] = {"median": median, "baseline": baseline, "change": change}
    fields["parallelism"] = result.parallelism
    return fields


def time_fields(result: AutotuneResult) -> dict[str, Any]:
    """``extra_info["autotune_time"]`` of a tuned test: the one reported time (``stats``' median,
    the winner's new baseline) and the others, each named, so that no reader mistakes one for it."""
    search = result.search or {}
    rounds = {
        role: finalist.get("median")
        for finalist in search.get("finalists", ())
        for role in ("winner", "default")
        if role in finalist.get("roles", ())
    }
    return {
        "reported": (result.stats or {}).get("median"),
        "reported_as": "the winner's new baseline, measured after the choice (stats)",
        "best_trial": search.get("best_trial"),
        "finalist_rounds": rounds,
    }


def _benchmark(result: AutotuneResult) -> dict[str, Any]:
    stats = dict(result.stats or {})
    mean = stats.get("mean") or 0.0
    return {
        "group": result.device,
        "name": result.name,
        "fullname": result.nodeid,
        "params": result.params or None,
        "param": result.name.partition("[")[2].rstrip("]") or None,
        "extra_info": {
            "autotune_config": result.config,
            "device": result.device,
            "mode": result.mode,
            "state": result.state,
            "unit": result.unit,
            **({"autotune_tuning": result.tuning} if result.tuning else {}),
            **({"autotune_time": time_fields(result)} if result.state == "tuned" else {}),
            **({"autotune_isolation": result.isolation} if result.isolation else {}),
            **(result.metrics or {}),  # as pytest-benchmark users write benchmark.extra_info[name]
            **({"autotune_pruned": result.pruned} if result.pruned else {}),
            **({"autotune_tolerance": result.tolerance} if result.tolerance is not None else {}),
            **({"autotune_clock": clock_fields(result)} if result.clock and not result.compare else {}),
            **(
                {
                    "autotune_compare": json_fields(result.compare),
                    "autotune_compare_detail": json_detail(result.compare),
                }
                if result.compare
                else {}
            ),
        },
        "options": {"timer": "pytest-autotune", "disable_gc": False, "min_rounds": stats.get("rounds", 0)},
        "stats": {
            "min": stats.get("min"),
            "max": stats.get("max"),
            "mean": mean,
            "stddev": stats.get("stddev"),
            "rounds": stats.get("rounds"),
            "median": stats.get("median"),
            "iqr": stats.get("iqr"),
            "q1": stats.get("q1"),
            "q3": stats.get("q3"),
            "iqr_outliers": stats.get("iqr_outliers"),
            "stddev_outliers": stats.get("stddev_outliers"),
            "outliers": f"{stats.get('stddev_outliers')};{stats.get('iqr_outliers')}",
            "ld15iqr": stats.get("ld15iqr"),
            "hd15iqr": stats.get("hd15iqr"),
            "ops": 1.0 / mean if mean and result.unit == "s" else None,
            "total": stats.get("total"),
            "iterations": 1,
        },
    }


def export_json(path: Path, results: list[AutotuneResult], commit: dict[str, Any]) -> None:
    """Write measured results in pytest-benchmark's JSON layout (``machine_info``, ``benchmarks``, ...)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        __version__ = version("pytest-autotune")
    except PackageNotFoundError:  # run from a source tree that was never installed
        __version__ = "unknown"

    document = {
        "machine_info": {
            "node": platform.node(),
            "processor": platform.processor(),
            "machine": platform.machine(),
            "python_implementation": platform.python_implementation(),
            "python_version": platform.python_version(),
            "release": platform.release(),
            "system": platform.system(),
        },
        "commit_info": commit,
        "benchmarks": [_benchmark(r) for r in results if r.stats],
        "datetime": datetime.datetime.now(datetime.UTC).isoformat(),
        "version": __version__,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with open_output(path) as handle:
        handle.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
