"""``python -m pytest_autotune merge``: the newer entry wins, nothing unchecked is written (issue 34).

A recovery file may be merged long after it was written, when the store already holds a newer
entry of the same test (re-tuned with changed code); merging must keep the newer one unless asked
to ``--overwrite``, and say what it replaced and kept. A store merged into itself, a target folder
that does not exist and a history holding NaN are refused, and the store stays as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.store import Store

NODE = "test_k.py::test_a"
TEST = """
from pytest_autotune import Interval, Set, tunable


@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_a(autotune):
    autotune.measure(lambda: None)
"""


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


def _tuned(project: pytest.Pytester) -> tuple[Path, str, dict[str, Any]]:
    """A project tuned once: its store, the device key and the stored entry's JSON."""
    project.makepyfile(test_k=TEST)
    project.runpytest("--autotune").assert_outcomes(passed=1)
    store = project.path / "autotune.json"
    ((device, slot),) = json.loads(store.read_text())["devices"].items()
    return store, device, slot["tests"][NODE]


def _older(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry as an older run measured it: another configuration, a slower baseline, no time
    of its own (written before entries carried one)."""
    old = {key: value for key, value in entry.items() if key not in ("measured_at", "history")}
    return {**old, "config": {"A": 1, "B": 1}, "baseline": {"median": 9e-4, "unit": "s"}}


def _recovery(folder: Path, device: str, entry: dict[str, Any], stamp: str = "20200101T000000Z") -> Path:
    path = folder / f"autotune.json.recovered-{stamp}.json"
    path.write_text(
        json.dumps({"schema_version": 1, "devices": {device: {"info": {}, "tests": {NODE: entry}}}})
    )
    return path


def test_an_older_recovery_entry_does_not_replace_a_newer_one(project: pytest.Pytester) -> None:
    """The issue's case: recovery written, then re-tuned, then the old recovery merged."""
    store, device, entry = _tuned(project)
    before = store.read_bytes()
    recovery = _recovery(project.path, device, _older(entry))
    done = _merge(project.path, str(recovery))
    assert done.returncode == 0, done.stderr
    assert store.read_bytes() == before
    assert f"merged 0 entries from {recovery} into {store}" in done.stdout
    assert f"  kept      {NODE} on {device}: the store's entry (measured " in done.stdout
    assert "is newer than the file's (2020-01-01T00:00:00Z); --overwrite takes the file's" in done.stdout
    assert "you may delete" not in done.stdout
    project.runpytest().assert_outcomes(passed=1)  # still judged against the newer baseline

    done = _merge(project.path, str(recovery), "--overwrite")
    assert done.returncode == 0, done.stderr
    assert f"  replaced  {NODE} on {device}: --overwrite" in done.stdout
    assert Store.load(store).entry(device, NODE).config == {"A": 1, "B": 1}  # type: ignore[union-attr]


def test_a_newer_recovery_entry_replaces_an_older_one_and_says_so(project: pytest.Pytester) -> None:
    store, device, entry = _tuned(project)
    stored = json.loads(store.read_text())
    stored["devices"][device]["tests"][NODE]["measured_at"] = "2020-01-01T00:00:00Z"
    store.write_text(json.dumps(stored))
    newer = {**_older(entry), "measured_at": "2021-06-01T12:00:00Z"}
    done = _merge(project.path, str(_recovery(project.path, device, newer)))
    assert done.returncode == 0, done.stderr
    assert (
        f"  replaced  {NODE} on {device}: the file's entry (measured 2021-06-01T12:00:00Z) is newer "
        "than the store's (2020-01-01T00:00:00Z)"
    ) in done.stdout
    assert "you may delete" in done.stdout
    assert Store.load(store).entry(device, NODE).measured_at == "2021-06-01T12:00:00Z"  # type: ignore[union-attr]


def test_entries_measured_after_the_store_was_last_written_are_newer(project: pytest.Pytester) -> None:
    """A store entry without a time is no newer than the file holding it."""
    store, device, entry = _tuned(project)
    stored = json.loads(store.read_text())
    del stored["devices"][device]["tests"][NODE]["measured_at"]
    store.write_text(json.dumps(stored))
    os.utime(store, (1_500_000_000, 1_500_000_000))  # last written in 2017
    done = _merge(project.path, str(_recovery(project.path, device, _older(entry))))
    assert done.returncode == 0, done.stderr
    assert "is newer than the store file (last written 2017-07-14T02:40:00Z)" in done.stdout


def test_every_entry_tuning_writes_carries_its_time(project: pytest.Pytester) -> None:
    _, _, entry = _tuned(project)
    assert entry["measured_at"].endswith("Z")
    assert len(entry["measured_at"]) == len("2026-01-01T00:00:00Z")


def test_a_store_merged_into_itself_is_refused(project: pytest.Pytester) -> None:
    store, _, _ = _tuned(project)
    before = store.read_bytes()
    for args in (["autotune.json"], [str(store), "--into", "autotune.json"]):
        done = _merge(project.path, *args)
        assert done.returncode == 1, done.stdout
        assert "are the same file: nothing to merge" in done.stderr
        assert "you may delete" not in done.stdout + done.stderr
    assert store.read_bytes() == before


def test_merge_into_a_missing_folder_is_an_error_and_creates_nothing(project: pytest.Pytester) -> None:
    _, device, entry = _tuned(project)
    recovery = _recovery(project.path, device, entry)
    done = _merge(project.path, str(recovery), "--into", "nowhere/autotune.json")
    assert done.returncode == 1
    assert "the folder nowhere does not exist" in done.stderr
    assert not (project.path / "nowhere").exists()


def test_merge_refuses_a_history_holding_nan_as_a_tuning_write_would(project: pytest.Pytester) -> None:
    store, device, entry = _tuned(project)
    before = store.read_bytes()
    damaged = {**_older(entry), "measured_at": "2030-01-01T00:00:00Z", "history": dict(entry["history"])}
    damaged["history"]["best"] = float("nan")
    recovery = project.path / "autotune.json.recovered-20300101T000000Z.json"
    recovery.write_text(
        json.dumps({"schema_version": 1, "devices": {device: {"info": {}, "tests": {NODE: damaged}}}})
    )
    done = _merge(project.path, str(recovery))
    assert done.returncode == 1, done.stdout
    assert f"refusing to write a damaged entry: {store}: entry {NODE!r}" in done.stderr
    assert "field 'history'" in done.stderr
    assert "nothing was merged" in done.stderr
    assert store.read_bytes() == before
    assert "NaN" not in store.read_text()


# -- issue 44: impossible dates, dangling links, times from the future -------------------------------
@pytest.mark.parametrize("stamp", ["20261399T999999Z", "00000000T000000Z"])
def test_a_recovery_name_with_an_impossible_date_is_noted_not_a_traceback(
    project: pytest.Pytester, stamp: str
) -> None:
    _, device, entry = _tuned(project)
    recovery = _recovery(project.path, device, _older(entry), stamp=stamp)
    done = _merge(project.path, str(recovery))
    assert "Traceback" not in done.stderr
    assert done.returncode == 0, done.stderr
    assert f"({stamp}) is no valid time: ignored" in done.stderr
    assert f"  kept      {NODE} on {device}: cannot tell which is newer" in done.stdout


def test_merge_into_a_dangling_link_to_a_missing_folder_is_refused(project: pytest.Pytester) -> None:
    _, device, entry = _tuned(project)
    recovery = _recovery(project.path, device, entry)
    (project.path / "link.json").symlink_to(project.path / "nowhere" / "autotune.json")
    done = _merge(project.path, str(recovery), "--into", "link.json")
    assert done.returncode == 1, done.stdout
    assert "a symbolic link to" in done.stderr
    assert "does not exist" in done.stderr
    assert not (project.path / "nowhere").exists()


def test_a_recovery_entry_from_the_future_does_not_replace_a_real_one(project: pytest.Pytester) -> None:
    store, device, entry = _tuned(project)
    before = store.read_bytes()
    future = {**_older(entry), "measured_at": "2099-01-01T00:00:00Z"}
    done = _merge(project.path, str(_recovery(project.path, device, future)))
    assert done.returncode == 0, done.stderr
    assert store.read_bytes() == before
    assert (
        f"  kept      {NODE} on {device}: the file's entry is dated 2099-01-01T00:00:00Z, in the future"
    ) in done.stdout
    assert "--overwrite takes the file's" in done.stdout


def test_a_store_entry_from_the_future_is_named_as_suspect(project: pytest.Pytester) -> None:
    store, device, entry = _tuned(project)
    stored = json.loads(store.read_text())
    stored["devices"][device]["tests"][NODE]["measured_at"] = "2099-01-01T00:00:00Z"
    store.write_text(json.dumps(stored))
    newer = {**_older(entry), "measured_at": "2026-06-01T12:00:00Z"}
    done = _merge(project.path, str(_recovery(project.path, device, newer)))
    assert done.returncode == 0, done.stderr
    assert (
        f"  kept      {NODE} on {device}: the store's entry is dated 2099-01-01T00:00:00Z, in the future"
        in (done.stdout)
    )
    done = _merge(project.path, str(_recovery(project.path, device, newer)), "--overwrite")
    assert Store.load(store).entry(device, NODE).measured_at == "2026-06-01T12:00:00Z"  # type: ignore[union-attr]
