"""``autotune.json``: the committed tuned configurations and their baselines (DESIGN section 3).

Layout (schema version 1)::

    {"schema_version": 1,
     "devices": {"<device key>": {"info": {...},
                                  "tests": {"<node id>": {"config": {...}, "space_hash": "...",
                                                          "baseline": {...}, "tuning": {...},
                                                          "commit_info": {...}}}}}}

The file is written canonically (sorted keys, two-space indent, floats by ``repr``), so re-writing
an unchanged entry yields the same bytes and diffs stay small. Writes happen in one process only
(the xdist controller or the single process): :func:`apply_changes` takes a file lock, re-reads the
file, merges the changes, and replaces the file atomically (temporary file in the same directory,
then ``os.replace``). A file that cannot be read (corrupt, truncated, written by a newer version) is
an error naming it and is never overwritten; so is a read-only file (no write permission bit) and a
location that cannot be written. Temporary files of writers killed before their rename are removed
by the next writer (under the lock).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = [
    "SCHEMA_VERSION",
    "Store",
    "StoreError",
    "apply_changes",
    "check_writable",
    "commit_info",
    "config_from_json",
    "dumps",
]

SCHEMA_VERSION: Final = 1
#: Seconds to wait for another process's write of the same file before giving up.
LOCK_SECONDS: Final = 60.0
_ENTRY_KEYS: Final = frozenset({"config", "space_hash", "baseline", "tuning", "commit_info"})


class StoreError(Exception):
    """``autotune.json`` cannot be read or written; the message names the file."""


def dumps(data: Mapping[str, Any]) -> str:
    """Canonical text of a store document."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def config_from_json(config: Mapping[str, Any]) -> dict[str, Any]:
    """A configuration read from JSON: lists (permutations) become tuples again."""
    return {name: tuple(value) if isinstance(value, list) else value for name, value in config.items()}


def _validate(path: Path, data: Any) -> dict[str, Any]:
    def bad(why: str) -> StoreError:
        return StoreError(
            f"{path}: {why}; fix or delete the file (it was left untouched), "
            "then re-run `pytest --autotune` to re-create entries"
        )

    if not isinstance(data, dict):
        raise bad("not an autotune cache (expected a JSON object at the top level)")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise bad("no integer 'schema_version'")
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
        for nodeid, entry in device.get("tests", {}).items():
            if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
                raise bad(f"entry {nodeid!r} of device {key!r} has no 'config' object")
            if not isinstance(entry.get("space_hash"), str):
                raise bad(f"entry {nodeid!r} of device {key!r} has no 'space_hash' string")
            unknown = set(entry) - _ENTRY_KEYS
            if unknown:
                raise bad(f"entry {nodeid!r} of device {key!r} has unknown keys {sorted(unknown)}")
    return data


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"schema_version": SCHEMA_VERSION, "devices": {}}
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{path}: cannot be read ({exc}); it was left untouched") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(
            f"{path}: not valid JSON (corrupt or truncated: {exc}); fix or delete the file "
            "(it was left untouched), then re-run `pytest --autotune`"
        ) from exc
    return _validate(path, data)


@dataclass
class Store:
    """A read-only view of ``autotune.json`` as loaded at the start of the session."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Store:
        """Read ``path`` (a missing file is an empty store); raises :class:`StoreError`."""
        return cls(path, _read(path))

    @property
    def exists(self) -> bool:
        """Whether the file existed when loaded."""
        return self.path.is_file()

    def devices(self) -> list[str]:
        """Device keys present in the file."""
        return sorted(self.data.get("devices", {}))

    def tests(self, device: str) -> dict[str, dict[str, Any]]:
        """Entries of ``device`` by node id (empty when the device is absent)."""
        return dict(self.data.get("devices", {}).get(device, {}).get("tests", {}))

    def entry(self, device: str, nodeid: str) -> dict[str, Any] | None:
        """The entry of ``nodeid`` on ``device``, or None."""
        return self.tests(device).get(nodeid)

    def count(self) -> int:
        """Number of entries over all devices."""
        return sum(len(self.tests(device)) for device in self.devices())


def _lock_path(path: Path) -> Path:
    # The lock lives outside the repository so no stray file is committed next to autotune.json.
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"pytest-autotune-{digest}.lock"


def check_writable(path: Path) -> None:
    """Raise :class:`StoreError` now if ``path`` could not be replaced later (read-only file or place).

    Called before tuning starts, so an hour of tuning is not lost to a file that cannot be written.
    The directory is probed by creating and removing a temporary file (permission bits do not stop
    root, but a read-only file system or an immutable directory do).
    """
    if path.exists() and _read_only(path):
        raise StoreError(_read_only_message(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise StoreError(
            f"{path}: cannot be written ({type(exc).__name__}: {exc}); choose another place with "
            "--autotune-cache=PATH"
        ) from exc


def _read_only_message(path: Path) -> str:
    return (
        f"{path}: is read-only; it was left as it was and this run's results would not be saved "
        "(make it writable, or write elsewhere with --autotune-cache=PATH)"
    )


def apply_changes(
    path: Path,
    *,
    updates: Mapping[tuple[str, str], Mapping[str, Any]],
    removals: Iterable[tuple[str, str]] = (),
    device_info: Mapping[str, Mapping[str, Any]] | None = None,
) -> bool:
    """Merge entry ``updates`` and ``removals`` (by (device, node id)) into ``path``.

    Under a file lock: re-read the file (raising :class:`StoreError` and writing nothing when it
    is unreadable), apply the changes, and replace it atomically when its text changed. Devices
    left without entries are dropped. Returns whether the file was written.
    """
    from filelock import FileLock

    removals = list(removals)
    if not updates and not removals:
        return False
    try:
        with FileLock(str(_lock_path(path)), timeout=LOCK_SECONDS):
            return _merge_and_write(path, updates, removals, device_info)
    except OSError as exc:  # read-only directory, full disk, lock held by a stuck process, ...
        raise StoreError(
            f"{path}: cannot be written ({type(exc).__name__}: {exc}); the file was left as it was and "
            "this run's results were not saved"
        ) from exc


def _merge_and_write(
    path: Path,
    updates: Mapping[tuple[str, str], Mapping[str, Any]],
    removals: list[tuple[str, str]],
    device_info: Mapping[str, Mapping[str, Any]] | None,
) -> bool:
    """The locked part of :func:`apply_changes`."""
    _remove_abandoned_temporaries(path)
    data = _read(path)
    before = dumps(data) if path.exists() else None
    devices: dict[str, Any] = data.setdefault("devices", {})
    for (device, nodeid), entry in updates.items():
        slot = devices.setdefault(device, {"info": {}, "tests": {}})
        slot.setdefault("tests", {})[nodeid] = dict(entry)
        if device_info and device in device_info:
            slot["info"] = dict(device_info[device])
    for device, nodeid in removals:
        devices.get(device, {}).get("tests", {}).pop(nodeid, None)
    for device in [d for d, slot in devices.items() if not slot.get("tests")]:
        del devices[device]
    data["schema_version"] = SCHEMA_VERSION
    text = dumps(data)
    if text == before:
        return False
    if before is not None and _read_only(path):
        raise StoreError(_read_only_message(path))
    _atomic_write(path, text)
    return True


def _read_only(path: Path) -> bool:
    """Whether the file is meant to stay as it is: no write permission bit (even for root) or no access."""
    return not path.stat().st_mode & 0o222 or not os.access(path, os.W_OK)


def _remove_abandoned_temporaries(path: Path) -> None:
    """Delete temporary files of writers that died before renaming them (called under the lock)."""
    for leftover in path.parent.glob(f".{path.name}.*.tmp"):
        leftover.unlink(missing_ok=True)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
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
