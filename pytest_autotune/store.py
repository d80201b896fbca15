"""``autotune.json``: the committed tuned configurations and their baselines (DESIGN section 3).

Layout (schema version 1)::

    {"schema_version": 1,
     "devices": {"<device key>": {"info": {...},
                                  "tests": {"<node id>": {"config": {...}, "space_hash": "...",
                                                          "baseline": {...}, "tuning": {...},
                                                          "commit_info": {...}}}}}}

This module is the only place that converts between the file's JSON and the typed entry model
(:class:`pytest_autotune.entry.StoreEntry`). Two kinds of damage are told apart:

* a damaged *file* (not UTF-8 JSON, a byte order mark, duplicate keys, the wrong structure, a newer
  schema) is a :class:`StoreError` naming the file; the file is never overwritten;
* a damaged *entry* (a field of the wrong type, a non-finite or non-positive time, an unknown key)
  is loaded as such: looking it up raises :class:`~pytest_autotune.entry.DamagedEntryError` naming the
  file, device, test id and field. Writing keeps it exactly as it was read (``NaN`` included:
  values read are written back as they came, values written are validated first), until a tuning
  run of that test replaces it.

The file is written canonically (sorted keys, two-space indent, floats by ``repr``), so re-writing
an unchanged entry yields the same bytes and diffs stay small. Writes happen in one process only
(the xdist controller or the single process): :func:`apply_changes` takes a file lock, re-reads the
file, merges the changes, and replaces the file atomically (temporary file in the same directory,
then ``os.replace``). A symbolic link is written through to its target, and the file keeps its
mode (and owner, where allowed); a new file gets ``0666 & ~umask``. A read-only file (no write
permission bit), a location that cannot be written and a lock file that cannot be opened are
errors; :func:`check_writable` finds them before tuning starts. Temporary files of writers killed
before their rename are removed by the next writer (under the lock).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pytest_autotune.entry import DamagedEntryError, StoreEntry

__all__ = [
    "SCHEMA_VERSION",
    "DamagedEntryError",
    "Store",
    "StoreError",
    "apply_changes",
    "check_writable",
    "commit_info",
    "config_from_json",
    "dumps",
    "entry_where",
    "lock_path",
    "write_new",
]

SCHEMA_VERSION: Final = 1
#: Seconds to wait for another process's write of the same file before giving up.
LOCK_SECONDS: Final = 60.0

Key = tuple[str, str]


class StoreError(Exception):
    """``autotune.json`` cannot be read or written; the message names the file."""


class _DuplicateKeyError(ValueError):
    pass


def dumps(data: Mapping[str, Any]) -> str:
    """Canonical text of a store document.

    ``NaN`` and ``Infinity`` are allowed here only so that a damaged entry read from the file is
    written back as it was: every entry this package writes went through
    :meth:`StoreEntry.from_json`, which refuses non-finite numbers.
    """
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=True) + "\n"


def config_from_json(config: Mapping[str, Any]) -> dict[str, Any]:
    """A configuration read from JSON: lists (permutations) become tuples again."""
    return {name: tuple(value) if isinstance(value, list) else value for name, value in config.items()}


def entry_where(path: Path, device: str, nodeid: str) -> str:
    """How errors name an entry: ``"autotune.json: entry 't.py::k' of device 'host:x'"``."""
    return f"{path}: entry {nodeid!r} of device {device!r}"


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _DuplicateKeyError(key)
        data[key] = value
    return data


def _loads(path: Path, text: str) -> Any:
    def bad(why: str) -> StoreError:
        return StoreError(
            f"{path}: {why}; fix or delete the file (it was left untouched), then re-run `pytest --autotune`"
        )

    if text.startswith("\ufeff"):
        raise bad("starts with a byte order mark (save it as UTF-8 without BOM)")
    if not text.strip():
        raise bad("is empty (not valid JSON)")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except _DuplicateKeyError as exc:
        raise bad(f"the key {exc.args[0]!r} appears twice in one object (not valid JSON)") from None
    except json.JSONDecodeError as exc:
        raise bad(f"not valid JSON (corrupt or truncated: {exc})") from exc


def _validate(path: Path, data: Any) -> dict[str, Any]:
    """Check the file's structure (entries are checked one by one: :class:`Store`)."""

    def bad(why: str) -> StoreError:
        return StoreError(
            f"{path}: {why}; fix or delete the file (it was left untouched), "
            "then re-run `pytest --autotune` to re-create entries"
        )

    if not isinstance(data, dict):
        raise bad("not an autotune cache (expected a JSON object at the top level)")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise bad(f"no integer 'schema_version' (got {version!r})")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: written by a newer pytest-autotune (schema version {version}, this version reads "
            f"up to {SCHEMA_VERSION}); upgrade pytest-autotune. The file was left untouched."
        )
    if version < 1:
        raise bad(f"unknown schema version {version}")
    devices = data.get("devices")
    if not isinstance(devices, dict):
        raise bad("'devices' must be an object")
    for key, device in devices.items():
        if not isinstance(device, dict) or not isinstance(device.get("tests", {}), dict):
            raise bad(f"device {key!r} must be an object with a 'tests' object")
        if not isinstance(device.get("info", {}), dict):
            raise bad(f"device {key!r}: 'info' must be an object")
    return data


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"schema_version": SCHEMA_VERSION, "devices": {}}
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: cannot be read (not UTF-8 text: {exc}); it was left untouched") from exc
    except OSError as exc:
        raise StoreError(f"{path}: cannot be read ({exc}); it was left untouched") from exc
    return _validate(path, _loads(path, text))


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
    def load(cls, path: Path) -> Store:
        """Read ``path`` (a missing file is an empty store); raises :class:`StoreError`."""
        data = _read(path)
        return cls(path, data, _parse_entries(path, data))

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


def lock_path(path: Path) -> Path:
    """The lock file serialising writers of ``path`` (shared by every name of the file)."""
    # The lock lives outside the repository so no stray file is committed next to autotune.json.
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"pytest-autotune-{digest}.lock"


def _check_lock(path: Path) -> None:
    lock = lock_path(path)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise StoreError(
            f"{path}: its lock file {lock} cannot be opened ({type(exc).__name__}: {exc}); "
            "remove it if no pytest-autotune run is writing this store (it may belong to another "
            "user), or set TMPDIR to a directory of yours"
        ) from exc
    os.close(fd)


def check_writable(path: Path) -> None:
    """Raise :class:`StoreError` now if ``path`` could not be replaced later.

    Called before tuning starts, so an hour of tuning is not lost to a read-only file, a place that
    cannot be written, or a lock file that cannot be opened. The directory is probed by creating
    and removing a temporary file (permission bits do not stop root, but a read-only file system or
    an immutable directory do).
    """
    if path.exists() and _read_only(path):
        raise StoreError(_read_only_message(path))
    target = _target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise StoreError(
            f"{path}: cannot be written ({type(exc).__name__}: {exc}); choose another place with "
            "--autotune-cache=PATH"
        ) from exc
    _check_lock(path)


def _read_only_message(path: Path) -> str:
    return (
        f"{path}: is read-only; it was left as it was and this run's results would not be saved "
        "(make it writable, or write elsewhere with --autotune-cache=PATH)"
    )


def _validated(updates: Mapping[Key, StoreEntry], path: Path) -> dict[Key, dict[str, Any]]:
    """The JSON of each update, checked as a read would check it (no NaN or bad value is written)."""
    out: dict[Key, dict[str, Any]] = {}
    for (device, nodeid), entry in updates.items():
        data = entry.to_json()
        try:
            StoreEntry.from_json(data, where=entry_where(path, device, nodeid))
        except DamagedEntryError as exc:
            raise StoreError(f"refusing to write a damaged entry: {exc}") from exc
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
    from filelock import FileLock

    removals = list(removals)
    if not updates and not removals:
        return False
    changes = _validated(updates, path)
    try:
        with FileLock(str(lock_path(path)), timeout=LOCK_SECONDS):
            return _merge_and_write(path, changes, removals, device_info)
    except OSError as exc:  # read-only directory, full disk, lock held by a stuck process, ...
        raise StoreError(
            f"{path}: cannot be written ({type(exc).__name__}: {exc}); the file was left as it was"
        ) from exc


def write_new(
    path: Path, updates: Mapping[Key, StoreEntry], device_info: Mapping[str, Mapping[str, Any]] | None
) -> None:
    """Write a new store file at ``path`` holding only ``updates`` (no lock: the name must be unique).

    Used for recovery files (:mod:`pytest_autotune.recovery`); refuses to replace an existing file.
    """
    data = _merged(
        {"schema_version": SCHEMA_VERSION, "devices": {}}, _validated(updates, path), [], device_info
    )
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(dumps(data))
        handle.flush()
        os.fsync(handle.fileno())


def _merged(
    data: dict[str, Any],
    updates: Mapping[Key, dict[str, Any]],
    removals: list[Key],
    device_info: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Any]:
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


def _merge_and_write(
    path: Path,
    updates: Mapping[Key, dict[str, Any]],
    removals: list[Key],
    device_info: Mapping[str, Mapping[str, Any]] | None,
) -> bool:
    """The locked part of :func:`apply_changes`."""
    _remove_abandoned_temporaries(path)
    data = _read(path)
    before = dumps(data) if path.exists() else None
    text = dumps(_merged(data, updates, removals, device_info))
    if text == before:
        return False
    if before is not None and _read_only(path):
        raise StoreError(_read_only_message(path))
    _atomic_write(path, text)
    return True


def _read_only(path: Path) -> bool:
    """Whether the file is meant to stay as it is: no write permission bit (even for root) or no access."""
    return not path.stat().st_mode & 0o222 or not os.access(path, os.W_OK)


def _target(path: Path) -> Path:
    """The file that is written: the target of a symbolic link (followed all the way), else ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _remove_abandoned_temporaries(path: Path) -> None:
    """Delete temporary files of writers that died before renaming them (called under the lock)."""
    target = _target(path)
    for leftover in target.parent.glob(f".{target.name}.*.tmp"):
        leftover.unlink(missing_ok=True)


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` (through a symbolic link) by ``text``, keeping the file's mode and owner."""
    target = _target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        old: os.stat_result | None = target.stat()
    except FileNotFoundError:
        old = None
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            if old is not None and hasattr(os, "fchown"):
                with contextlib.suppress(OSError):  # not allowed to give the file away: it stays ours
                    os.fchown(handle.fileno(), old.st_uid, old.st_gid)
            os.fchmod(handle.fileno(), old.st_mode & 0o7777 if old else _new_file_mode())
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit_info(root: Path) -> dict[str, Any]:
    """The git commit the entries were measured at (id, branch, dirty); empty outside a repository."""
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return {}
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return {
        "id": commit,
        "branch": _git(root, "rev-parse", "--abbrev-ref", "HEAD") or "",
        "dirty": bool(status),
    }
