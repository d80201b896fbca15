"""The one reader of the files pytest-autotune is given (:mod:`pytest_autotune.input_file`, issue 34).

What goes through the plugin, the ``merge`` tool, the journal and the replay reader is tested in
``tests/plugin/test_input_files.py``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.input_file import (
    FileTooLargeError,
    NotJsonError,
    NotRegularFileError,
    parse_json,
    read_bounded,
    read_json,
)

#: JSON nested 100 000 levels deep: Python's parser raises RecursionError on it.
DEEP = "[" * 100_000 + "]" * 100_000


def fifo(path: Path) -> Path:
    """Make a FIFO (named pipe) at ``path``: opening it to read blocks until someone writes."""
    os.mkfifo(path)
    return path


def returns_quickly(function: Callable[..., Any], *args: object) -> BaseException | None:
    """Run ``function(*args)`` in a thread; the exception it raised (None if none), or fail when it
    is still running after 10 s (a read that blocks on a FIFO)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            function(*args)
        except BaseException as exc:  # handed back to the test
            outcome.append(exc)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(10)
    assert outcome, f"{function} blocked"
    return outcome[0]


def test_the_reader_refuses_what_is_not_a_regular_file_without_opening_it(tmp_path: Path) -> None:
    pipe = fifo(tmp_path / "fifo")
    error = returns_quickly(read_bounded, pipe)
    assert isinstance(error, NotRegularFileError)
    assert str(error) == f"{pipe}: is a FIFO (named pipe), not a regular file"
    for path, kind in (("/dev/zero", "a character device"), (str(tmp_path), "a directory")):
        with pytest.raises(NotRegularFileError, match=f"is {kind}, not a regular file"):
            read_bounded(path)
    with pytest.raises(NotRegularFileError, match="kernel's /proc file system"):
        read_bounded("/proc/self/status")
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing")


def test_the_reader_reads_at_most_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 101)
    assert read_bounded(path, limit=101) == b" " * 101
    with pytest.raises(FileTooLargeError, match=r"big\.json: is larger than 100 bytes"):
        read_bounded(path, limit=100)


def test_deep_json_is_an_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(NotJsonError, match=r"x\.json: nests objects or arrays more than 64 levels deep"):
        parse_json(tmp_path / "x.json", DEEP)
    # Deep enough for a recursive reader downstream, too shallow for the parser to notice.
    with pytest.raises(NotJsonError, match="more than 64 levels"):
        parse_json("y.json", "[" * 500 + "]" * 500)
    assert parse_json("z.json", "[" * 64 + "]" * 64) is not None
    path = tmp_path / "dup.json"
    path.write_text('{"a": 1, "a": 2}')
    assert read_json(path) == {"a": 2}
    with pytest.raises(NotJsonError, match="the key 'a' appears twice"):
        read_json(path, unique_keys=True)


def test_depth_counts_only_brackets_outside_strings() -> None:
    """Brackets in strings (escaped quotes, multi-byte characters around them) nest nothing."""
    shallow = '{"a": ["[[[[", "\\"{{{{", "é]]]]]]"], "b": {"c": "\\\\"}}'
    assert parse_json("s.json", shallow, max_depth=2) == {"a": ["[[[[", '"{{{{', "é]]]]]]"], "b": {"c": "\\"}}
    with pytest.raises(NotJsonError, match="more than 1 levels"):
        parse_json("s.json", shallow, max_depth=1)
    hidden = '[["]]]]]]]]", [[1]]]]'  # closing brackets in a string must not hide the depth of 4
    with pytest.raises(NotJsonError, match="more than 3 levels"):
        parse_json("h.json", hidden, max_depth=3)
    assert parse_json("h.json", hidden, max_depth=4) == [["]]]]]]]]", [[1]]]]
