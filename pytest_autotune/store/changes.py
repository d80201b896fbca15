"""Changing ``autotune.json``: merge new and removed entries into the file as it is now.

A session does not write the document it loaded: other runs may have written the file since, and
damaged entries must come back exactly as they were read (``NaN`` included). So a session hands
over only its *changes*, entries by (device, node id) to set or to drop, and :func:`apply_changes`
merges them into the file as it is under the lock (:func:`~pytest_autotune.store.writing.rewrite_locked`):
entries not changed keep their bytes, devices left without entries are dropped. Every entry is
checked as a read would check it before anything is written, so this package never writes an entry
it would refuse to read. :func:`write_new` writes the same merge into a new file (a recovery file,
:mod:`pytest_autotune.recovery`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_autotune.entry import DamagedEntryError, StoreEntry, UnreadHistory
from pytest_autotune.store.document import SCHEMA_VERSION, Key, StoreError, dumps, entry_where
from pytest_autotune.store.writing import rewrite_locked

__all__ = ["apply_changes", "merged_document", "validated", "write_new"]


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
