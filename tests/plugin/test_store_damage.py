"""Damaged entries and files of autotune.json, and writes that cannot happen (issue 23).

Through pytest: a damaged entry is a clear error naming the file, test id, device and field in a
plain run, a tuning run of that test replaces it, and every other run keeps it as it was (NaN
included); a damaged file stays untouched. Writes go through a symbolic link and keep the file's
mode. A run whose results cannot be written puts them in a recovery file that
``python -m pytest_autotune merge`` merges.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.entry import Baseline, DamagedEntryError, StoreEntry
from pytest_autotune.recovery import default_target, merge, write_recovery
from pytest_autotune.store import Store, StoreError, apply_changes, dumps, lock_path

Entries = Callable[[], dict[str, dict[str, Any]]]

SLOW_B = """
import os
from pytest_autotune import Interval, Set, tunable


@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_a(autotune):
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_b(autotune):
    autotune.measure(lambda: None)
"""


def _tuned(project: pytest.Pytester) -> Path:
    project.makepyfile(test_k=SLOW_B)
    project.runpytest("--autotune").assert_outcomes(passed=2)
    return project.path / "autotune.json"


def _edit(path: Path, nodeid: str, change: Callable[[dict[str, Any]], None]) -> bytes:
    """Change one entry of the (one-device) store in place; returns the new bytes."""
    data = json.loads(path.read_text())
    (device,) = data["devices"].values()
    change(device["tests"][nodeid])
    path.write_text(dumps(data))
    return path.read_bytes()


def _entry_text(path: Path, nodeid: str) -> Any:
    data = json.loads(path.read_text())
    (device,) = data["devices"].values()
    return json.dumps(device["tests"][nodeid], sort_keys=True)


def _set_median(value: Any) -> Callable[[dict[str, Any]], None]:
    def change(entry: dict[str, Any]) -> None:
        entry["baseline"]["median"] = value

    return change


@pytest.mark.parametrize(
    ("change", "field", "why"),
    [
        (_set_median(math.nan), "baseline.median", "must be a finite number, got nan"),
        (_set_median(math.inf), "baseline.median", "must be a finite number, got inf"),
        (_set_median("0.0005"), "baseline.median", "must be a number, got a string '0.0005'"),
        (_set_median(-0.0005), "baseline.median", "must be a positive time in seconds, got -0.0005"),
        (_set_median(0), "baseline.median", "must be a positive time in seconds, got 0"),
        (lambda e: e.update(baseline="fast"), "baseline", "must be an object, got a string 'fast'"),
        (lambda e: e["baseline"].pop("median"), "baseline.median", "is missing"),
        (lambda e: e.update(config=[1, 2]), "config", "must be an object, got a list"),
        (lambda e: e.update(space_hash=7), "space_hash", "must be a non-empty string, got 7"),
        (lambda e: e.update(colour="red"), "colour", "is not a known key"),
        (lambda e: e["tuning"].update(trials=-1), "tuning.trials", "must be a non-negative integer"),
    ],
)
def test_a_damaged_entry_fails_its_plain_run_and_tuning_replaces_it(
    project: pytest.Pytester, change: Callable[[dict[str, Any]], None], field: str, why: str
) -> None:
    path = _tuned(project)
    damaged = _edit(path, "test_k.py::test_a", change)
    result = project.runpytest()
    result.assert_outcomes(passed=1, errors=1)  # test_b is not affected
    result.stdout.fnmatch_lines(
        [
            f"*damaged autotune entry: {path}: entry 'test_k.py::test_a' of device 'host:*': "
            f"field '{field}' {why}*; it is kept as it is until a tuning run replaces it: "
            "pytest --autotune 'test_k.py::test_a'*"
        ]
    )
    assert "AttributeError" not in result.stdout.str()
    assert "TypeError" not in result.stdout.str()
    assert path.read_bytes() == damaged
    # a tuning run of another test keeps the damaged entry exactly as it was (NaN included)
    kept = _entry_text(path, "test_k.py::test_a")
    project.runpytest("--autotune", "test_k.py::test_b").assert_outcomes(passed=1)
    assert _entry_text(path, "test_k.py::test_a") == kept
    damaged = path.read_bytes()
    # updating baselines refuses the damaged entry, names it, and keeps it
    refused = project.runpytest("--autotune-update-baseline", "test_k.py::test_a")
    refused.assert_outcomes(errors=1)
    assert path.read_bytes() == damaged
    # a tuning run of the damaged test replaces it; the other entry is byte-identical
    project.runpytest("--autotune=missing", "test_k.py::test_a").assert_outcomes(passed=1)
    entry = Store.load(path).entry(next(iter(Store.load(path).devices())), "test_k.py::test_a")
    assert entry is not None
    assert entry.baseline is not None
    assert entry.baseline.median == pytest.approx(1e-4)
    project.runpytest().assert_outcomes(passed=2)


def test_nan_baseline_no_longer_switches_the_check_off(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _tuned(project)
    _edit(path, "test_k.py::test_a", _set_median(math.nan))
    monkeypatch.setenv("AUTOTUNE_SLOW", "test_a=3")  # a 3x slower kernel must not pass
    result = project.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    assert "test_k.py::test_a" in result.stdout.str()


def test_nan_in_the_file_does_not_stop_later_tuning_runs(project: pytest.Pytester) -> None:
    """Before: NaN was read but could not be written, so every tuning run ended in INTERNALERROR."""
    path = _tuned(project)
    _edit(path, "test_k.py::test_a", _set_median(math.nan))
    _edit(path, "test_k.py::test_b", _set_median(math.inf))
    result = project.runpytest("--autotune")  # tunes both, replacing both damaged entries
    result.assert_outcomes(passed=2)
    assert "INTERNALERROR" not in result.stdout.str()
    store = Store.load(path)
    assert store.damaged() == []
    assert store.count() == 2


def test_duplicate_keys_are_a_file_error_and_the_file_stays(project: pytest.Pytester) -> None:
    path = _tuned(project)
    text = path.read_text().replace('"schema_version": 1', '"schema_version": 1,\n  "schema_version": 1')
    path.write_text(text)
    for args in ((), ("--autotune",)):
        result = project.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*pytest-autotune: {path}: the key 'schema_version' appears twice*"])
        assert path.read_text() == text


def test_writes_go_through_a_symlink_and_keep_the_mode(project: pytest.Pytester) -> None:
    shared = project.path / "shared"
    shared.mkdir()
    target = shared / "team.json"
    link = project.path / "autotune.json"
    link.symlink_to(target)
    old = os.umask(0o077)  # a writer with a strict umask must not make a shared file private
    try:
        _tuned(project)
        assert link.is_symlink()
        assert os.readlink(link) == str(target)
        assert stat_mode(target) == 0o600  # a new file: 0666 & ~umask
        target.chmod(0o644)
        project.runpytest("--autotune").assert_outcomes(passed=2)
        assert link.is_symlink()
        assert stat_mode(target) == 0o644
        assert Store.load(link).count() == 2
        assert sorted(p.name for p in shared.iterdir()) == ["team.json"]  # no temporary left
    finally:
        os.umask(old)


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_a_new_store_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        apply_changes(tmp_path / "autotune.json", updates={("d", "t.py::a"): _model(1e-4)})
    finally:
        os.umask(old)
    assert stat_mode(tmp_path / "autotune.json") == 0o644


def _model(median: float) -> StoreEntry:
    return StoreEntry(config={"A": 3}, space_hash="h", baseline=Baseline(median, unit="s"))


def test_an_unusable_lock_file_is_refused_before_tuning(project: pytest.Pytester) -> None:
    project.makepyfile(test_k=SLOW_B)
    path = project.path / "autotune.json"
    lock = lock_path(path)
    lock.unlink(missing_ok=True)
    lock.mkdir()  # as unusable as a lock file owned by another user (root ignores permission bits)
    try:
        result = project.runpytest("--autotune")
    finally:
        lock.rmdir()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{path}: its lock file {lock} cannot be opened*remove it*"])
    assert not path.exists()
    assert "PASSED" not in result.stdout.str()


LATE_READ_ONLY = """
import os, shutil
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_a(autotune):
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 3), strategy="exhaustive")
def test_b(autotune):
    if not os.path.exists("snapshot.json"):  # test_a's entry is written by now; freeze the file
        shutil.copy("autotune.json", "snapshot.json")
        os.chmod("autotune.json", 0o444)
    autotune.measure(lambda: None)
"""


def test_results_that_cannot_be_written_go_to_a_recovery_file(project: pytest.Pytester) -> None:
    project.makepyfile(test_late=LATE_READ_ONLY)
    path = project.path / "autotune.json"
    result = project.runpytest("--autotune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert path.read_bytes() == (project.path / "snapshot.json").read_bytes()
    (recovery,) = project.path.glob("autotune.json.recovered-*Z.json")
    result.stdout.fnmatch_lines(
        [
            f"*could not update the cache: {path}: is read-only*",
            f"*this run's results (1 entry) were saved to {recovery}",
            f"*merge them once {path} can be written: "
            f"python -m pytest_autotune merge {recovery} --into {path}",
        ]
    )
    saved = Store.load(recovery)
    assert [n for d in saved.devices() for n in saved.tests(d)] == ["test_late.py::test_b"]
    path.chmod(0o644)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "merge", str(recovery)],
        capture_output=True,
        text=True,
        check=False,
        cwd=project.path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert f"merged 1 entry from {recovery} into {path}" in done.stdout
    merged = Store.load(path)
    assert sorted(n for d in merged.devices() for n in merged.tests(d)) == [
        "test_late.py::test_a",
        "test_late.py::test_b",
    ]
    project.runpytest().assert_outcomes(passed=2)


def test_recovery_falls_back_when_the_store_directory_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    fallback = tmp_path / "cache"
    entries = {("dev", "t.py::a"): _model(2e-4)}
    recovery = write_recovery(blocker / "autotune.json", entries, {"dev": {"name": "x"}}, [fallback])
    assert recovery.parent == fallback
    assert recovery.name.startswith("autotune.json.recovered-")
    assert default_target(recovery) == fallback / "autotune.json"
    store = tmp_path / "autotune.json"
    assert [d.action for d in merge(recovery, store)] == ["added"]
    merged = Store.load(store)
    assert merged.entry("dev", "t.py::a") == entries["dev", "t.py::a"]
    assert merged.device_info("dev") == {"name": "x"}
    again = write_recovery(blocker / "autotune.json", entries, None, [fallback])
    assert again != recovery  # never overwrites an earlier recovery file


def test_merge_refuses_a_damaged_recovery_file_and_changes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "autotune.json"
    apply_changes(store, updates={("dev", "t.py::a"): _model(1e-4)})
    before = store.read_bytes()
    recovery = tmp_path / "autotune.json.recovered-20260101T000000Z.json"
    bad = {"schema_version": 1, "devices": {"dev": {"tests": {"t.py::a": {"config": {}, "space_hash": 1}}}}}
    recovery.write_text(json.dumps(bad))
    done = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "merge", str(recovery)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 1
    assert "nothing was merged" in done.stderr
    assert "field 'space_hash'" in done.stderr
    assert store.read_bytes() == before
    with pytest.raises(StoreError, match="no such file"):
        merge(tmp_path / "missing.json", store)


def test_a_damaged_entry_is_loaded_as_its_error(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    apply_changes(path, updates={("dev", "t.py::a"): _model(1e-4), ("dev", "t.py::b"): _model(1e-4)})
    text = path.read_text().replace("0.0001", "NaN", 1)
    path.write_text(text)
    store = Store.load(path)
    assert store.tests("dev") == ["t.py::a", "t.py::b"]
    assert list(store.entries("dev")) == ["t.py::b"]
    with pytest.raises(DamagedEntryError) as info:
        store.entry("dev", "t.py::a")
    assert (info.value.field, info.value.where) == (
        "baseline.median",
        f"{path}: entry 't.py::a' of device 'dev'",
    )
    # writing another entry keeps the damaged one as it was read
    apply_changes(path, updates={("dev", "t.py::c"): _model(3e-4)})
    assert '"median": NaN' in path.read_text()
    # the writer refuses to create a damaged entry itself
    with pytest.raises(StoreError, match="refusing to write a damaged entry"):
        apply_changes(path, updates={("dev", "t.py::d"): _model(math.nan)})
