"""The entries of ``autotune.json`` as loaded at the start of a session: the read-only :class:`Store`.

This module turns the file's JSON into the typed entry model
(:class:`pytest_autotune.entry.StoreEntry`); :mod:`pytest_autotune.store.changes` turns entries back
into JSON, checked the same way. Every entry is checked when it is loaded, and a damaged *entry* (a
field of the wrong type, a non-finite or non-positive time, an unknown key) is kept as such: looking
it up raises :class:`~pytest_autotune.entry.DamagedEntryError` naming the file, device, test id and
field, so it fails only its own test and the other entries stay usable.
A session never writes this view back: writers merge their changes into the file as it is then
(:mod:`pytest_autotune.store.changes`), so a damaged entry stays exactly as it was read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_autotune.entry import DamagedEntryError, StoreEntry
from pytest_autotune.store.document import Key, entry_where, parse_document, read_document

__all__ = ["Store"]


def _parse_entries(path: Path, data: Mapping[str, Any]) -> dict[Key, StoreEntry | DamagedEntryError]:
    entries: dict[Key, StoreEntry | DamagedEntryError] = {}
    for device, slot in data.get("devices", {}).items():
        for nodeid, raw in slot.get("tests", {}).items():
            try:
                entries[device, nodeid] = StoreEntry.from_json(raw, where=entry_where(path, device, nodeid))
            except DamagedEntryError as exc:
                entries[device, nodeid] = exc
    return entries


@dataclass
class Store:
    """A read-only view of ``autotune.json`` as loaded at the start of the session.

    Entries are validated when loaded; a damaged one is kept as its error
    (:meth:`entry` raises it, :meth:`damaged` lists them).
    """

    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    _entries: dict[Key, StoreEntry | DamagedEntryError] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, path: Path, *, advice: bool = True) -> Store:
        """Read ``path`` (a missing file is an empty store); raises :class:`StoreError`.

        ``advice``: ``path`` is the store this run writes, and a damaged file is reported with how to
        repair it (:func:`~pytest_autotune.store.document.read_document`).
        """
        data = read_document(path, advice=advice)
        return cls(path, data, _parse_entries(path, data))

    @classmethod
    def parse(cls, where: Path, text: str | bytes) -> Store:
        """The store whose file holds ``text`` (e.g. as committed at a git ref); messages name
        ``where``. Raises :class:`StoreError`."""
        data = parse_document(where, text)
        return cls(where, data, _parse_entries(where, data))

    @property
    def exists(self) -> bool:
        """Whether the file existed when loaded."""
        return self.path.is_file()

    def devices(self) -> list[str]:
        """Device keys present in the file."""
        return sorted(self.data.get("devices", {}))

    def tests(self, device: str) -> list[str]:
        """Node ids with an entry (damaged or not) on ``device`` (empty when the device is absent)."""
        return sorted(nodeid for d, nodeid in self._entries if d == device)

    def entries(self, device: str) -> dict[str, StoreEntry]:
        """The valid entries of ``device`` by node id."""
        return {
            nodeid: entry
            for (d, nodeid), entry in self._entries.items()
            if d == device and isinstance(entry, StoreEntry)
        }

    def entry(self, device: str, nodeid: str) -> StoreEntry | None:
        """The entry of ``nodeid`` on ``device``, or None; raises :class:`DamagedEntryError`."""
        found = self._entries.get((device, nodeid))
        if isinstance(found, DamagedEntryError):
            raise found
        return found

    def damaged(self) -> list[DamagedEntryError]:
        """The damaged entries, each as the error that names it."""
        return [e for e in self._entries.values() if isinstance(e, DamagedEntryError)]

    def device_info(self, device: str) -> dict[str, Any]:
        """The ``info`` block of ``device`` (empty when absent)."""
        return dict(self.data.get("devices", {}).get(device, {}).get("info", {}))

    def count(self) -> int:
        """Number of entries over all devices (damaged ones included)."""
        return len(self._entries)
