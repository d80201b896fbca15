"""Every file the plugin reads is a regular file of bounded size, or a clear error naming it (issue 34).

``/dev/zero`` and ``/dev/full`` never end, a FIFO blocks its reader, a folder or ``/dev/null`` is no
file, and JSON nested 100 000 levels deep overflows Python's parser: each must be refused with a
message naming the option (or the file) before anything reads it, never an ``INTERNALERROR``, a
``RecursionError``, a hang or a machine out of memory. :mod:`pytest_autotune.input_file` is the one
reader; these tests go through the plugin, the ``merge`` tool, the journal and the replay reader
(``tests/test_input_file.py`` tests the reader itself).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_autotune.replay import Replay, ReplayError
from pytest_autotune.tuning.journal import JournalError, read_journal
from tests.plugin.conftest import TWO_TESTS
from tests.test_input_file import DEEP, fifo, returns_quickly


# -- the plugin's options ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "--autotune-cache=/dev/zero",
            "--autotune-cache: /dev/zero is a character device, not a regular file",
        ),
        ("--autotune-cache=fifo", "--autotune-cache: {root}/fifo is a FIFO (named pipe), not a regular file"),
        ("--autotune-cache=/proc/self/status", "--autotune-cache: /proc/"),
        ("--autotune-cache=", "--autotune-cache: an empty value names no file or folder"),
        (
            "--autotune-transfer-from=/dev/null",
            "--autotune-transfer-from: /dev/null is a character device, not a regular file",
        ),
        (
            "--autotune-transfer-from=sub",
            "--autotune-transfer-from: {root}/sub is a directory, not a regular file; expected an",
        ),
        (
            "--autotune-transfer-from=fifo",
            "--autotune-transfer-from: {root}/fifo is a FIFO (named pipe), not a regular file",
        ),
    ],
)
def test_a_path_option_naming_no_regular_file_is_a_usage_error(
    project: pytest.Pytester, option: str, message: str
) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    fifo(project.path / "fifo")
    (project.path / "sub").mkdir()
    result = project.runpytest_subprocess("--autotune", option, timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert message.format(root=project.path) in result.stderr.str()
    assert "does not exist" not in result.stderr.str() + result.stdout.str()
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


def test_a_deeply_nested_store_is_an_error_naming_the_file(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    store = project.path / "autotune.json"
    store.write_text(DEEP)
    result = project.runpytest_subprocess(timeout=120)
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert "RecursionError" not in text
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{store}: nests objects or arrays more than 64 levels deep" in text
    assert store.read_text() == DEEP


def test_a_deeply_nested_transfer_source_is_warned_about_by_name(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=TWO_TESTS)
    (project.path / "deep.json").write_text(DEEP)
    result = project.runpytest_subprocess("--autotune", "--autotune-transfer-from=deep.json", timeout=120)
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert "RecursionError" not in text
    result.assert_outcomes(passed=2)
    assert "--autotune-transfer-from: not used: " in text
    assert "deep.json: nests objects or arrays more than 64 levels deep" in text
    assert "fix or delete" not in text  # not the store: no advice to repair it


# -- merge, the journal, Kernel Tuner caches ---------------------------------------------------------
def _merge(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "merge", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def test_merge_refuses_files_that_are_not_regular(tmp_path: Path) -> None:
    recovery = tmp_path / "autotune.json.recovered-20260101T000000Z.json"
    recovery.write_text(json.dumps({"schema_version": 1, "devices": {}}))
    done = _merge(tmp_path, str(recovery), "--into", "/dev/full")
    assert done.returncode == 1
    assert "/dev/full is a character device, not a regular file" in done.stderr
    fifo(tmp_path / "fifo")
    for source in ("/dev/zero", str(tmp_path / "fifo")):
        done = _merge(tmp_path, source, "--into", str(tmp_path / "autotune.json"))
        assert done.returncode == 1
        assert f"{source}: is a" in done.stderr
        assert "not a regular file" in done.stderr
        assert "fix or delete" not in done.stderr
    deep = tmp_path / "deep.recovered-20260101T000000Z.json"
    deep.write_text(DEEP)
    done = _merge(tmp_path, str(deep), "--into", str(tmp_path / "autotune.json"))
    assert done.returncode == 1
    assert f"{deep}: nests objects or arrays more than 64 levels deep" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "autotune.json").exists()


def test_the_journal_reader_refuses_deep_lines_and_fifos(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    journal.write_text(DEEP + "\n")
    with pytest.raises(JournalError, match=r"j\.jsonl: line 1 is not valid JSON here: nests objects"):
        read_journal(journal)
    error = returns_quickly(read_journal, fifo(tmp_path / "fifo.jsonl"))
    assert isinstance(error, JournalError)
    assert "is a FIFO (named pipe), not a regular file" in str(error)


def test_the_replay_reader_refuses_deep_files_and_fifos(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    with pytest.raises(ReplayError, match=r"deep\.json: not a Kernel Tuner cache file \(nests"):
        Replay.from_cache(deep)
    error = returns_quickly(Replay.from_cache, fifo(tmp_path / "fifo.json"))
    assert isinstance(error, ReplayError)
    assert "is a FIFO (named pipe), not a regular file" in str(error)
