"""Merging another store file (a recovery file) into ``autotune.json``: of two entries, the newer wins.

A recovery file can be merged long after it was written: the user may have re-tuned the same test
with changed code since, and an older entry merged over the newer one would judge every later run
against a baseline of code that no longer exists. So each entry carries the time it was measured
(``measured_at``, stamped by the writing run), and :func:`merge_entries` decides per entry, under the
store's lock (:func:`~pytest_autotune.store.writing.rewrite_locked`):

* **added**: the store has no entry of that test on that device;
* **unchanged**: the store's entry is the same;
* **replaced**: the file's entry is newer than the store's, or the store's entry is damaged, or
  ``overwrite`` was asked for;
* **kept**: the store's entry is newer, as new, or which one is newer cannot be told.

An entry without a time (written before the field existed) is dated, for the file's entries, by
``default_time`` (a recovery file's name holds the time it was written) and, for the store's, only
bounded by the time the store file was last written: a file's entry measured after that is newer.
Everything merged is checked as a tuning run's write is (:func:`~pytest_autotune.store.changes.validated`).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_autotune.entry import DamagedEntryError, StoreEntry, utc_moment
from pytest_autotune.store.changes import merged_document, validated
from pytest_autotune.store.document import Key, entry_where
from pytest_autotune.store.writing import rewrite_locked

__all__ = ["Decision", "merge_entries"]

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


def _decide(old_time: str | None, new_time: str | None, written: str | None) -> tuple[bool, str]:
    """(replace?, why) from the store's entry's time, the file's, and the store file's last write."""
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
