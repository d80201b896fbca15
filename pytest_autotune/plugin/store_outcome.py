"""What happened to ``autotune.json`` during the session: entries written and removed, the error.

The controller (:mod:`pytest_autotune.plugin.controller`) fills it as it writes; the terminal summary
reads it. It holds only what the store write produced: each report format keeps its own outcome
(:class:`~pytest_autotune.plugin.report.formats.reporter.ReportOutcome`). It is a leaf module, below
the controller, so that the report formats may name it without sitting on the controller.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["StoreOutcome"]


@dataclass
class StoreOutcome:
    """What happened to ``autotune.json`` during the session (for the summary)."""

    written: int = 0
    removed: int = 0
    changed: bool = False
    error: str | None = None
    prune_refused: str | None = None
    #: The recovery file this run's unsaved results went to, how many, or why none could be written.
    recovery: Path | None = None
    recovered: int = 0
    recovery_error: str | None = None
