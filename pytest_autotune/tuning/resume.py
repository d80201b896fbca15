"""Resuming from a journal: which recorded trials a tuner replays, and the configuration of each.

A tuner built on an existing journal replays it (the loop, in :mod:`pytest_autotune.tuning.tuner`,
asks the strategy again and tells it each recorded outcome). Before it can, three questions about
the journal must be answered, and they are the journal's business, not the loop's:

* does it belong to this job? A journal of a different job (space hash, strategy, seed, options or
  direction) is a :class:`~pytest_autotune.tuning.journal.JournalMismatchError` naming the file, or,
  when the caller asked for a restart, is set aside as ``<name>.<n>.old`` (:func:`journal_of_job`);
* what became of trials journaled as started that never finished? Their process died with them
  (a crash in the tuner's own process), so they are recorded as ``runtime`` failures with
  :data:`UNFINISHED_DETAIL` instead of being run again (:func:`unfinished_as_failures`);
* which point of the space does a recorded configuration stand for? JSON turned tuples into lists,
  and a configuration outside the space means the journal is not this job's
  (:func:`decode_point`).
"""

from __future__ import annotations

import os

from pytest_autotune.outcome import Outcome
from pytest_autotune.space.base import Points, Space
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.tuning.journal import (
    JournalContents,
    JournalEntry,
    JournalError,
    JournalHeader,
    JournalMismatchError,
    set_aside,
)

__all__ = ["UNFINISHED_DETAIL", "decode_point", "journal_of_job", "unfinished_as_failures"]

#: Detail of a trial journaled as started that never finished (see :meth:`Tuner.start`).
UNFINISHED_DETAIL = (
    "the process running this trial died before it finished (a crash, or a kill); "
    "recorded as a failure on resume and not run again"
)


def journal_of_job(
    path: str | os.PathLike[str],
    header: JournalHeader,
    contents: JournalContents | None,
    on_mismatch: str,
) -> JournalContents | None:
    """``contents`` when the journal belongs to the job ``header`` describes (or has no header).

    A journal of another job raises :class:`JournalMismatchError` (``on_mismatch="error"``) or is
    set aside, and None is returned: the run starts afresh.
    """
    if contents is not None and contents.header is not None:
        differences = header.differences(contents.header)
        if differences:
            if on_mismatch == "error":
                raise JournalMismatchError(
                    path,
                    "journal of a different tuning job (" + "; ".join(differences) + "); "
                    "delete it or resume with the same settings",
                )
            set_aside(path)
            return None
    return contents


def unfinished_as_failures(contents: JournalContents | None) -> list[JournalEntry]:
    """The trials journaled as started that never finished, as ``runtime`` failures, in trial order."""
    return [
        JournalEntry(start.number, start.config, Outcome.failed("runtime", UNFINISHED_DETAIL), 0.0, 0.0)
        for start in sorted(contents.unfinished if contents else (), key=lambda s: s.number)
    ]


def decode_point(path: str | os.PathLike[str], space: Space, entry: JournalEntry) -> Points:
    """The point of ``space`` a journal entry records; raises :class:`JournalError` if it is not one."""
    config = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.config.items()}
    if set(config) != set(space.names):
        raise JournalError(path, f"trial {entry.number}: parameters {sorted(config)} do not match the space")
    try:
        return space.to_points([config])
    except (SpaceError, KeyError, TypeError, ValueError) as exc:
        raise JournalError(path, f"trial {entry.number}: {config!r} is not in the space ({exc})") from exc
