"""Replacing ``autotune.json`` safely: one writer at a time, all or nothing, the file's identity kept.

A committed file shared by a team must never be left half-written or silently replaced by a file
with other permissions, so every change goes through :func:`rewrite_locked`:

* **one writer at a time**: a file lock (:func:`lock_path`, outside the repository so no stray file
  is committed next to ``autotune.json``); writes happen in one process only (the xdist controller
  or the single process), the lock guards against other pytest runs;
* **start from what is there**: under the lock the file is re-read
  (:func:`~pytest_autotune.store.document.read_document`), so changes made by another run since this
  session loaded it are kept, and a file a read would refuse is never overwritten;
* **all or nothing**: a temporary file in the same directory, flushed and synced, then
  ``os.replace``; temporary files of writers killed before their rename are removed by the next
  writer (under the lock);
* **the file stays the same file**: a symbolic link is written through to its target, the file keeps
  its mode (and owner, where allowed), a new file gets ``0666 & ~umask``; a read-only file (no write
  permission bit) is an error, never replaced.

:func:`check_writable` finds a read-only file, a location that cannot be written and a lock file
that cannot be opened before tuning starts, so that an hour of tuning is not lost at the end. What
the change is (merging entries) is :mod:`pytest_autotune.store.changes`' business.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from pytest_autotune.store.document import StoreError, compact, dumps, read_document

__all__ = ["LOCK_SECONDS", "check_writable", "lock_path", "rewrite_locked"]

#: Seconds to wait for another process's write of the same file before giving up.
LOCK_SECONDS: Final = 60.0


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


def rewrite_locked(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """Under the file lock: re-read ``path``, apply ``change`` to its document, replace it atomically.

    The file is written only when its canonical text changed; returns whether it was. A file that
    cannot be read raises :class:`StoreError` and nothing is written; so does any ``OSError`` (a
    read-only directory, a full disk, a lock held by a stuck process), with the file left as it was.
    """
    from filelock import FileLock

    try:
        with FileLock(str(lock_path(path)), timeout=LOCK_SECONDS):
            return _rewrite(path, change)
    except OSError as exc:  # read-only directory, full disk, lock held by a stuck process, ...
        raise StoreError(
            f"{path}: cannot be written ({type(exc).__name__}: {exc}); the file was left as it was"
        ) from exc


def _rewrite(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """The locked part of :func:`rewrite_locked`."""
    _remove_abandoned_temporaries(path)
    data = read_document(path)
    before = compact(data) if path.exists() else None  # equal compact texts: equal canonical texts
    changed = change(data)
    if before is not None and compact(changed) == before:
        return False
    text = dumps(changed)
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
