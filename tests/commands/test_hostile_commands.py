"""``show``, ``diff`` and the store reader against hostile stores (issue 44, items 4, 5 and 11):
bytes that are not UTF-8 at a git ref, an integer of 5000 digits, paths that are no file, and test
ids holding terminal escape codes, bidi overrides, backticks and backslashes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.commands.test_show_diff import DEVICE, _entry, _git, _run, _store
from tests.test_input_file import fifo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose one commit holds a store of one entry."""
    _git(tmp_path, "init", "-q")
    _store(tmp_path / "autotune.json", {"t.py::test_a": _entry({"BS": 64}, 1e-3)})
    _git(tmp_path, "add", "autotune.json")
    _git(tmp_path, "commit", "-qm", "tuned")
    return tmp_path


def test_diff_names_a_store_that_is_not_utf8_at_the_ref(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = repo / "autotune.json"
    store.write_bytes(b'{"schema_version": 1, "devices": {"\xff\xfe": {}}}\n')
    _git(repo, "commit", "-qam", "garbled")
    _store(store, {"t.py::test_a": _entry({"BS": 64}, 1e-3)})
    status, _, err = _run(capsys, "diff", "HEAD", "--file", str(store))
    assert status == 1
    assert "at HEAD:" in err
    assert "cannot be read (not UTF-8 text" in err
    # the working tree's side says the same
    store.write_bytes(b'{"schema_version": 1, "devices": {"\xff\xfe": {}}}\n')
    status, _, err = _run(capsys, "diff", "HEAD", "--file", str(store))
    assert (status, "cannot be read (not UTF-8 text" in err) == (1, True)


def _huge_store(path: Path) -> None:
    text = json.dumps(
        {"schema_version": 1, "devices": {DEVICE: {"tests": {"t.py::k": _entry({"BS": 1}, 1.0)}}}}
    )
    path.write_text(text.replace('"median": 1.0', '"median": ' + "9" * 5000))


def test_show_names_the_file_and_entry_of_an_integer_of_5000_digits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "autotune.json"
    _huge_store(store)
    status, _, err = _run(capsys, "show", "--file", str(store))
    assert status == 1
    assert f"{store}: holds an integer of 5000 digits at" in err
    assert '"t.py::k" -> "baseline" -> "median" (a damaged value)' in err
    assert "set_int_max_str_digits" not in err


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("fifo", "is a FIFO (named pipe)"),
        ("/dev/zero", "is a character device"),
        ("folder", "is a directory"),
    ],
)
def test_show_says_what_a_path_that_is_no_file_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, kind: str
) -> None:
    fifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    path = tmp_path / name if not name.startswith("/") else Path(name)
    status, _, err = _run(capsys, "show", "--file", str(path))
    assert status == 1
    assert f"{path} {kind}, not a regular file" in err
    assert "no such file" not in err


HOSTILE = "t.py::test_k[\x1b[2J\x1b[31mred\u202egnp.exe]"


def test_show_and_diff_escape_control_and_bidi_characters_in_ids(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = repo / "autotune.json"
    _store(store, {HOSTILE: _entry({"BS": 64}, 1e-3)})
    for argv in (("show",), ("diff", "HEAD"), ("diff", "HEAD", "--md")):
        status, out, _ = _run(capsys, *argv, "--file", str(store))
        assert status == 0, argv
        assert "\x1b" not in out
        assert "\u202e" not in out
        assert "\\x1b[2J\\x1b[31mred\\u202egnp.exe" in out
    status, _, err = _run(capsys, "show", "--file", str(store), "--device", "\x1b[31m")
    assert status == 1
    assert "\x1b" not in err


@pytest.mark.parametrize(
    ("nodeid", "span"),
    [
        ("t.py::k[a`b]", "``t.py::k[a`b]``"),
        ("t.py::k[a``b`]", "```t.py::k[a``b`]```"),
        ("`k`", "`` `k` ``"),
        ("t.py::k[a\\b]", "`t.py::k[a\\b]`"),
        ("t.py::k[a|b]", "`t.py::k[a\\|b]`"),
    ],
)
def test_a_code_span_holds_backticks_and_backslashes_as_commonmark_reads_them(nodeid: str, span: str) -> None:
    from pytest_autotune.commands.table import code_span

    assert code_span(nodeid) == span


def test_diff_md_shows_a_backslash_once_and_a_backtick_inside_the_span(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = repo / "autotune.json"
    _store(store, {"t.py::k[a`b\\c]": _entry({"BS": 64}, 1e-3)})
    status, out, _ = _run(capsys, "diff", "HEAD", "--md", "--file", str(store))
    assert status == 0
    assert "| ``t.py::k[a`b\\c]`` |" in out


def test_show_never_reads_a_fifo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert os.path.exists(fifo(tmp_path / "autotune.json"))
    status, _, err = _run(capsys, "show", "--file", str(tmp_path / "autotune.json"))
    assert status == 1
    assert "FIFO" in err
