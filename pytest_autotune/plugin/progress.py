"""A live progress line (rich) while a test is being tuned.

Shown only in the process that owns the terminal (never on xdist workers), when standard output is
a terminal and pytest is not run with ``-q``. pytest captures output while a test runs, so every
redraw happens with capture suspended, the way pytest's live logging writes.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pytest_autotune.values import format_seconds

if TYPE_CHECKING:
    import pytest

__all__ = ["TuningProgress"]


class TuningProgress:
    """Progress of one test's tuning; a no-op when it should not be shown."""

    def __init__(self, config: pytest.Config, nodeid: str, unit: str) -> None:
        self._config = config
        self._nodeid = nodeid
        self._unit = unit
        self._progress: Any = None
        self._task: Any = None
        self._enabled = (
            not hasattr(config, "workerinput")
            and config.get_verbosity() >= 0
            and config.pluginmanager.get_plugin("terminalreporter") is not None
        )

    @contextlib.contextmanager
    def _uncaptured(self) -> Iterator[None]:
        capture = self._config.pluginmanager.get_plugin("capturemanager")
        if capture is None:
            yield
            return
        with capture.global_and_fixture_disabled():
            yield

    def __enter__(self) -> TuningProgress:
        if not self._enabled:
            return self
        with self._uncaptured():
            if not sys.stdout.isatty():
                return self
            from rich.console import Console
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("[bold]autotune[/] {task.description}"),
                BarColumn(),
                TextColumn("{task.fields[trials]} trials"),
                TextColumn("best {task.fields[best]}"),
                TimeElapsedColumn(),
                console=Console(),
                transient=True,
                auto_refresh=False,
            )
            sys.stdout.write("\n")
            self._progress.start()
            self._task = self._progress.add_task(self._nodeid, total=1.0, trials=0, best="-")
            self._progress.refresh()
        return self

    def update(self, trials: int, fraction: float | None, label: str, best: float | None) -> None:
        """Show the state after a trial (``fraction`` of the budget used, when known)."""
        if self._progress is None:
            return
        shown = "-" if best is None else format_seconds(best) if self._unit == "s" else f"{best:.4g}"
        with self._uncaptured():
            self._progress.update(self._task, completed=fraction, trials=trials, best=shown)
            self._progress.refresh()

    def __exit__(self, *exc: object) -> None:
        if self._progress is None:
            return
        with self._uncaptured():
            self._progress.stop()
        self._progress = None
