"""Recovery files: a tuning run's results that could not be written to ``autotune.json``.

Minutes or hours of tuning must not be lost to a store that cannot be written at the end (made
read-only during the run, a full disk, a lock file of another user, a damaged file). The writing
process then puts the results it could not save into a new file of the store's own format,
``autotune.json.recovered-<UTC time>.json`` next to the store, or, when that place cannot be
written either, in the pytest cache directory or the temporary directory. The session's summary
names it and the command that merges it once the store is fixed::

    python -m pytest_autotune merge autotune.json.recovered-20260101T120000Z.json --into autotune.json

:func:`merge` goes through the same validation and locked merge as a tuning run.
"""

from __future__ import annotations

import datetime
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from pytest_autotune.entry import StoreEntry
from pytest_autotune.store.changes import apply_changes, write_new
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


def merge(recovery: Path, into: Path) -> int:
    """Merge every entry of ``recovery`` into the store ``into``; returns how many were merged.

    The recovery file is read as a store (a damaged file or entry is a :class:`StoreError`, and
    nothing is merged); the store is updated under its lock like a tuning run's results. Entries
    of the recovery file replace those of the same test and device.
    """
    if not recovery.is_file():
        raise StoreError(f"{recovery}: no such file")
    source = Store.load(recovery)
    damaged = source.damaged()
    if damaged:
        raise StoreError(f"{recovery}: nothing was merged: {damaged[0]}")
    updates = {
        (device, nodeid): entry
        for device in source.devices()
        for nodeid, entry in source.entries(device).items()
    }
    if not updates:
        return 0
    info = {device: source.device_info(device) for device in source.devices()}
    apply_changes(into, updates=updates, device_info=info)
    return len(updates)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_autotune merge RECOVERY [--into STORE]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pytest_autotune", description="pytest-autotune tools")
    commands = parser.add_subparsers(dest="command", required=True)
    merging = commands.add_parser("merge", help="merge a recovery file into autotune.json")
    merging.add_argument("recovery", type=Path, help="the recovery file a run named")
    merging.add_argument(
        "--into", type=Path, help="the store to merge into (default: the one the file's name says)"
    )
    args = parser.parse_args(argv)
    into: Path = args.into or default_target(args.recovery)
    try:
        count = merge(args.recovery, into)
    except StoreError as exc:
        print(f"pytest-autotune: {exc}", file=sys.stderr)
        return 1
    print(f"merged {count} entr{'y' if count == 1 else 'ies'} from {args.recovery} into {into}")
    print(f"you may delete {args.recovery} now")
    return 0
