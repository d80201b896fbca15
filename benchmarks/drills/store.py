"""Bad-input drills of the store: damaged ``autotune.json`` entries and files, and failed writes.

Each drill is a real ``pytest`` process (or several) on a generated project with a fake timer
(``benchmarks/drills/faults_kit.py``): two tunable tests are tuned first, then the store is damaged or made
unwritable and the runs a user would do follow. Three shapes cover most rows:

* a damaged *entry* (:func:`_entry_drill`): the plain run fails that test with an error naming the
  file, test id and field while the other test passes; a tuning run of the other test keeps the
  damaged entry exactly as it was; a tuning run of the damaged test replaces it;
* a damaged *file* (:func:`_file_drill`): plain and tuning runs stop with a usage error naming the
  file, which stays byte-identical;
* writes (symbolic link, modes, lock, read-only and unwritable places): the file and its link stay
  as they were, and results that cannot be written land in a recovery file that
  ``python -m pytest_autotune merge`` merges.

"data lost" is True when any entry or file byte the user had is gone (digests compared with
:func:`benchmarks.drills.bad_input_kit.digest`), or when a tuning run's results reached neither the store
nor a recovery file.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.drills.bad_input_kit import Drill, Observation, digest
from benchmarks.drills.faults_kit import LATE_READ_ONLY, clean_environment, make_store_project, run_pytest
from pytest_autotune.store import Store, StoreError, dumps, lock_path

__all__ = ["DRILLS"]

AREA = "store"
FIRST, SECOND = "test_store_0.py::test_kernel[0]", "test_store_0.py::test_kernel[1]"


def _tuned(directory: Path) -> tuple[Path, Path]:
    """A project with two tuned tests; returns (project, store)."""
    project = make_store_project(directory / "project", tests=2)
    done = run_pytest(project, "--autotune")
    if done.returncode != 0:
        raise RuntimeError(f"could not create the store:\n{done.stdout[-2000:]}")
    return project, project / "autotune.json"


def _document(store: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(store.read_text())
    return data


def _tests(data: dict[str, Any]) -> dict[str, Any]:
    (device,) = data["devices"].values()
    tests: dict[str, Any] = device["tests"]
    return tests


def _entry_json(store: Path, nodeid: str) -> str | None:
    """The entry's JSON text (None when absent or the file is unreadable)."""
    try:
        entry = _tests(_document(store)).get(nodeid)
    except (ValueError, KeyError):
        return None
    return None if entry is None else json.dumps(entry, sort_keys=True)


def _output(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


def _crashed(done: subprocess.CompletedProcess[str]) -> bool:
    text = _output(done)
    return done.returncode == 3 or any(w in text for w in ("INTERNALERROR", "AttributeError", "TypeError"))


# -- damaged entries -----------------------------------------------------------------------------------
def _entry_drill(name: str, field: str, change: Callable[[dict[str, Any]], None]) -> Drill:
    def run(directory: Path) -> Observation:
        project, store = _tuned(directory)
        data = _document(store)
        change(_tests(data)[FIRST])
        store.write_text(dumps(data))
        damaged, kept_second = _entry_json(store, FIRST), _entry_json(store, SECOND)
        before = digest(store)
        plain = run_pytest(project)
        text = _output(plain)
        named = all(s in text for s in ("damaged autotune entry", str(store), FIRST, f"field {field!r}"))
        plain_ok = plain.returncode == 1 and named and "1 passed, 1 error" in text and not _crashed(plain)
        lost = digest(store) != before
        other = run_pytest(project, "--autotune", SECOND)
        kept = _entry_json(store, FIRST) == damaged and other.returncode == 0 and not _crashed(other)
        lost |= _entry_json(store, FIRST) != damaged
        own = run_pytest(project, "--autotune", FIRST)
        try:
            repaired = own.returncode == 0 and Store.load(store).damaged() == []
        except StoreError:
            repaired = False
        lost |= _entry_json(store, SECOND) is None or (kept_second is None)
        observed = (
            f"plain run: exit {plain.returncode}, "
            f"{'error names file, test and field' if named else 'NOT named'}"
            f"; other test tuned: exit {other.returncode}, damaged entry {'kept' if kept else 'CHANGED'}"
            f"; --autotune of it: exit {own.returncode}, {'replaced' if repaired else 'NOT replaced'}"
        )
        return Observation(observed, plain_ok and kept and repaired, lost)

    expected = (
        f"plain run: that test errors naming file, test id and field {field!r}, the other passes; "
        "--autotune of another test keeps the entry as it is; --autotune of that test replaces it"
    )
    return Drill(AREA, name, expected, run)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    *parents, last = path.split(".")

    def change(entry: dict[str, Any]) -> None:
        for part in parents:
            entry = entry[part]
        entry[last] = value

    return change


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    *parents, last = path.split(".")

    def change(entry: dict[str, Any]) -> None:
        for part in parents:
            entry = entry[part]
        del entry[last]

    return change


ENTRY_DRILLS = [
    _entry_drill(
        "baseline.median NaN (before: INTERNALERROR on write)",
        "baseline.median",
        _set("baseline.median", math.nan),
    ),
    _entry_drill("baseline.median Infinity", "baseline.median", _set("baseline.median", math.inf)),
    _entry_drill("baseline.median -Infinity", "baseline.median", _set("baseline.median", -math.inf)),
    _entry_drill('baseline.median "0.0005" (string)', "baseline.median", _set("baseline.median", "0.0005")),
    _entry_drill("baseline.median -0.0005 (negative)", "baseline.median", _set("baseline.median", -0.0005)),
    _entry_drill("baseline.median 0", "baseline.median", _set("baseline.median", 0)),
    _entry_drill("baseline.median missing", "baseline.median", _drop("baseline.median")),
    _entry_drill("baseline.q1 NaN", "baseline.q1", _set("baseline.q1", math.nan)),
    _entry_drill('"baseline": "fast"', "baseline", _set("baseline", "fast")),
    _entry_drill('"config": [3] (not an object)', "config", _set("config", [3])),
    _entry_drill('"config": {"A": {"x": 1}} (nested object)', "config.A", _set("config.A", {"x": 1})),
    _entry_drill("space_hash missing", "space_hash", _drop("space_hash")),
    _entry_drill("unknown key in the entry", "colour", _set("colour", "red")),
    _entry_drill("unknown key in the baseline", "baseline.mean", _set("baseline.mean", 1e-4)),
    _entry_drill('"tuning.trials": "many"', "tuning.trials", _set("tuning.trials", "many")),
    _entry_drill('"commit_info": "abc"', "commit_info", _set("commit_info", "abc")),
]


def _not_an_object(directory: Path) -> Observation:
    project, store = _tuned(directory)
    data = _document(store)
    _tests(data)[FIRST] = 5
    store.write_text(dumps(data))
    before = digest(store)
    plain = run_pytest(project)
    text = _output(plain)
    ok = plain.returncode == 1 and "field 'entry' must be an object, got 5" in text and not _crashed(plain)
    lost = digest(store) != before
    own = run_pytest(project, "--autotune", FIRST)
    repaired = own.returncode == 0 and Store.load(store).damaged() == []
    observed = f"plain run: exit {plain.returncode}{', error names entry' if ok else ''}; --autotune of it: "
    observed += f"exit {own.returncode}{', replaced' if repaired else ''}"
    return Observation(observed, ok and repaired, lost or _entry_json(store, SECOND) is None)


def _damaged_entry_prune(directory: Path) -> Observation:
    project, store = _tuned(directory)
    data = _document(store)
    _tests(data)[FIRST]["baseline"] = "fast"
    store.write_text(dumps(data))
    before = digest(store)
    done = run_pytest(project, "--autotune-prune")
    ok = done.returncode == 1 and "field 'baseline'" in _output(done) and not _crashed(done)
    same = digest(store) == before
    observed = f"exit {done.returncode}, {'error names the field' if ok else 'NOT named'}, "
    observed += "file unchanged" if same else "file CHANGED"
    return Observation(observed, ok and same, not same)


# -- damaged files -------------------------------------------------------------------------------------
def _file_drill(name: str, damage: Callable[[bytes], bytes], message: str) -> Drill:
    def run(directory: Path) -> Observation:
        project, store = _tuned(directory)
        damaged = damage(store.read_bytes())
        store.write_bytes(damaged)
        before = digest(store)
        codes, named = [], True
        for args in ((), ("--autotune",)):
            done = run_pytest(project, *args)
            codes.append(done.returncode)
            text = _output(done)
            named &= f"pytest-autotune: {store}" in text and message in text and not _crashed(done)
        same = digest(store) == before
        observed = f"exit {codes[0]} (plain), {codes[1]} (--autotune); "
        observed += f"{'error names the file: ' + message if named else 'message NOT found'}; "
        observed += "file byte-identical" if same else "file CHANGED"
        return Observation(observed, codes == [4, 4] and named and same, not same)

    expected = f"usage error naming the file ({message}) in plain and tuning runs; file untouched"
    return Drill(AREA, name, expected, run)


def _duplicate_entry_key(text: bytes) -> bytes:
    return re.sub(
        rb'( *)"space_hash": ("[^"]*"),', rb'\1"space_hash": \2,\n\1"space_hash": "other",', text, count=1
    )


def _duplicate_test(text: bytes) -> bytes:
    data = json.loads(text)
    tests = _tests(data)
    body = json.dumps(tests[FIRST])
    inner = json.dumps(tests)[1:-1]
    device = next(iter(data["devices"]))
    return (
        '{"schema_version": 1, "devices": {'
        + json.dumps(device)
        + ': {"info": {}, "tests": {'
        + inner
        + ", "
        + json.dumps(FIRST)
        + ": "
        + body
        + "}}}}"
    ).encode()


FILE_DRILLS = [
    _file_drill("truncated file", lambda b: b[: len(b) // 2], "not valid JSON"),
    _file_drill("binary garbage", lambda b: bytes(range(256)) * 4, "cannot be read (not UTF-8"),
    _file_drill("UTF-8 byte order mark", lambda b: b"\xef\xbb\xbf" + b, "byte order mark"),
    _file_drill("empty file", lambda b: b"", "is empty"),
    _file_drill("top level is a list", lambda b: b"[" + b + b"]", "expected a JSON object at the top level"),
    _file_drill(
        "newer schema (2)",
        lambda b: b.replace(b'"schema_version": 1', b'"schema_version": 2'),
        "newer pytest-autotune",
    ),
    _file_drill(
        'schema_version "1" (string)',
        lambda b: b.replace(b'"schema_version": 1', b'"schema_version": "1"'),
        "no integer 'schema_version'",
    ),
    _file_drill(
        "devices is a list",
        lambda b: json.dumps({"schema_version": 1, "devices": [json.loads(b)["devices"]]}).encode(),
        "'devices' must be an object",
    ),
    _file_drill("duplicate key inside an entry", _duplicate_entry_key, "the key 'space_hash' appears twice"),
    _file_drill("duplicate test id", _duplicate_test, f"the key {FIRST!r} appears twice"),
]


# -- writes --------------------------------------------------------------------------------------------
def _symlinked(directory: Path) -> Observation:
    project = make_store_project(directory / "project", tests=2)
    shared = directory / "shared"
    shared.mkdir()
    target, link = shared / "team.json", project / "autotune.json"
    link.symlink_to(target)
    first = run_pytest(project, "--autotune", FIRST)
    target.chmod(0o640)
    before = _entry_json(target, FIRST)
    second = run_pytest(project, "--autotune", SECOND)
    mode = target.stat().st_mode & 0o777
    entries = Store.load(target).count() if target.exists() else 0
    ok = (
        first.returncode == second.returncode == 0
        and link.is_symlink()
        and os.readlink(link) == str(target)
        and mode == 0o640
        and entries == 2
        and sorted(p.name for p in shared.iterdir()) == ["team.json"]
    )
    observed = f"link {'kept' if link.is_symlink() else 'REPLACED'}, target mode {mode:o}, {entries} entries"
    return Observation(observed, ok, _entry_json(target, FIRST) != before)


def _mode_kept(directory: Path) -> Observation:
    project, store = _tuned(directory)
    store.chmod(0o664)
    before = _entry_json(store, SECOND)
    done = run_pytest(project, "--autotune", FIRST)
    mode = store.stat().st_mode & 0o777
    ok = done.returncode == 0 and mode == 0o664
    return Observation(
        f"exit {done.returncode}, mode {mode:o} after the write", ok, _entry_json(store, SECOND) != before
    )


def _umask() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    return 0o022


def _new_file_mode(directory: Path) -> Observation:
    _, store = _tuned(directory)
    mode, wanted = store.stat().st_mode & 0o777, 0o666 & ~_umask()
    return Observation(f"new file mode {mode:o} (umask {_umask():03o})", mode == wanted, False)


def _read_only(directory: Path) -> Observation:
    project, store = _tuned(directory)
    store.chmod(0o444)
    before = digest(store)
    plain = run_pytest(project)
    tune = run_pytest(project, "--autotune")
    named = "is read-only" in _output(tune) and str(store) in _output(tune)
    same = digest(store) == before
    ok = plain.returncode == 0 and tune.returncode == 4 and named and same
    observed = f"plain exit {plain.returncode}; --autotune exit {tune.returncode} before tuning"
    observed += f"{', names the file' if named else ''}; file {'unchanged' if same else 'CHANGED'}"
    return Observation(observed, ok, not same)


def _lock_in_the_way(directory: Path) -> Observation:
    project, store = _tuned(directory)
    before = digest(store)
    lock = lock_path(store)
    lock.unlink(missing_ok=True)
    lock.mkdir()  # root ignores permission bits: a directory is as unusable as another user's file
    try:
        done = run_pytest(project, "--autotune")
    finally:
        lock.rmdir()
    text = _output(done)
    named = f"its lock file {lock} cannot be opened" in text
    tuned = "passed" in done.stdout
    same = digest(store) == before
    ok = done.returncode == 4 and named and not tuned and same
    observed = f"exit {done.returncode} before tuning{', names the lock file' if named else ''}; "
    observed += f"file {'unchanged' if same else 'CHANGED'}"
    return Observation(observed, ok, not same)


def _merge(project: Path, recovery: Path, *into: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "merge", str(recovery), *into],
        cwd=project,
        env=clean_environment(PYTHONPATH=os.pathsep.join(sys.path)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _made_read_only(directory: Path) -> Observation:
    project = make_store_project(directory / "project", tests=0)
    (project / "test_late.py").write_text(LATE_READ_ONLY)
    store = project / "autotune.json"
    done = run_pytest(project, "--autotune")
    text = _output(done)
    recoveries = sorted(project.glob("autotune.json.recovered-*Z.json"))
    same = store.read_bytes() == (project / "snapshot.json").read_bytes()
    named = (
        bool(recoveries) and f"saved to {recoveries[0]}" in text and "python -m pytest_autotune merge" in text
    )
    store.chmod(0o644)
    merged = _merge(project, recoveries[0]) if recoveries else None
    entries = Store.load(store).tests(Store.load(store).devices()[0]) if store.exists() else []
    complete = entries == ["test_late.py::test_a", "test_late.py::test_b"]
    ok = (
        done.returncode == 1 and same and named and merged is not None and merged.returncode == 0 and complete
    )
    observed = f"exit {done.returncode}; store unchanged: {same}; recovery "
    observed += f"{recoveries[0].name if recoveries else 'MISSING'} named with merge command: {named}; "
    observed += f"merge exit {merged.returncode if merged else '-'}, {len(entries)} entries after"
    return Observation(observed, ok, not complete)


DIRECTORY_SWAP = """
import os
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3), strategy="exhaustive", isolate="none")
def test_a(autotune):
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 3), strategy="exhaustive", isolate="none")
def test_b(autotune):
    if not os.path.exists("moved"):  # test_a's entry is written by now: the store's place goes away
        os.rename("place", "moved")
        with open("place", "w") as f:
            f.write("a file where the store's directory was\\n")
    autotune.measure(lambda: None)
"""


def _place_gone(directory: Path) -> Observation:
    project = make_store_project(directory / "project", tests=0)
    (project / "test_swap.py").write_text(DIRECTORY_SWAP)
    (project / "place").mkdir()
    store = project / "place" / "autotune.json"
    done = run_pytest(project, "--autotune", f"--autotune-cache={store}")
    text = _output(done)
    cache = project / ".pytest_cache" / "d" / "autotune"
    recoveries = sorted(cache.glob("autotune.json.recovered-*Z.json"))
    named = bool(recoveries) and f"saved to {recoveries[0]}" in text
    (project / "place").unlink()
    (project / "moved").rename(project / "place")
    merged = _merge(project, recoveries[0], "--into", str(store)) if recoveries else None
    entries = Store.load(store).tests(Store.load(store).devices()[0]) if store.exists() else []
    complete = entries == ["test_swap.py::test_a", "test_swap.py::test_b"]
    ok = done.returncode == 1 and named and merged is not None and merged.returncode == 0 and complete
    observed = (
        f"exit {done.returncode}; recovery in {'.pytest_cache/d/autotune' if recoveries else 'NOWHERE'}"
    )
    observed += f", named: {named}; after restoring the directory and merging: {len(entries)} entries"
    return Observation(observed, ok, not complete)


def _file_in_the_way(directory: Path) -> Observation:
    project, _ = _tuned(directory)
    blocker = project / "not-a-directory"
    blocker.write_text("a file where a directory should be\n")
    done = run_pytest(project, "--autotune", f"--autotune-cache={blocker / 'autotune.json'}")
    named = str(blocker / "autotune.json") in _output(done)
    ok = done.returncode == 4 and named and blocker.read_text().startswith("a file")
    return Observation(
        f"exit {done.returncode} before tuning{', names the path' if named else ''}", ok, False
    )


WRITE_DRILLS = [
    Drill(
        AREA,
        "symlinked autotune.json (target mode 0640)",
        "written through the link; link and mode kept",
        _symlinked,
    ),
    Drill(AREA, "autotune.json with mode 0664", "mode 0664 kept after a write", _mode_kept),
    Drill(AREA, "no autotune.json yet", "created with mode 0666 & ~umask", _new_file_mode),
    Drill(
        AREA,
        "read-only autotune.json (0444)",
        "plain run passes; --autotune refused before tuning, file unchanged",
        _read_only,
    ),
    Drill(
        AREA,
        "lock file unusable (a directory in its place)",
        "--autotune refused before tuning naming the lock file",
        _lock_in_the_way,
    ),
    Drill(
        AREA,
        "store made read-only during --autotune",
        "run fails; unsaved results in autotune.json.recovered-*.json next to it, named with the merge "
        "command; merge works",
        _made_read_only,
    ),
    Drill(
        AREA,
        "store's directory replaced by a file during --autotune",
        "run fails; recovery file in the pytest cache (store's place unwritable), named; merge works",
        _place_gone,
    ),
    Drill(
        AREA,
        "--autotune-cache under a regular file",
        "usage error naming the path before tuning",
        _file_in_the_way,
    ),
    Drill(
        AREA,
        'entry that is not an object ("test": 5)',
        "plain run errors naming the entry; --autotune of it replaces it",
        _not_an_object,
    ),
    Drill(
        AREA,
        "damaged entry with --autotune-prune",
        "that test errors naming the field; the entry is not dropped",
        _damaged_entry_prune,
    ),
]

DRILLS: list[Drill] = [*ENTRY_DRILLS, *FILE_DRILLS, *WRITE_DRILLS]
