"""autotune.json: canonical text, merging, unreadable files left untouched (unit and through pytest)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.entry import Baseline, StoreEntry, TuningRecord
from pytest_autotune.store import SCHEMA_VERSION, Store, StoreError, apply_changes, config_from_json, dumps


def _entry(median: float, config: dict[str, Any] | None = None) -> StoreEntry:
    return StoreEntry(
        config=config or {"A": 3, "ORDER": ("i", "j")},
        space_hash="abc",
        baseline=Baseline(median, iqr=0.0, q1=median, q3=median, min=median, rounds=10, unit="s"),
        tuning=TuningRecord(trials=5, counts={"ok": 5}, strategy="random", seed=1, duration=0.5),
        commit_info={},
    )


def test_apply_changes_merges_and_keeps_other_entries_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    assert apply_changes(path, updates={("dev", "t.py::a"): _entry(1e-4), ("dev", "t.py::b"): _entry(2e-4)})
    first = path.read_text()
    assert first == dumps(json.loads(first))  # canonical
    assert apply_changes(path, updates={("dev", "t.py::b"): _entry(3e-4), ("other", "t.py::a"): _entry(4e-4)})
    second = json.loads(path.read_text())
    assert second["schema_version"] == SCHEMA_VERSION
    assert second["devices"]["dev"]["tests"]["t.py::b"]["baseline"]["median"] == 3e-4
    # the untouched entry's lines are exactly the same as before
    text = path.read_text()

    def block(doc: str) -> str:
        return doc[doc.index('"t.py::a"') : doc.index('"t.py::b"')]

    assert block(text) == block(first)


def test_apply_changes_without_change_does_not_write(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    apply_changes(path, updates={("dev", "t.py::a"): _entry(1e-4)})
    before = path.stat().st_mtime_ns
    assert not apply_changes(path, updates={("dev", "t.py::a"): _entry(1e-4)})
    assert path.stat().st_mtime_ns == before
    assert not apply_changes(path, updates={})


def test_removals_drop_entries_and_empty_devices(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    apply_changes(path, updates={("dev", "t.py::a"): _entry(1e-4), ("dev2", "t.py::a"): _entry(1e-4)})
    apply_changes(path, updates={}, removals=[("dev2", "t.py::a"), ("dev", "t.py::gone")])
    assert sorted(Store.load(path).devices()) == ["dev"]


def test_permutations_round_trip_as_tuples(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    apply_changes(path, updates={("dev", "t.py::a"): _entry(1e-4)})
    entry = Store.load(path).entry("dev", "t.py::a")
    assert entry is not None
    assert dict(entry.config) == {"A": 3, "ORDER": ("i", "j")}
    assert config_from_json({"ORDER": ["i", "j"]}) == {"ORDER": ("i", "j")}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema_version": 1, "devices": {', "not valid JSON"),
        ("[1, 2]", "not an autotune cache"),
        ('{"devices": {}}', "no integer 'schema_version'"),
        ('{"schema_version": 99, "devices": {}}', "newer pytest-autotune"),
        ('{"schema_version": 1, "devices": []}', "'devices' must be an object"),
        ('{"schema_version": "1", "devices": {}}', "no integer 'schema_version'"),
        ('{"schema_version": 1, "devices": {}, "devices": {}}', "the key 'devices' appears twice"),
        ("\ufeff" + '{"schema_version": 1, "devices": {}}', "byte order mark"),
        ("", "is empty"),
    ],
)
def test_unreadable_files_are_errors_and_never_overwritten(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "autotune.json"
    path.write_text(text)
    with pytest.raises(StoreError, match=message) as info:
        Store.load(path)
    assert str(path) in str(info.value)
    with pytest.raises(StoreError, match=message):
        apply_changes(path, updates={("dev", "t.py::a"): _entry(1e-4)})
    assert path.read_text() == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema_version": 1, "devices": {"x": {"tests": {', "not valid JSON"),
        ('{"schema_version": 2, "devices": {}}', "newer pytest-autotune"),
    ],
)
def test_pytest_reports_an_unreadable_cache_and_leaves_it_alone(
    project: pytest.Pytester, two_tests: str, text: str, message: str
) -> None:
    project.makepyfile(test_k=two_tests)
    path = project.path / "autotune.json"
    path.write_bytes(text.encode())
    for args in ((), ("--autotune",), ("--autotune-prune",)):
        result = project.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*pytest-autotune: {path}: *{message}*"])
        assert path.read_bytes() == text.encode()


WRITER = """
import sys
from pathlib import Path
from pytest_autotune.entry import Baseline, StoreEntry
from pytest_autotune.store import apply_changes
entry = StoreEntry(config={{"A": {n}}}, space_hash="h", baseline=Baseline(1.0))
for round in range(20):
    apply_changes(Path(sys.argv[1]), updates={{("dev", "t.py::w{n}_" + str(round)): entry}})
"""


def test_concurrent_writers_lose_no_entry(tmp_path: Path) -> None:
    """Four processes merge 20 entries each into one file at once: the lock and re-read keep all."""
    path = tmp_path / "autotune.json"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER.format(n=n), str(path)]) for n in range(4)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0, 0]
    assert len(Store.load(path).entries("dev")) == 4 * 20
