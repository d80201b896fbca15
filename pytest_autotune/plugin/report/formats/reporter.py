"""The interface every report format implements, what it is given, and what it gives back.

A report format is a :class:`Reporter`: a name, whether this run asked for it (usually from its
option), the stage it writes at, whether a failed write fails the run, and
``write(results, context)``, which returns a :class:`ReportOutcome`: what it wrote, or why it could
not. The plugin asks every plugin for its reporters through the hook ``pytest_autotune_reporters``
(:mod:`pytest_autotune.plugin.hookspec`): the built-in ones come from one list
(:mod:`pytest_autotune.plugin.report.formats.registry`), and a project adds its own in its
``conftest.py`` or plugin without editing this package. :func:`write_reports` runs them, keeps each
one's outcome apart (the terminal summary shows every path and error), and says whether the run
must fail.

Reporters run in the process that reports (the single process or the xdist controller), after the
store is written: ``session-finish`` reporters write files in ``pytest_sessionfinish``,
``terminal-summary`` reporters write their section where pytest's summary shows plugins' sections
(after the failures, before the short test summary).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_autotune.store.git_commit import commit_info

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.plugin.options import Settings
    from pytest_autotune.plugin.report.results import AutotuneResult
    from pytest_autotune.plugin.store_outcome import StoreOutcome

__all__ = ["ReportContext", "ReportOutcome", "Reporter", "Stage", "write_reports"]

#: When a reporter writes: at the end of the session (files), or in pytest's terminal summary.
Stage = Literal["session-finish", "terminal-summary"]


@dataclass(frozen=True)
class ReportOutcome:
    """What one reporter did: the file it wrote, or why it could not, and what the summary says.

    The terminal summary shows ``error`` (in red) when there is one, else ``message`` when there is
    one (the HTML report's ``report: PATH``); a reporter that wrote quietly returns neither.
    """

    written: Path | None = None
    error: str | None = None
    message: str | None = None


@dataclass(eq=False)
class ReportContext:
    """What reporters need besides the results: the run's settings and config, the store's outcome,
    the unused entries, the outcomes of the reporters that wrote before, and pytest's terminal
    reporter (None under ``-p no:terminal``)."""

    config: pytest.Config
    settings: Settings
    store: StoreOutcome
    unused: Mapping[str, list[str]] = field(default_factory=dict)
    #: Each reporter's outcome by name, in the order they wrote (filled by :func:`write_reports`).
    outcomes: MutableMapping[str, ReportOutcome] = field(default_factory=dict)
    terminal: pytest.TerminalReporter | None = None

    @property
    def rootpath(self) -> Path:
        """The run's rootdir."""
        return self.config.rootpath

    @cached_property
    def commit_info(self) -> dict[str, Any]:
        """The git commit of the rootdir (pytest-benchmark's ``commit_info``), read when first asked."""
        return commit_info(self.rootpath)

    @property
    def failed_reports(self) -> list[Any]:
        """The reports of failed and erroring tests, as pytest's terminal reporter counted them."""
        stats = getattr(self.terminal, "stats", {})
        return [*stats.get("failed", []), *stats.get("error", [])]


class Reporter(abc.ABC):
    """One report format. Subclass it, set :attr:`name`, and implement :meth:`enabled` and :meth:`write`.

    ``write`` should catch the ``OSError`` of its own file and return it as the outcome's ``error``
    with a message naming the option and path; an ``OSError`` it lets through becomes
    ``"NAME: cannot write (ERROR)"``. When :attr:`fails_run` is true (the default), a failed write
    fails a run that had passed (``TESTS_FAILED``): what was asked for was not written.
    """

    #: Unique among the reporters of a run: the key of its outcome.
    name: str = ""
    #: When it writes (:data:`Stage`).
    stage: Stage = "session-finish"
    #: Whether a failed write fails the run.
    fails_run: bool = True

    @abc.abstractmethod
    def enabled(self, context: ReportContext) -> bool:
        """Whether this run asked for this format (usually: its option was given)."""

    @abc.abstractmethod
    def write(self, results: Sequence[AutotuneResult], context: ReportContext) -> ReportOutcome:
        """Write the format from this run's results; never raise for a file that cannot be written."""


def write_reports(
    reporters: Iterable[Reporter], stage: Stage, results: Sequence[AutotuneResult], context: ReportContext
) -> bool:
    """Write every enabled reporter of ``stage``, in order, keeping each outcome in ``context.outcomes``;
    True when one of them that fails the run could not write.

    A reporter that raises (an ``OSError``, or any other exception: a bug in a project's format) gets
    an error outcome naming it, after the store is written, instead of an internal error that would
    hide the other formats; a second reporter with a name already used is not written and fails the
    run (each outcome is kept by name).
    """
    failed = False
    seen: dict[str, Reporter] = {}
    for reporter in reporters:
        name = reporter.name or type(reporter).__qualname__
        if name in seen and seen[name] is not reporter:
            # one outcome per name: a second reporter of that name would hide the first one's
            context.outcomes[f"{name} ({type(reporter).__qualname__})"] = ReportOutcome(
                error=f"{name}: two report formats have this name ({type(seen[name]).__qualname__} and "
                f"{type(reporter).__qualname__}); the second was not written"
            )
            failed = True
            continue
        seen[name] = reporter
        try:
            if reporter.stage != stage or not reporter.enabled(context):
                continue
            outcome = reporter.write(results, context)
        except OSError as exc:
            outcome = ReportOutcome(error=f"{name}: cannot write ({exc})")
        except Exception as exc:  # a format's own bug: the store is written; say so and go on
            outcome = ReportOutcome(error=f"{name}: failed ({type(exc).__name__}: {exc})")
        context.outcomes[name] = outcome
        failed = failed or (outcome.error is not None and reporter.fails_run)
    return failed
