"""``autotune.json`` as a JSON document: the schema, the checks of a read, the canonical text.

Everything here works on plain JSON data and knows nothing of the entry model
(:mod:`pytest_autotune.entry`), so that the writers (:mod:`pytest_autotune.store.writing`) can re-read
and re-write the file without depending on it. A damaged *file* (not UTF-8 JSON, a byte order mark,
duplicate keys, the wrong structure, a newer schema) is a :class:`StoreError` naming the file: the
whole file is refused, and never overwritten. Entries are checked one by one when they are loaded
(:mod:`pytest_autotune.store.reading`).

:func:`dumps` is the canonical text (sorted keys, two-space indent, floats by ``repr``) shared by
every writer, so that re-writing an unchanged entry yields the same bytes and diffs stay small. An
entry's ``history`` is the one exception to one value per line: its ``params`` stand on one line
and its ``trials`` and ``failures`` one row (one configuration) per line, so that a history of 64
trials takes 64 lines and re-tuning a test changes only its own lines.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from pytest_autotune.input_file import InputFileError, NotJsonError, parse_json, read_bounded

__all__ = [
    "MAX_BYTES",
    "SCHEMA_VERSION",
    "Key",
    "StoreError",
    "compact",
    "config_from_json",
    "dumps",
    "entry_text",
    "entry_where",
    "history_row_bytes",
    "history_rows_bytes",
    "parse_document",
    "printable",
    "read_document",
]

SCHEMA_VERSION: Final = 1
#: Bytes read at most from a store file (about 16000 entries of the 8 KB an entry may take).
MAX_BYTES: Final = 128 * 1024 * 1024

#: An entry's address in the file: (device key, test node id).
Key = tuple[str, str]


class StoreError(Exception):
    """``autotune.json`` cannot be read or written; the message names the file."""


#: Unicode categories shown escaped: controls (terminal escape codes), formats (bidi overrides such
#: as U+202E, zero-width characters), line and paragraph separators, surrogates, private use.
_UNPRINTABLE: Final = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def printable(text: str) -> str:
    """``text`` (a test id, device key or value read from a store) safe to print: each control,
    format or separator character as its escape (``\\x1b``, ``\\u202e``), so that a hostile or
    damaged file cannot move the cursor, recolour the terminal or reorder what a reader sees."""
    if text.isprintable():  # the common case, fast (isprintable is false for every category above)
        return text
    out = []
    for char in text:
        if unicodedata.category(char) not in _UNPRINTABLE:
            out.append(char)
        elif ord(char) < 0x100:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return "".join(out)


def dumps(data: Mapping[str, Any]) -> str:
    """Canonical text of a store document.

    ``NaN`` and ``Infinity`` are allowed here only so that a damaged entry read from the file is
    written back as it was: every entry this package writes went through
    :meth:`StoreEntry.from_json`, which refuses non-finite numbers. Outside histories the text is
    exactly ``json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)``.
    """
    return _encode(data, (), "") + "\n"


#: How deep :func:`dumps` indents an entry's first line: under ``devices``, a device, ``tests``.
_ENTRY_INDENT: Final = " " * 8


def entry_text(entry: Mapping[str, Any]) -> str:
    """The text of one entry's JSON as :func:`dumps` writes it inside the file (its size there)."""
    return _encode(entry, ("devices", "", "tests", ""), _ENTRY_INDENT)


def history_row_bytes(row: Any) -> int:
    """The UTF-8 bytes of one row of a history's ``trials`` or ``failures`` on its line, as
    :func:`entry_text` writes it (without its indent and separator: :func:`history_rows_bytes`)."""
    return len(_scalar(row).encode("utf-8"))


def history_rows_bytes(count: int, row_bytes: int) -> int:
    """The bytes :func:`entry_text` writes for a history's ``trials`` or ``failures`` list of
    ``count`` rows whose :func:`history_row_bytes` add up to ``row_bytes``: ``[]`` when empty, else
    one row per line below the history's keys, separated by commas.

    An entry's size is then known for any number of rows from one encoding of the entry, without
    re-encoding it for every row that bounding it drops (:mod:`pytest_autotune.store.history_record`).
    """
    if count == 0:
        return len("[]")
    row_indent = len(_ENTRY_INDENT) + 6  # the entry's keys, the history's keys, the rows: 2 spaces each
    closing = len("\n") + row_indent - 2 + len("]")
    return len("[\n") + count * row_indent + row_bytes + (count - 1) * len(",\n") + closing


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


def _plain(path: tuple[str, ...]) -> bool:
    """Whether nothing at or below ``path`` is laid out as a history (:func:`_history_layout`)."""
    size = len(path)
    return (
        (size >= 1 and path[0] != "devices")
        or (size >= 3 and path[2] != "tests")
        or (size >= 5 and path[4] != "history")
        or (size >= 6 and _history_layout(path) is None)
    )


def _encode(value: Any, path: tuple[str, ...], indent: str) -> str:
    """``value`` at ``path`` (keys from the top), its first line already indented by ``indent``."""
    if _plain(path):  # json's own encoder, indented as it would be here: the same text, faster
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=True)
        return text.replace("\n", "\n" + indent) if indent else text
    if len(path) == 4 and isinstance(value, dict):  # an entry: the same entry reads the same
        key = compact(value)
        known = _ENTRY_TEXTS.get(key)
        if known is None:
            if len(_ENTRY_TEXTS) >= _ENTRY_TEXTS_KEPT:
                _ENTRY_TEXTS.clear()
            known = _ENTRY_TEXTS[key] = _encode_entry(value, path, indent)
        return known
    return _encode_entry(value, path, indent)


#: The canonical text of entries encoded in this process, by :func:`compact` text: a session
#: rewrites the whole file once per tuned test, and all but a few of its entries are the same.
_ENTRY_TEXTS: dict[str, str] = {}
_ENTRY_TEXTS_KEPT: Final = 50_000


def compact(value: Any) -> str:
    """``value`` as compact JSON with sorted keys (json's C encoder): equal texts, equal canonical texts."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=True)


def _encode_entry(value: Any, path: tuple[str, ...], indent: str) -> str:
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = (
            f"{inner}{_scalar(str(key))}: {_encode(value[key], (*path, str(key)), inner)}"
            for key in sorted(value)
        )
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list | tuple) and value:
        layout = _history_layout(path)
        if layout == "line":
            return _scalar(value)
        if layout == "rows":
            return "[\n" + ",\n".join(f"{inner}{_scalar(row)}" for row in value) + f"\n{indent}]"
        return (
            "[\n"
            + ",\n".join(f"{inner}{_encode(item, (*path, ''), inner)}" for item in value)
            + f"\n{indent}]"
        )
    return _scalar(value)


def _history_layout(path: tuple[str, ...]) -> str | None:
    """``"line"`` or ``"rows"`` for the lists of an entry's history, else None (one value per line)."""
    if len(path) != 6 or path[0] != "devices" or path[2] != "tests" or path[4] != "history":
        return None
    return {"params": "line", "trials": "rows", "failures": "rows"}.get(path[5])


def config_from_json(config: Mapping[str, Any]) -> dict[str, Any]:
    """A configuration read from JSON: lists (permutations) become tuples again."""
    return {name: tuple(value) if isinstance(value, list) else value for name, value in config.items()}


def entry_where(path: Path, device: str, nodeid: str) -> str:
    """How errors name an entry: ``"autotune.json: entry 't.py::k' of device 'host:x'"``."""
    return f"{path}: entry {nodeid!r} of device {device!r}"


def _repair(path: Path, why: str, advice: bool) -> StoreError:
    """A damaged-file error; ``advice``: the file is the store a run writes, which the user may repair
    (other files, a recovery file or a transfer source, are only named)."""
    if advice:
        return StoreError(
            f"{path}: {why}; fix or delete the file (it was left untouched), then re-run "
            "`pytest --autotune` to re-create entries"
        )
    return StoreError(f"{path}: {why}")


def _validate(path: Path, data: Any, advice: bool = True) -> dict[str, Any]:
    """Check the file's structure (entries are checked one by one: :class:`Store`)."""

    def bad(why: str) -> StoreError:
        return _repair(path, why, advice)

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


def parse_document(where: Path, text: str | bytes, *, advice: bool = False) -> dict[str, Any]:
    """The JSON of a store's ``text`` (read elsewhere, e.g. from a git commit), its structure
    checked as :func:`read_document` checks a file; errors name ``where`` (with how to repair it
    only when ``advice``). Raises :class:`StoreError`."""
    try:
        data = parse_json(where, text, unique_keys=True)
    except NotJsonError as exc:
        raise _repair(where, exc.why, advice) from exc
    return _validate(where, data, advice)


def read_document(path: Path, *, advice: bool = True) -> dict[str, Any]:
    """The file's JSON, its structure checked (no file: an empty store); raises :class:`StoreError`.

    Read through :mod:`pytest_autotune.input_file` (a regular file of at most :data:`MAX_BYTES`, no
    deep nesting). ``advice``: the file is the store this run writes, and a damaged one is reported
    with how to repair it; other files (recovery files, transfer sources) are only named.
    """
    try:
        raw = read_bounded(path, limit=MAX_BYTES)
    except FileNotFoundError:
        return {"schema_version": SCHEMA_VERSION, "devices": {}}
    except InputFileError as exc:
        raise StoreError(str(exc)) from exc
    except OSError as exc:
        raise StoreError(f"{path}: cannot be read ({exc}); it was left untouched") from exc
    try:
        data = parse_json(path, raw, unique_keys=True)
    except NotJsonError as exc:
        raise _repair(path, exc.why, advice) from exc
    return _validate(path, data, advice)
