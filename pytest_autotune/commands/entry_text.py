"""How the commands write one entry's fields: configuration, baseline, tuning, commit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_autotune.entry import Baseline, StoreEntry
from pytest_autotune.timing.regression import Rule
from pytest_autotune.values import format_seconds

__all__ = ["baseline_text", "commit_text", "config_text", "tolerance_text", "tuning_text", "value_text"]


def value_text(value: float, unit: str | None) -> str:
    """``8.92ms`` for times, ``120.3 GFLOP/s`` for other objectives."""
    return format_seconds(value) if unit in (None, "s") else f"{value:.4g} {unit}"


def config_text(config: Mapping[str, Any]) -> str:
    """``BS=64, WPT=4`` in the stored order."""
    return ", ".join(
        f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}" for name, value in config.items()
    )


def tolerance_text(baseline: Baseline) -> str:
    """The tolerance a plain run judges ``baseline`` with under the default rule: ``10%``, or
    ``24% (noise 12%)`` when its noise sets it (a tolerance set per test or session is not known here),
    on the clock the writing run judged on (``4% (cpu noise 2%)``: its ``cpu`` baseline)."""
    clock = ""
    if baseline.clock == "cpu" and baseline.cpu is not None:
        baseline, clock = baseline.cpu, "cpu "
    tolerance = Rule().tolerance_for(baseline)
    if baseline.noise is None:
        return f"{tolerance:.0%}"
    return f"{tolerance:.0%} ({clock}noise {baseline.noise:.0%})"


def baseline_text(baseline: Baseline | None) -> str:
    """``100us`` (``-`` without one)."""
    return value_text(baseline.median, baseline.unit) if baseline is not None else "-"


def tuning_text(entry: StoreEntry) -> str:
    """``15 trials, exhaustive, 2.3s`` (``-`` for an entry written without tuning)."""
    tuning = entry.tuning
    if tuning is None:
        return "-"
    return f"{tuning.trials} trials, {tuning.strategy}, {format_seconds(tuning.duration)}"


def commit_text(entry: StoreEntry) -> str:
    """The commit the entry was measured at, short (``a1b2c3d*`` when the tree was dirty)."""
    info = entry.commit_info or {}
    commit = str(info.get("id", ""))[:7]
    return f"{commit}{'*' if info.get('dirty') else ''}" if commit else "-"
