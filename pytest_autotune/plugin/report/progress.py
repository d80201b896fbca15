"""Progress while a test is being tuned: a live line on a terminal, plain lines in a log.

On a terminal (standard output is a tty) a rich progress line is redrawn after every trial and
disappears when the test is done. Elsewhere (a CI log, a file, pytester) redrawing is impossible and
dots alone said nothing for minutes, so plain lines are written instead: one when a test starts
tuning, one when it is done (with the chosen time, see
:func:`pytest_autotune.plugin.report.summary_text.tuned_time_text`), and one after a trial whenever
:class:`ProgressEvery` says so (by default when 30 s passed since the last line;
``--autotune-progress``). Either way only the process that owns the terminal shows progress (never
an xdist worker, whose output pytest-xdist does not show) and ``-q`` silences it. pytest captures
output while a test runs, so every write happens with capture suspended, the way pytest's live
logging writes.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.plugin.report.summary_text import format_value
from pytest_autotune.values import format_seconds, parse_duration, parse_int

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.policy import Policy

__all__ = ["DEFAULT_PROGRESS_EVERY", "ProgressEvery", "TuningProgress", "describe_budget"]


@dataclass(frozen=True)
class ProgressEvery:
    """When a plain progress line is written: after every ``trials`` trials and/or once ``seconds``
    passed since the last line (whichever comes first; None: never by that measure)."""

    trials: int | None = None
    seconds: float | None = 30.0

    @classmethod
    def parse(cls, value: str) -> ProgressEvery:
        """``"30s"``, ``"2min"`` (time), ``"10"`` (trials), ``"10|30s"`` (either), ``"off"`` (none)."""
        text = value.strip().lower()
        if text in ("off", "none", "no"):
            return cls(None, None)
        trials: int | None = None
        seconds: float | None = None
        for term in (t.strip() for t in text.split("|")):
            if term.isdigit():
                trials = parse_int(term, minimum=1)
            else:
                seconds = parse_duration(term)
                if not seconds > 0:
                    raise ValueError(f"{term!r} is not a positive duration")
        return cls(trials, seconds)

    def due(self, trials_since: int, seconds_since: float) -> bool:
        """Whether a line is due ``trials_since`` trials and ``seconds_since`` seconds after the last."""
        by_trials = self.trials is not None and trials_since >= self.trials
        return by_trials or (self.seconds is not None and seconds_since >= self.seconds)


#: A line every 30 s: quiet for a quick test, alive for a long one.
DEFAULT_PROGRESS_EVERY: Final = ProgressEvery()


def describe_budget(budget: Any) -> str:
    """``100 evaluations (default)``, ``60 evaluations``, ``90s``, or the abort condition."""
    from datetime import timedelta

    if budget is None:
        from pytest_autotune.tuning.abort import DEFAULT_ABORT, Evaluations

        default = DEFAULT_ABORT
        return f"{describe_budget(default.n if isinstance(default, Evaluations) else default)} (default)"
    if isinstance(budget, int):
        return f"{budget} evaluations"
    if isinstance(budget, timedelta):
        return format_seconds(budget.total_seconds())
    return repr(budget)


class TuningProgress:
    """Progress of one test's tuning; a no-op when it should not be shown (module docstring)."""

    def __init__(
        self,
        config: pytest.Config,
        nodeid: str,
        policy: Policy,
        every: ProgressEvery = DEFAULT_PROGRESS_EVERY,
    ) -> None:
        self._config = config
        self._nodeid = nodeid
        self._policy = policy
        self._every = every
        self._progress: Any = None
        self._task: Any = None
        self._plain = False
        self._started = self._last_time = time.monotonic()
        self._last_trials = 0
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

    def _line(self, text: str) -> None:
        """One plain line through pytest's terminal writer (on a line of its own)."""
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        with self._uncaptured():
            reporter.ensure_newline()
            reporter.write_line(f"autotune: {text}")

    def __enter__(self) -> TuningProgress:
        if not self._enabled:
            return self
        with self._uncaptured():
            tty = sys.stdout.isatty()
        if not tty:
            self._plain = True
            policy = self._policy
            self._line(
                f"tuning {self._nodeid}: budget {describe_budget(policy.budget)}, strategy {policy.strategy}"
            )
            return self
        self._start_live()
        return self

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with self._uncaptured():
            self._progress = Progress(
                TextColumn("[bold]autotune[/] {task.description}"),
                BarColumn(),
                TextColumn("{task.fields[trials]} trials"),
                TextColumn("best trial {task.fields[best]}"),
                TimeElapsedColumn(),
                console=Console(),
                transient=True,
                auto_refresh=False,
            )
            sys.stdout.write("\n")
            self._progress.start()
            self._task = self._progress.add_task(self._nodeid, total=1.0, trials=0, best="-")
            self._progress.refresh()

    def update(self, trials: int, fraction: float | None, label: str, best: float | None) -> None:
        """Show the state after a trial (``fraction`` of the budget used, when known; ``best``: the
        best trial's value so far, before any re-measurement)."""
        shown = format_value(best, self._policy.unit)
        if self._plain:
            now = time.monotonic()
            if self._every.due(trials - self._last_trials, now - self._last_time):
                self._last_trials, self._last_time = trials, now
                share = f" ({fraction:.0%} of the budget)" if fraction is not None else ""
                self._line(
                    f"{self._nodeid}: {trials} trials{share}, best trial {shown}, "
                    f"{format_seconds(now - self._started)} so far"
                )
            return
        if self._progress is None:
            return
        with self._uncaptured():
            self._progress.update(self._task, completed=fraction, trials=trials, best=shown)
            self._progress.refresh()

    def done(self, text: str) -> None:
        """The closing line of a plain log (the summary says the same on a terminal)."""
        if self._plain:
            self._line(f"{self._nodeid}: {text}")

    def __exit__(self, *exc: object) -> None:
        if self._progress is None:
            return
        with self._uncaptured():
            self._progress.stop()
        self._progress = None
