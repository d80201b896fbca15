"""Short texts shared by the terminal summary, the progress lines and the report pages.

One place says how a value, a set of metrics and a tuned test's time read, so that the progress
line, the summary, the pictures and ``index.html`` use the same words. A tuned test has one
reported time, its winner's new baseline (measured in fresh processes after the choice, what plain
runs are checked against); the best trial's time is named beside it as such, because the two differ
by design: a trial is one short measurement picked as the fastest of many (biased fast), measured
under whatever load the search met.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_autotune.outcome import LABELS
from pytest_autotune.values import format_seconds

__all__ = ["counts_text", "format_value", "metrics_text", "speedup_text", "tuned_time_text"]


def format_value(value: float | None, unit: str) -> str:
    """``8.92ms`` for times, ``120.3 GFLOP/s`` for other objectives, ``-`` for none."""
    if value is None:
        return "-"
    return format_seconds(value) if unit == "s" else f"{value:.4g} {unit}"


def metrics_text(metrics: Mapping[str, float] | None) -> str:
    """``GFLOP/s=120.3, GB/s=45.1`` (Kernel Tuner's spelling), empty when there are none."""
    return ", ".join(f"{name}={value:.4g}" for name, value in (metrics or {}).items())


def counts_text(counts: Mapping[str, int] | None) -> str:
    """Trials per outcome label in the labels' order: ``ok 97, runtime 3``."""
    if not counts:
        return ""
    return ", ".join(f"{label} {counts[label]}" for label in LABELS if counts.get(label))


def tuned_time_text(median: float | None, search: Mapping[str, Any] | None, unit: str) -> str:
    """``8.92ms (best trial 8.16ms)``: the reported time (the winner's new baseline), then the best
    trial's, named as such; just the time when no trial value is known."""
    shown = format_value(median, unit)
    best = (search or {}).get("best_trial")
    if best is None or median is None:
        return shown
    return f"{shown} (best trial {format_value(best, unit)})"


def speedup_text(speedup: float | None, at_least: bool = False) -> str:
    """``3.52x`` over the declared default, ``≥17.3x`` when the default was measured only until it
    was clearly outclassed (a lower bound); empty when unknown."""
    if not speedup:
        return ""
    return f"≥{speedup:.1f}x" if at_least else f"{speedup:.2f}x"
