"""Bad-input drills of the files the plugin reads and writes (issue 34): non-regular files, merge
order, report targets, and launch geometries that are wrong for every configuration.

Each drill is a real ``pytest`` (or ``python -m pytest_autotune merge``) process on a generated
project with a fake timer (``benchmarks/drills/faults_kit.py``), with a time limit: a read of ``/dev/zero``
or of a FIFO that never ends fails its row by timing out instead of hanging the table.

* **non-regular files**: ``/dev/zero``, ``/dev/null``, a FIFO, a folder, a ``/proc`` file, and JSON
  nested 100 000 levels deep, as the store, a transfer source, a recovery file or ``--into``: a
  usage error (or, for a transfer source, a warning) naming the option or file, the store intact;
* **merge order**: a recovery file older than the store's entry leaves it (unless ``--overwrite``),
  a newer one replaces it, each listed; a store merged into itself, ``--into`` a missing folder and
  a history holding NaN are refused;
* **report targets**: an empty ``--autotune-report=``, a folder (or symbolic link to a site) whose
  ``index.html`` the report did not write, and an ``index.html`` that is a FIFO are refused, the
  page intact; the report's own page is replaced;
* **geometry**: a grid divisor callable returning a string fails the test at its first trial; a
  block size of 0 is that configuration's failure and never wins.

"data lost" is True when a file the user had changed (digests compared) or an entry went missing.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks.drills.bad_input_kit import Drill, Observation, digest
from benchmarks.drills.faults_kit import clean_environment, make_store_project, run_pytest

__all__ = ["DRILLS"]

AREA = "files"
#: JSON nested 100 000 levels deep (Python's parser raises RecursionError on it).
DEEP = "[" * 100_000 + "]" * 100_000
#: The limit on each process of a drill: a read that never ends fails the row instead of hanging.
LIMIT = 120.0
NODE = "test_store_0.py::test_kernel[0]"


def _output(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


def _bad(done: subprocess.CompletedProcess[str]) -> bool:
    text = _output(done)
    return any(word in text for word in ("INTERNALERROR", "RecursionError", "MemoryError", "Traceback"))


def _first_error(text: str) -> str:
    lines = [line for line in text.splitlines() if "ERROR" in line or "pytest-autotune:" in line]
    return (lines or text.strip().splitlines() or ["(no output)"])[0]


def _timed_out(
    call: Callable[[], subprocess.CompletedProcess[str]],
) -> subprocess.CompletedProcess[str] | str:
    try:
        return call()
    except subprocess.TimeoutExpired:
        return f"still running after {LIMIT:g}s (a read that never ends)"


def _merge(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "merge", *args],
        cwd=project,
        env=clean_environment(PYTHONPATH=os.pathsep.join(sys.path)),
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )


def _tuned(directory: Path) -> tuple[Path, Path]:
    project = make_store_project(directory / "project", tests=2)
    done = run_pytest(project, "--autotune", timeout=LIMIT)
    if done.returncode != 0:
        raise RuntimeError(f"could not create the store:\n{done.stdout[-2000:]}")
    return project, project / "autotune.json"


# -- non-regular files ---------------------------------------------------------------------------------
def _option_refused(
    option: str, needle: str, prepare: Callable[[Path], None] | None = None
) -> Callable[[Path], Observation]:
    """``pytest --autotune OPTION`` must be a usage error holding ``needle`` ({root}: the project)."""

    def run(directory: Path) -> Observation:
        project, store = _tuned(directory)
        if prepare is not None:
            prepare(project)
        before = digest(store)
        done = _timed_out(lambda: run_pytest(project, "--autotune", option, timeout=LIMIT))
        if isinstance(done, str):
            return Observation(done, passed=False, data_lost=digest(store) != before)
        text = _output(done)
        named = needle.format(root=project) in text
        ok = done.returncode == 4 and named and not _bad(done) and "does not exist" not in text
        return Observation(f"exit {done.returncode}: {_first_error(text)}", ok, digest(store) != before)

    return run


def _deep_store(directory: Path) -> Observation:
    project, store = _tuned(directory)
    store.write_text(DEEP)
    done = _timed_out(lambda: run_pytest(project, timeout=LIMIT))
    intact = store.read_text() == DEEP
    if isinstance(done, str):
        return Observation(done, passed=False, data_lost=not intact)
    text = _output(done)
    named = f"{store}: nests objects or arrays more than 64 levels deep" in text
    ok = done.returncode == 4 and named and not _bad(done) and intact
    return Observation(f"exit {done.returncode}: {_first_error(text)}", ok, not intact)


def _deep_transfer_source(directory: Path) -> Observation:
    project = make_store_project(directory / "project", tests=2)
    (project / "deep.json").write_text(DEEP)
    done = _timed_out(
        lambda: run_pytest(project, "--autotune", "--autotune-transfer-from=deep.json", timeout=LIMIT)
    )
    if isinstance(done, str):
        return Observation(done, passed=False)
    text = _output(done)
    warned = "--autotune-transfer-from: not used: " in text and "deep.json: nests objects" in text
    ok = done.returncode == 0 and warned and not _bad(done) and "fix or delete" not in text
    return Observation(f"exit {done.returncode}; warned naming the file: {warned}", ok)


def _merge_refused(make: Callable[[Path, Path], list[str]], needle: str) -> Callable[[Path], Observation]:
    """``merge ARGS`` (``make(project, store)``) must exit 1 with ``needle`` and leave the store."""

    def run(directory: Path) -> Observation:
        project, store = _tuned(directory)
        args = make(project, store)
        before = digest(store)
        done = _timed_out(lambda: _merge(project, *args))
        if isinstance(done, str):
            return Observation(done, passed=False, data_lost=digest(store) != before)
        text = _output(done)
        ok = done.returncode == 1 and needle in text and not _bad(done) and "you may delete" not in text
        return Observation(f"exit {done.returncode}: {_first_error(text)}", ok, digest(store) != before)

    return run


def _recovery(project: Path, store: Path, change: Callable[[dict[str, object]], None], stamp: str) -> Path:
    """A recovery file holding the store's first entry, changed by ``change``."""
    data = json.loads(store.read_text())
    (device,) = data["devices"]
    entry = data["devices"][device]["tests"][NODE]
    change(entry)
    path = project / f"autotune.json.recovered-{stamp}.json"
    devices = {device: {"info": data["devices"][device]["info"], "tests": {NODE: entry}}}
    path.write_text(json.dumps({"schema_version": 1, "devices": devices}))
    return path


def _older(entry: dict[str, object]) -> None:
    """The entry as an older run wrote it: another configuration, no time of its own."""
    entry.pop("measured_at", None)
    entry.pop("history", None)
    entry["config"] = {"A": 6}


def _nan_history(entry: dict[str, object]) -> None:
    entry["measured_at"] = "2099-01-01T00:00:00Z"
    history = entry["history"]
    assert isinstance(history, dict)
    history["best"] = float("nan")


def _write(path_text: str, text: str) -> Callable[[Path], None]:
    def prepare(project: Path) -> None:
        path = project / path_text
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    return prepare


def _fifo(path_text: str) -> Callable[[Path], None]:
    def prepare(project: Path) -> None:
        (project / path_text).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(project / path_text)

    return prepare


# -- merge order ---------------------------------------------------------------------------------------
def _merge_order(overwrite: bool) -> Callable[[Path], Observation]:
    def run(directory: Path) -> Observation:
        project, store = _tuned(directory)
        before = digest(store)
        recovery = _recovery(project, store, _older, "20200101T000000Z")
        done = _merge(project, str(recovery), *(["--overwrite"] if overwrite else []))
        text = _output(done)
        config = json.loads(store.read_text())["devices"]
        (slot,) = config.values()
        taken = slot["tests"][NODE]["config"] == {"A": 6}
        if overwrite:
            ok = done.returncode == 0 and taken and f"replaced  {NODE}" in text and "--overwrite" in text
            return Observation(f"exit {done.returncode}; the file's entry taken: {taken}", ok)
        listed = f"kept      {NODE}" in text and "is newer than the file's" in text
        same = digest(store) == before
        ok = done.returncode == 0 and same and listed and "you may delete" not in text
        observed = f"exit {done.returncode}; store unchanged: {same}; listed as kept: {listed}"
        return Observation(observed, ok, not same)

    return run


def _newer_replaces(directory: Path) -> Observation:
    project, store = _tuned(directory)

    # newer than the store's entry, yet not from the future (a future time is suspect: issue 44)
    data = json.loads(store.read_text())
    for slot in data["devices"].values():
        slot["tests"][NODE]["measured_at"] = "2020-01-01T00:00:00Z"
    store.write_text(json.dumps(data, indent=2))
    now = datetime.datetime.now(datetime.UTC)

    def newer(entry: dict[str, object]) -> None:
        _older(entry)
        entry["measured_at"] = now.strftime("%Y-%m-%dT%H:%M:%SZ")

    done = _merge(project, str(_recovery(project, store, newer, now.strftime("%Y%m%dT%H%M%SZ"))))
    text = _output(done)
    (slot,) = json.loads(store.read_text())["devices"].values()
    taken = slot["tests"][NODE]["config"] == {"A": 6}
    listed = f"replaced  {NODE}" in text and "is newer than the store's" in text
    ok = done.returncode == 0 and taken and listed
    return Observation(f"exit {done.returncode}; replaced and listed: {taken and listed}", ok)


def _missing_folder(directory: Path) -> Observation:
    project, store = _tuned(directory)
    recovery = _recovery(project, store, _older, "20200101T000000Z")
    done = _merge(project, str(recovery), "--into", "nowhere/autotune.json")
    created = (project / "nowhere").exists()
    ok = done.returncode == 1 and "the folder nowhere does not exist" in done.stderr and not created
    return Observation(
        f"exit {done.returncode}: {_first_error(_output(done))}; folder created: {created}", ok
    )


# -- report targets ------------------------------------------------------------------------------------
SITE = "<!DOCTYPE html>\n<html><head><title>Our site</title></head><body>docs</body></html>\n"


def _report_refused(
    option: str, page: str, prepare: Callable[[Path], None], needle: str
) -> Callable[[Path], Observation]:
    def run(directory: Path) -> Observation:
        project = make_store_project(directory / "project", tests=2)
        prepare(project)
        target = project / page
        before = digest(target) if target.is_file() else None
        done = _timed_out(lambda: run_pytest(project, "--autotune", option, timeout=LIMIT))
        if isinstance(done, str):
            return Observation(done, passed=False)
        after = digest(target) if target.is_file() else None
        text = _output(done)
        ok = done.returncode == 4 and needle in text and after == before and not _bad(done)
        return Observation(f"exit {done.returncode}: {_first_error(text)}", ok, after != before)

    return run


def _symlinked_site(project: Path) -> None:
    (project / "site").mkdir()
    (project / "site" / "index.html").write_text(SITE)
    (project / "report").symlink_to(project / "site")


def _own_page_replaced(directory: Path) -> Observation:
    project = make_store_project(directory / "project", tests=2)
    first = run_pytest(project, "--autotune-report=report", timeout=LIMIT)
    page = project / "report" / "index.html"
    before = page.read_text() if page.exists() else ""
    page.write_text(before.replace("<h1>", "<h1>earlier "))
    second = run_pytest(project, "--autotune-report=report", timeout=LIMIT)
    replaced = "<h1>earlier " not in page.read_text()
    ok = first.returncode == 0 and second.returncode == 0 and replaced
    return Observation(f"exits {first.returncode}, {second.returncode}; page replaced: {replaced}", ok)


# -- launch geometry -----------------------------------------------------------------------------------
GEOMETRY_TEST = """
from pytest_autotune import Geometry, Set, tunable


@tunable(BX=Set({values}), strategy="exhaustive", isolate="none",
         geometry=Geometry(1024, block_size_names=["BX"], grid_div_x={divisor}))
def test_k(autotune):
    global_size, local_size = autotune.launch
    autotune.measure(lambda: None)
"""


def _geometry(
    values: str, divisor: str, check: Callable[[str, int], tuple[bool, str]]
) -> Callable[[Path], Observation]:
    def run(directory: Path) -> Observation:
        project = make_store_project(directory / "project", tests=0)
        (project / "test_geometry.py").write_text(GEOMETRY_TEST.format(values=values, divisor=divisor))
        done = run_pytest(project, "--autotune", "-rA", timeout=LIMIT)
        ok, observed = check(_output(done), done.returncode)
        return Observation(observed, ok and "TypeError" not in _output(done))

    return run


def _declared_wrongly(text: str, code: int) -> tuple[bool, str]:
    named = "the launch geometry is declared wrongly: grid_div_x callable gave '1'" in text
    trials = "runtime" in text
    return (
        code == 1 and named and not trials,
        f"exit {code}; declaration error named: {named}; runtime trials: {trials}",
    )


def _zero_block(text: str, code: int) -> tuple[bool, str]:
    won = "{'BX': 8}" in text and "runtime 1" in text
    return code == 0 and won, f"exit {code}; BX=0 a runtime trial and BX=8 chosen: {won}"


DRILLS: list[Drill] = [
    Drill(
        AREA,
        "--autotune-cache=/dev/zero",
        "usage error naming the option and path; no MemoryError",
        _option_refused("--autotune-cache=/dev/zero", "--autotune-cache: /dev/zero is a character device"),
    ),
    Drill(
        AREA,
        "--autotune-cache=a FIFO",
        "usage error naming the FIFO at once; no hang",
        _option_refused("--autotune-cache=fifo", "{root}/fifo is a FIFO (named pipe)", _fifo("fifo")),
    ),
    Drill(
        AREA,
        "--autotune-cache=/proc/self/status",
        "usage error: a /proc file is no store",
        _option_refused("--autotune-cache=/proc/self/status", "kernel's /proc file system"),
    ),
    Drill(
        AREA,
        "--autotune-transfer-from=/dev/null",
        "usage error: a character device, not 'does not exist'",
        _option_refused("--autotune-transfer-from=/dev/null", "/dev/null is a character device"),
    ),
    Drill(
        AREA,
        "--autotune-transfer-from=a folder",
        "usage error: a directory, not 'does not exist'",
        _option_refused(
            "--autotune-transfer-from=tests", "{root}/tests is a directory", _write("tests/x", "")
        ),
    ),
    Drill(
        AREA,
        "autotune.json nested 100k levels deep",
        "usage error naming the file; no RecursionError; file untouched",
        _deep_store,
    ),
    Drill(
        AREA,
        "transfer source nested 100k levels deep",
        "warning naming the file, not used; the run passes",
        _deep_transfer_source,
    ),
    Drill(
        AREA,
        "merge REC --into /dev/full",
        "refused at once naming /dev/full; no memory eaten",
        _merge_refused(
            lambda p, s: [str(_recovery(p, s, _older, "20200101T000000Z")), "--into", "/dev/full"],
            "/dev/full is a character device, not a regular file",
        ),
    ),
    Drill(
        AREA,
        "merge /dev/zero",
        "refused naming /dev/zero; store unchanged",
        _merge_refused(lambda p, s: ["/dev/zero", "--into", str(s)], "/dev/zero: is a character device"),
    ),
    Drill(
        AREA,
        "merge a recovery file nested 100k levels deep",
        "refused naming the file; no RecursionError; store unchanged",
        _merge_refused(
            lambda p, s: [_write_deep(p / "deep.recovered-20200101T000000Z.json"), "--into", str(s)],
            "nests objects or arrays more than 64 levels deep",
        ),
    ),
    Drill(
        AREA,
        "merge an older recovery file over a re-tuned entry",
        "the store's newer entry kept and listed; store unchanged",
        _merge_order(overwrite=False),
    ),
    Drill(
        AREA,
        "merge an older recovery file with --overwrite",
        "the file's entry taken, listed as replaced (--overwrite)",
        _merge_order(overwrite=True),
    ),
    Drill(
        AREA, "merge a newer recovery file", "the store's older entry replaced and listed", _newer_replaces
    ),
    Drill(
        AREA,
        "merge autotune.json (the store into itself)",
        "refused: the same file; never 'you may delete autotune.json'",
        _merge_refused(lambda p, s: ["autotune.json"], "are the same file: nothing to merge"),
    ),
    Drill(
        AREA,
        "merge autotune.json --into ./autotune.json",
        "refused: the same file",
        _merge_refused(lambda p, s: [str(s), "--into", "./autotune.json"], "are the same file"),
    ),
    Drill(AREA, "merge --into a missing folder", "refused; no folder created", _missing_folder),
    Drill(
        AREA,
        "merge a recovery history holding NaN",
        "refused as a tuning write would be; store unchanged, no NaN in it",
        _merge_refused(
            lambda p, s: [str(_recovery(p, s, _nan_history, "20990101T000000Z"))],
            "refusing to write a damaged entry",
        ),
    ),
    Drill(
        AREA,
        "--autotune-report= (empty)",
        "usage error; the rootdir's index.html untouched",
        _report_refused("--autotune-report=", "index.html", _write("index.html", SITE), "an empty value"),
    ),
    Drill(
        AREA,
        "--autotune-report=DIR holding a foreign index.html",
        "usage error naming the page; page untouched",
        _report_refused(
            "--autotune-report=report",
            "report/index.html",
            _write("report/index.html", SITE),
            "exists and was not written by pytest-autotune",
        ),
    ),
    Drill(
        AREA,
        "--autotune-report=a symbolic link to a site folder",
        "usage error naming the site's page; page untouched",
        _report_refused(
            "--autotune-report=report",
            "site/index.html",
            _symlinked_site,
            "site/index.html exists and was not written",
        ),
    ),
    Drill(
        AREA,
        "--autotune-report=DIR whose index.html is a FIFO",
        "usage error at once; no hang",
        _report_refused(
            "--autotune-report=report", "report/x", _fifo("report/index.html"), "is a FIFO (named pipe)"
        ),
    ),
    Drill(AREA, "--autotune-report=DIR holding its own page", "the page is replaced", _own_page_replaced),
    Drill(
        AREA,
        "Geometry grid divisor returning a string",
        "the test fails at its first trial naming the declaration; no runtime trials, no TypeError",
        _geometry("1, 2, 4", "lambda p: str(p['BX'])", _declared_wrongly),
    ),
    Drill(
        AREA,
        "Geometry block size 0 in the space",
        "BX=0 is a failed trial; BX=8 wins",
        _geometry("0, 8", "[]", _zero_block),
    ),
]


def _write_deep(path: Path) -> str:
    path.write_text(DEEP)
    return str(path)
