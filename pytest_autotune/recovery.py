"""Recovery files: a tuning run's results that could not be written to ``autotune.json``.

Minutes or hours of tuning must not be lost to a store that cannot be written at the end (made
read-only during the run, a full disk, a lock file of another user, a damaged file). The writing
process then puts the results it could not save into a new file of the store's own format,
``autotune.json.recovered-<UTC time>.json`` next to the store, or, when that place cannot be
written either, in the pytest cache directory or the temporary directory. The session's summary
names it and the command that merges it once the store is fixed::

    python -m pytest_autotune merge autotune.json.recovered-20260101T120000Z.json --into autotune.json

:func:`merge` goes through the same validation and locked merge as a tuning run, and keeps the newer
of two entries of a test (:func:`pytest_autotune.store.changes.merge_entries`).
"""

from __future__ import annotations

import datetime
import os
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from pytest_autotune.entry import StoreEntry, utc_moment
from pytest_autotune.input_file import not_regular_reason
from pytest_autotune.store.changes import Decision, merge_entries, write_new
from pytest_autotune.store.document import StoreError
from pytest_autotune.store.reading import Store

__all__ = ["merge", "merge_command", "recovery_name", "write_recovery"]

_SUFFIX: Final = re.compile(r"\.recovered-\d{8}T\d{6}Z(-\d+)?\.json$")


def recovery_name(store: Path, now: datetime.datetime | None = None) -> str:
    """``autotune.json.recovered-20260101T120000Z.json``."""
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{store.name}.recovered-{stamp}.json"


def write_recovery(
    store: Path,
    entries: Mapping[tuple[str, str], StoreEntry],
    device_info: Mapping[str, Mapping[str, Any]] | None,
    fallbacks: Sequence[Path] = (),
) -> Path:
    """Write ``entries`` to a new recovery file and return its path (first place that works).

    Places tried: the store's directory, then ``fallbacks`` (the pytest cache, the temporary
    directory). Raises :class:`StoreError` naming every place when none could be written.
    """
    name = recovery_name(store)
    failures = []
    for directory in (store.parent, *fallbacks):
        for attempt in range(100):
            candidate = directory / (name if not attempt else f"{name[: -len('.json')]}-{attempt}.json")
            try:
                directory.mkdir(parents=True, exist_ok=True)
                write_new(candidate, entries, device_info)
            except FileExistsError:
                continue
            except OSError as exc:
                failures.append(f"{directory} ({type(exc).__name__}: {exc})")
                break
            return candidate
    raise StoreError("no recovery file could be written: " + "; ".join(failures))


def merge_command(recovery: Path, store: Path) -> str:
    """The command that merges ``recovery`` into ``store``."""
    return f"python -m pytest_autotune merge {shlex.quote(str(recovery))} --into {shlex.quote(str(store))}"


def default_target(recovery: Path) -> Path:
    """The store a recovery file belongs to by its name (``X.recovered-...json`` -> ``X``), else
    ``autotune.json`` in the current directory."""
    match = _SUFFIX.search(recovery.name)
    if match and match.start() > 0:
        return recovery.with_name(recovery.name[: match.start()])
    return Path("autotune.json")


def _name_time(recovery: Path) -> str | None:
    """The time a recovery file's name holds (``...recovered-20260101T120000Z.json``), as
    ``measured_at`` is written, or None (no such name, or a date that does not exist:
    :func:`name_time_problem` says so)."""
    match = _SUFFIX.search(recovery.name)
    if match is None:
        return None
    try:
        stamp = datetime.datetime.strptime(match.group(0)[len(".recovered-") :][:16], "%Y%m%dT%H%M%SZ")
    except ValueError:  # month 13, second 99, day 0: the pattern accepts any digits
        return None
    return utc_moment(stamp)


def name_time_problem(recovery: Path) -> str | None:
    """A note when ``recovery``'s name looks dated but its date does not exist (it is then ignored:
    only the entries' own times count), else None."""
    match = _SUFFIX.search(recovery.name)
    if match is None or _name_time(recovery) is not None:
        return None
    stamp = match.group(0)[len(".recovered-") :][:16]
    return (
        f"the date in the name {recovery.name} ({stamp}) is no valid time: ignored; "
        "only the times the entries hold decide which entry is newer"
    )


def _check_places(recovery: Path, into: Path) -> None:
    """Refuse a merge that cannot be meant: a missing file, a store into itself, a missing folder,
    a target that is no regular file (``/dev/full`` would be read without end)."""
    if not recovery.exists():
        raise StoreError(f"{recovery}: no such file")
    if into.exists() and os.path.samefile(recovery, into):
        raise StoreError(
            f"{recovery} and {into} are the same file: nothing to merge; merge takes a recovery file "
            "(or another store) and --into the store it goes into"
        )
    if not into.parent.is_dir():
        raise StoreError(
            f"{into}: the folder {into.parent} does not exist; create it, or give --into an existing store"
        )
    target = into.resolve()  # a symbolic link, dangling or not, is written where it points
    if target != into.absolute() and not target.parent.is_dir():
        raise StoreError(
            f"{into}: a symbolic link to {target}, whose folder {target.parent} does not exist; "
            "create it, or give --into an existing store"
        )
    try:
        reason = not_regular_reason(into)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StoreError(f"{into}: cannot be read ({exc})") from exc
    if reason is not None:
        raise StoreError(f"{into} {reason}; --into must name an autotune.json file")


def merge(recovery: Path, into: Path, *, overwrite: bool = False) -> list[Decision]:
    """Merge the entries of ``recovery`` into the store ``into``; returns what happened to each.

    The recovery file is read as a store (a damaged file or entry is a :class:`StoreError`, and
    nothing is merged); the store is updated under its lock like a tuning run's results, each
    entry checked as a tuning run's write is. Of two entries of the same test and device the newer
    is kept (:func:`~pytest_autotune.store.changes.merge_entries`); ``overwrite`` takes the file's.
    """
    _check_places(recovery, into)
    source = Store.load(recovery, advice=False)
    damaged = source.damaged()
    if damaged:
        raise StoreError(f"{recovery}: nothing was merged: {damaged[0]}")
    updates = {
        (device, nodeid): entry
        for device in source.devices()
        for nodeid, entry in source.entries(device).items()
    }
    if not updates:
        return []
    info = {device: source.device_info(device) for device in source.devices()}
    try:
        return merge_entries(into, updates, info, overwrite=overwrite, default_time=_name_time(recovery))
    except StoreError as exc:
        raise StoreError(f"{exc}; nothing was merged") from exc


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_autotune merge RECOVERY [--into STORE] [--overwrite]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pytest_autotune", description="pytest-autotune tools")
    commands = parser.add_subparsers(dest="command", required=True)
    merging = commands.add_parser("merge", help="merge a recovery file into autotune.json")
    merging.add_argument("recovery", type=Path, help="the recovery file a run named")
    merging.add_argument(
        "--into", type=Path, help="the store to merge into (default: the one the file's name says)"
    )
    merging.add_argument(
        "--overwrite",
        action="store_true",
        help="take the file's entries even where the store's are newer (default: keep the newer)",
    )
    args = parser.parse_args(argv)
    into: Path = args.into or default_target(args.recovery)
    note = name_time_problem(args.recovery)
    if note is not None:
        print(f"pytest-autotune: note: {note}", file=sys.stderr)
    try:
        decisions = merge(args.recovery, into, overwrite=args.overwrite)
    except StoreError as exc:
        print(f"pytest-autotune: {exc}", file=sys.stderr)
        return 1
    count = sum(1 for d in decisions if d.action in ("added", "replaced"))
    print(f"merged {count} entr{'y' if count == 1 else 'ies'} from {args.recovery} into {into}")
    for decision in decisions:
        print(decision.line())
    kept = sum(1 for d in decisions if d.action == "kept")
    if kept:
        print(
            f"{kept} entr{'y' if kept == 1 else 'ies'} of {args.recovery} were not merged (see above); "
            "run again with --overwrite to take them anyway"
        )
    else:
        print(f"you may delete {args.recovery} now")
    return 0
