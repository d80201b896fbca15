"""The one reader of the files pytest-autotune is given: regular, bounded, JSON without deep nesting.

Every file the plugin and its tools read (the store ``autotune.json``, recovery files, the
``--autotune-transfer-from`` stores, tuning journals, the report's ``index.html``, Kernel Tuner
cache files) is read here, because a path may name anything: ``/dev/zero`` or ``/dev/full`` never
end, a FIFO blocks its reader until someone writes, a directory or ``/dev/null`` is no file, and a
shared machine must not lose its memory to a typo. So:

* the path must name a **regular file** (after symbolic links), checked with ``os.stat`` before it
  is opened, and again on the open descriptor (opened non-blocking, so a file swapped for a FIFO in
  between cannot block); files of the kernel's ``/proc`` and ``/sys`` are refused too: they claim
  to be regular but are made up as they are read;
* at most ``limit`` bytes are read (:data:`DEFAULT_LIMIT` unless the caller says otherwise); a
  longer file is an error, not a partial read;
* JSON nested deeper than :data:`MAX_DEPTH` (or too deep for Python's parser) is an error naming
  the file, never a ``RecursionError`` from a later reader.

The files the plugin writes besides the store (``--autotune-json``, ``--autotune-report-md``) are
opened through :func:`open_output`, for the same reason: opening a FIFO for writing blocks until
someone reads it, so it is opened non-blocking and anything but a regular file is refused.

Errors are :class:`InputFileError` subclasses whose text names the file and what is wrong; callers
add what to do about it (only the store's own reader tells the user to fix or delete the file).
"""

from __future__ import annotations

import collections
import gzip
import io
import itertools
import json
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, Final

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_DEPTH",
    "FileTooLargeError",
    "InputFileError",
    "NotJsonError",
    "NotRegularFileError",
    "gunzip_bounded",
    "not_regular_reason",
    "open_output",
    "parse_json",
    "read_bounded",
    "read_head",
    "read_json",
    "show_size",
]

#: Bytes read at most from a file unless the caller gives its own limit.
DEFAULT_LIMIT: Final = 64 * 1024 * 1024
#: Levels of nesting (objects and arrays) a JSON file may have; the store needs fewer than 12.
MAX_DEPTH: Final = 64
#: Folders of the kernel's made-up files, refused although ``stat`` calls their files regular.
_PSEUDO_ROOTS: Final = ("/proc", "/sys")


class InputFileError(ValueError):
    """A file cannot be read as asked; ``str()`` is ``"<path>: <why>"``."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = Path(path)
        self.why = why


class NotRegularFileError(InputFileError):
    """The path names a directory, a device, a FIFO, a socket or a ``/proc`` file, not a regular file."""


class FileTooLargeError(InputFileError):
    """The file holds more bytes than the reader's limit."""


class NotJsonError(InputFileError):
    """The file is not UTF-8 JSON: a parse error, a byte order mark, an empty file, nesting too deep,
    or (when asked) a key twice in one object."""


def show_size(size: int) -> str:
    """``67108864`` -> ``"64 MiB"`` (bytes below 1 KiB as they are)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def not_regular_reason(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` is no regular file to read (``"is a FIFO (named pipe), not a regular file"``), or
    None when it is one. A missing path raises ``FileNotFoundError``; a path that cannot be
    examined, ``OSError``."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        return f"is {_kind(mode)}, not a regular file"
    real = os.path.realpath(path)
    for root in _PSEUDO_ROOTS:
        if real == root or real.startswith(root + "/"):
            shown = "" if real == os.fspath(path) else f" ({real})"
            return f"is a file of the kernel's {root} file system{shown}, not a regular file"
    return None


def _read_regular(path: str | os.PathLike[str], count: int) -> bytes:
    """Up to ``count`` bytes of the regular file ``path`` (checked before and after opening)."""
    reason = not_regular_reason(path)
    if reason is not None:
        raise NotRegularFileError(path, reason)
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # swapped after the check above
            raise NotRegularFileError(path, f"is {_kind(mode)}, not a regular file")
        return handle.read(count)


def open_output(path: str | os.PathLike[str], *, append: bool = False) -> io.TextIOWrapper:
    """``path`` opened for writing UTF-8 text (created if missing, emptied unless ``append``).

    Opened non-blocking, so a FIFO without a reader fails at once (``ENXIO``) instead of blocking
    forever; anything that is not a regular file once open raises ``OSError`` naming what it is.
    """
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | (os.O_APPEND if append else 0), 0o666)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise OSError(f"{path} is {_kind(mode)}, not a regular file")
    if not append:
        os.ftruncate(fd, 0)
    return io.TextIOWrapper(os.fdopen(fd, "ab" if append else "wb"), encoding="utf-8")


def read_bounded(path: str | os.PathLike[str], *, limit: int = DEFAULT_LIMIT) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them (module docstring).

    Raises :class:`NotRegularFileError` or :class:`FileTooLargeError`; a missing file raises
    ``FileNotFoundError`` and other failures ``OSError``, as ``open`` would.
    """
    data = _read_regular(path, limit + 1)
    if len(data) > limit:
        raise FileTooLargeError(path, f"is larger than {show_size(limit)}, the most read from such a file")
    return data


def read_head(path: str | os.PathLike[str], size: int) -> bytes:
    """The first ``size`` bytes of the regular file ``path`` (all of a shorter one); raises as
    :func:`read_bounded` does, except that a longer file is no error."""
    return _read_regular(path, size)


def gunzip_bounded(path: str | os.PathLike[str], data: bytes, *, limit: int = DEFAULT_LIMIT) -> bytes:
    """``data`` decompressed when it is gzip (else as it is), at most ``limit`` bytes of it."""
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            out = stream.read(limit + 1)
    except (OSError, EOFError) as exc:
        raise NotJsonError(path, f"is a corrupt gzip file ({exc})") from exc
    if len(out) > limit:
        raise FileTooLargeError(path, f"decompresses to more than {show_size(limit)}, the most read")
    return out


#: A JSON string (the unrolled form: runs of plain characters, then an escape; no alternation per
#: character), as bytes: in UTF-8 no byte of another character is a quote, a backslash or a bracket.
_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
_STEP: Final = [1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256)]


def _text_depth(text: str) -> int:
    """How deep the valid JSON ``text`` nests objects and arrays, read from its brackets outside
    strings (the scans run in C: a store of 10 000 entries takes milliseconds, not the seconds a walk
    over every parsed value takes)."""
    encoded = text.encode("utf-8", "surrogatepass")
    brackets = _STRING.sub(b"", encoded).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)  # built in C; a key given twice leaves fewer keys than pairs
    if len(data) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return data


class _Huge:
    """Stands for an integer too long to convert while :func:`_huge_integer` looks for it."""

    def __init__(self, digits: str) -> None:
        self.digits = digits


def _where(value: Any, route: tuple[str, ...] = ()) -> tuple[tuple[str, ...], _Huge] | None:
    """The keys and indices leading to the first :class:`_Huge` in ``value`` (no deep recursion:
    the depth was bounded by the parser already)."""
    queue: collections.deque[tuple[Any, tuple[str, ...]]] = collections.deque([(value, route)])
    while queue:  # breadth first: the shallowest such integer (popleft, not list.pop(0): a store is large)
        item, here = queue.popleft()
        if isinstance(item, _Huge):
            return here, item
        if isinstance(item, dict):
            queue.extend((child, (*here, json.dumps(key))) for key, child in item.items())
        elif isinstance(item, list):
            queue.extend((child, (*here, f"[{index}]")) for index, child in enumerate(item))
    return None


def _huge_integer(text: str) -> str:
    """Why a text Python's parser refused for an overlong integer is damaged, and where the integer is."""
    limit = getattr(sys, "get_int_max_str_digits", lambda: 4300)() or 4300

    def mark(digits: str) -> int | _Huge:
        return _Huge(digits) if len(digits.lstrip("-")) > limit else int(digits)

    try:
        found = _where(json.loads(text, parse_int=mark))
    except ValueError:
        found = None
    if found is None:
        return "holds a number too long to read (a damaged value)"
    route, huge = found
    shown = " -> ".join(route) or "the top level"
    return f"holds an integer of {len(huge.digits.lstrip('-'))} digits at {shown} (a damaged value)"


def parse_json(
    path: str | os.PathLike[str],
    text: str | bytes,
    *,
    max_depth: int = MAX_DEPTH,
    unique_keys: bool = False,
) -> Any:
    """The JSON value of ``text`` (read from ``path``, which errors name); raises :class:`NotJsonError`.

    ``unique_keys`` refuses an object that holds a key twice (Python would keep the last one).
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotJsonError(path, f"cannot be read (not UTF-8 text: {exc})") from exc
    if text.startswith("\ufeff"):
        raise NotJsonError(path, "starts with a byte order mark (save it as UTF-8 without BOM)")
    if not text.strip():
        raise NotJsonError(path, "is empty (not valid JSON)")
    too_deep = f"nests objects or arrays more than {max_depth} levels deep (not a file this reads)"
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates if unique_keys else None)
    except _DuplicateKey as exc:
        why = f"the key {exc.args[0]!r} appears twice in one object (not valid JSON)"
        raise NotJsonError(path, why) from None
    except json.JSONDecodeError as exc:
        raise NotJsonError(path, f"not valid JSON (corrupt or truncated: {exc})") from exc
    except RecursionError:
        raise NotJsonError(path, too_deep) from None
    except ValueError:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise NotJsonError(path, _huge_integer(text)) from None
    if isinstance(value, dict | list) and _text_depth(text) > max_depth:
        raise NotJsonError(path, too_deep)
    return value


def read_json(
    path: str | os.PathLike[str],
    *,
    limit: int = DEFAULT_LIMIT,
    max_depth: int = MAX_DEPTH,
    unique_keys: bool = False,
) -> Any:
    """:func:`read_bounded` then :func:`parse_json`: the JSON value of the regular file ``path``."""
    return parse_json(path, read_bounded(path, limit=limit), max_depth=max_depth, unique_keys=unique_keys)
