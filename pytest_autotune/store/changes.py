"""Changing ``autotune.json``: merge new and removed entries into the file as it is now.

A session does not write the document it loaded: other runs may have written the file since, and
damaged entries must come back exactly as they were read (``NaN`` included). So a session hands
over only its *changes*, entries by (device, node id) to set or to drop, and :func:`apply_changes`
merges them into the file as it is under the lock (:func:`~pytest_autotune.store.writing.rewrite_locked`):
entries not changed keep their bytes, devices left without entries are dropped. Every entry is
checked as a read would check it before anything is written, so this package never writes an entry
it would refuse to read. :func:`write_new` writes the same merge into a new file (a recovery file,
:mod:`pytest_autotune.recovery`).

:func:`merge_entries` merges another store file's entries (a recovery file's, ``python -m
pytest_autotune merge``), which may be older than the store's: the user may have re-tuned the test
with changed code since, and an older entry merged over the newer one would judge every later run
against a baseline of code that no longer exists. Each entry carries the time it was measured
(``measured_at``, stamped by the writing run), and the merge decides per entry, under the lock:
**added** (the store has none), **unchanged** (the same), **replaced** (the file's is newer, the
store's is damaged, or ``overwrite``), **kept** (the store's is newer or as new, or which one is
cannot be told). An entry without a time (written before the field existed) is dated, for the
file's entries, by ``default_time`` (a recovery file's name holds the time it was written) and, for
the store's, only bounded by the time the store file was last written. A time more than a day ahead
of this machine's clock, on either side, is suspect: the store's entry is kept and only
``--overwrite`` replaces it.
"""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from pytest_autotune.entry import DamagedEntryError, StoreEntry, UnreadHistory, utc_moment
from pytest_autotune.store.document import SCHEMA_VERSION, Key, StoreError, dumps, entry_where
from pytest_autotune.store.writing import rewrite_locked

__all__ = ["Decision", "apply_changes", "merge_entries", "merged_document", "validated", "write_new"]


def validated(updates: Mapping[Key, StoreEntry], path: Path) -> dict[Key, dict[str, Any]]:
    """The JSON of each update, checked as a read would check it: no bad value, no damaged history
    (one a newer version wrote is kept as it is) and no NaN or infinity anywhere, so no writer, a
    tuning run's or a merge's, writes what a tuning run would not."""
    out: dict[Key, dict[str, Any]] = {}
    for (device, nodeid), entry in updates.items():
        where = entry_where(path, device, nodeid)
        data = entry.to_json()
        try:
            StoreEntry.from_json(data, where=where)
            if isinstance(entry.history, UnreadHistory) and not entry.history.newer:
                raise DamagedEntryError(where, "history", f"cannot be used: {entry.history.why}")
            json.dumps(data, allow_nan=False)
        except DamagedEntryError as exc:
            raise StoreError(f"refusing to write a damaged entry: {exc}") from exc
        except ValueError:
            why = "holds a number that is not finite (NaN or infinity)"
            raise StoreError(f"refusing to write a damaged entry: {where}: {why}") from None
        out[device, nodeid] = data
    return out


def apply_changes(
    path: Path,
    *,
    updates: Mapping[Key, StoreEntry],
    removals: Iterable[Key] = (),
    device_info: Mapping[str, Mapping[str, Any]] | None = None,
) -> bool:
    """Merge entry ``updates`` and ``removals`` (by (device, node id)) into ``path``.

    Under a file lock: re-read the file (raising :class:`StoreError` and writing nothing when it
    is unreadable), apply the changes, and replace it atomically when its text changed. Devices
    left without entries are dropped; damaged entries not replaced are kept as they were. Returns
    whether the file was written.
    """
    removals = list(removals)
    if not updates and not removals:
        return False
    changes = validated(updates, path)
    return rewrite_locked(path, lambda data: merged_document(data, changes, removals, device_info))


def write_new(
    path: Path, updates: Mapping[Key, StoreEntry], device_info: Mapping[str, Mapping[str, Any]] | None
) -> None:
    """Write a new store file at ``path`` holding only ``updates`` (no lock: the name must be unique).

    Used for recovery files (:mod:`pytest_autotune.recovery`); refuses to replace an existing file.
    """
    data = merged_document(
        {"schema_version": SCHEMA_VERSION, "devices": {}}, validated(updates, path), [], device_info
    )
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(dumps(data))
        handle.flush()
        os.fsync(handle.fileno())


def merged_document(
    data: dict[str, Any],
    updates: Mapping[Key, dict[str, Any]],
    removals: list[Key],
    device_info: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Any]:
    """``data`` (changed in place) with the updates set, the removals dropped, empty devices gone
    (the updates' JSON checked by :func:`validated`)."""
    devices: dict[str, Any] = data.setdefault("devices", {})
    for (device, nodeid), entry in updates.items():
        slot = devices.setdefault(device, {"info": {}, "tests": {}})
        slot.setdefault("tests", {})[nodeid] = entry
        if device_info and device in device_info:
            slot["info"] = dict(device_info[device])
    for device, nodeid in removals:
        devices.get(device, {}).get("tests", {}).pop(nodeid, None)
    for device in [d for d, slot in devices.items() if not slot.get("tests")]:
        del devices[device]
    data["schema_version"] = SCHEMA_VERSION
    return data


Action = Literal["added", "unchanged", "replaced", "kept"]


@dataclass(frozen=True)
class Decision:
    """What happened to the file's entry ``key`` (device, node id): ``action``, and ``why`` (empty
    for ``added`` and ``unchanged``)."""

    key: Key
    action: Action
    why: str = ""

    def line(self) -> str:
        """``"  replaced  t.py::k on host:x: why"``."""
        device, nodeid = self.key
        return f"  {self.action:<9} {nodeid} on {device}" + (f": {self.why}" if self.why else "")


def _store_written(path: Path) -> str | None:
    """When ``path`` was last written (``measured_at``'s form), None when it does not exist."""
    try:
        seconds = path.stat().st_mtime
    except FileNotFoundError:
        return None
    return utc_moment(datetime.datetime.fromtimestamp(seconds, datetime.UTC))


#: How far ahead of this machine's clock an entry's time may be (another machine's clock skew)
#: before it is suspect: a time beyond it would otherwise win every merge, or block every one.
CLOCK_SKEW: Final = datetime.timedelta(days=1)


def _future(moment: str | None) -> bool:
    """Whether ``moment`` (``measured_at``'s form) lies beyond now plus :data:`CLOCK_SKEW`."""
    return moment is not None and moment > utc_moment(datetime.datetime.now(datetime.UTC) + CLOCK_SKEW)


def _decide(old_time: str | None, new_time: str | None, written: str | None) -> tuple[bool, str]:
    """(replace?, why) from the store's entry's time, the file's, and the store file's last write.

    A time in the future (beyond :data:`CLOCK_SKEW`) is suspect, the file's or the store's: the
    store's entry is kept, and only ``--overwrite`` decides."""
    for whose, moment in (("file's", new_time), ("store's", old_time)):
        if _future(moment):
            return False, (
                f"the {whose} entry is dated {moment}, in the future (a wrong clock or an edited "
                "file?): suspect, so which entry is newer cannot be told"
            )
    if old_time is not None and new_time is not None:
        if new_time > old_time:
            return True, f"the file's entry (measured {new_time}) is newer than the store's ({old_time})"
        relation = "as new as" if new_time == old_time else "newer than"
        return False, f"the store's entry (measured {old_time}) is {relation} the file's ({new_time})"
    if old_time is None and new_time is not None and written is not None and new_time > written:
        why = f"the file's entry (measured {new_time}) is newer than the store file (last written {written})"
        return True, why
    undated = "the file's entry has" if new_time is None else "the store's entry has"
    return False, f"cannot tell which is newer ({undated} no time)"


def merge_entries(
    into: Path,
    incoming: Mapping[Key, StoreEntry],
    device_info: Mapping[str, Mapping[str, Any]],
    *,
    overwrite: bool = False,
    default_time: str | None = None,
) -> list[Decision]:
    """Merge ``incoming`` entries into the store ``into`` (module docstring); returns one
    :class:`Decision` per entry. Raises :class:`~pytest_autotune.store.document.StoreError` (nothing
    written) when an entry is damaged or the store cannot be read or written."""
    changes = validated(incoming, into)
    decisions: list[Decision] = []

    def change(data: dict[str, Any]) -> dict[str, Any]:
        written = _store_written(into)
        chosen: dict[Key, dict[str, Any]] = {}
        for key, entry in incoming.items():
            device, nodeid = key
            action: Action
            old = data.get("devices", {}).get(device, {}).get("tests", {}).get(nodeid)
            if old is None:
                action, why = "added", ""
            elif old == changes[key]:
                action, why = "unchanged", ""
            elif overwrite:
                action, why = "replaced", "--overwrite"
            else:
                try:
                    old_time = StoreEntry.from_json(old, where=entry_where(into, device, nodeid)).measured_at
                except DamagedEntryError as exc:
                    action, why = "replaced", f"the store's entry was damaged ({exc.field} {exc.why})"
                else:
                    newer, why = _decide(old_time, entry.measured_at or default_time, written)
                    action = "replaced" if newer else "kept"
                    if not newer:
                        why += "; --overwrite takes the file's"
            decisions.append(Decision(key, action, why))
            if action in ("added", "replaced"):
                chosen[key] = changes[key]
        info = {device: device_info[device] for device, _ in chosen if device in device_info}
        return merged_document(data, chosen, [], info)

    rewrite_locked(into, change)
    return decisions
