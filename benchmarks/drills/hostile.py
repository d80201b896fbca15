"""Bad-input drills of the fourth round of hostile inputs (issue 44): output paths that are FIFOs,
``--autotune-cluster`` addresses, ``merge`` with impossible dates, times from the future and
dangling links, ``show``/``diff`` on stores that are not UTF-8, hold a 5000-digit integer or ids
with terminal escapes, the plugin's warnings under ``-W error``, thousands of unused entries under
``-q``, strategy option messages and ``from_triton``'s hooks and fixture names.

Each drill is a real ``pytest``, ``python -m pytest_autotune merge`` or ``show``/``diff`` process on
a generated project with a fake timer (``benchmarks/drills/faults_kit.py``), under a time limit so
that a hang fails its row. A row passes when the outcome is the clear one the issue asks for (a
usage error or message naming the option, file or entry at fault, never a traceback) and the
store the user had is unchanged where nothing should change.

    python -m benchmarks bad-input-drills --area hostile
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.drills.bad_input_kit import Drill, Observation, digest
from benchmarks.drills.faults_kit import clean_environment, make_store_project, run_pytest

__all__ = ["DRILLS"]

AREA = "hostile"
#: The limit on each process of a drill: a hang fails the row instead of the table.
LIMIT = 120.0
NODE = "test_store_0.py::test_kernel[0]"
#: A conftest whose fake timer slows the tests named in ``$AUTOTUNE_SLOW`` (``"name=factor"``).
SLOW_CONFTEST = """
import os

import pytest

from pytest_autotune.testing import FakeTimer, bowl


@pytest.fixture
def autotune_timer():
    return FakeTimer(bowl, slowdown=os.environ.get("AUTOTUNE_SLOW", ""))
"""


def _output(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout + done.stderr


def _bad(text: str) -> bool:
    return any(word in text for word in ("INTERNALERROR", "Traceback", "MemoryError"))


def _first(text: str, *needles: str) -> str:
    """The first line holding one of ``needles`` (else the last line): what the row shows."""
    lines = text.splitlines()
    found = [line for line in lines if any(n in line for n in needles)]
    return " ".join((found or lines[-1:] or ["(no output)"])[0].split())


def _missing(text: str, needles: Sequence[str]) -> list[str]:
    return [n for n in needles if n not in text]


def _observed(done: subprocess.CompletedProcess[str], needles: Sequence[str], note: str = "") -> str:
    text = _output(done)
    missing = _missing(text, needles)
    shown = f"exit {done.returncode}: {_first(text, *needles[:1])}" + (f"; {note}" if note else "")
    return shown + (f" | missing: {missing}" if missing else "")


def _module(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m pytest_autotune ARGS`` (merge, show, diff) in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_autotune", *args],
        cwd=cwd,
        env=clean_environment(PYTHONPATH=os.pathsep.join(sys.path)),
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )


def _tuned(directory: Path, tests: int = 2) -> tuple[Path, Path]:
    project = make_store_project(directory / "project", tests=tests)
    done = run_pytest(project, "--autotune", timeout=LIMIT)
    if done.returncode != 0:
        raise RuntimeError(f"could not create the store:\n{done.stdout[-2000:]}")
    return project, project / "autotune.json"


def _slot(store: Path) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """The store's data, its one device key and that device's tests."""
    data = json.loads(store.read_text())
    (device,) = data["devices"]
    return data, device, data["devices"][device]["tests"]


# -- 1: output paths ------------------------------------------------------------------------------------
def _output_fifo(option: str) -> Callable[[Path], Observation]:
    """``pytest OPTION=fifo`` must be a usage error at start naming the FIFO, and never hang."""

    def run(directory: Path) -> Observation:
        project = make_store_project(directory / "project", tests=2)
        os.mkfifo(project / "fifo")
        needles = [f"{option}: {project / 'fifo'} is a FIFO (named pipe), not a regular file"]
        try:
            done = run_pytest(project, f"{option}=fifo", timeout=LIMIT)
        except subprocess.TimeoutExpired:
            return Observation(f"still running after {LIMIT:g}s (the write waits for a reader)", False)
        ok = done.returncode == 4 and not _missing(_output(done), needles) and not _bad(_output(done))
        return Observation(_observed(done, needles), ok)

    return run


# -- 2, 9: --autotune-cluster ---------------------------------------------------------------------------
def _bad_address(address: str) -> Callable[[Path], Observation]:
    def run(directory: Path) -> Observation:
        project = make_store_project(directory / "project", tests=2)
        done = run_pytest(project, "--autotune", f"--autotune-cluster={address}", timeout=LIMIT)
        needles = ["--autotune-cluster:"]
        ok = done.returncode == 4 and needles[0] in done.stderr and not _bad(_output(done))
        return Observation(_observed(done, needles), ok)

    return run


def _cluster_without_isolation(directory: Path) -> Observation:
    project = make_store_project(directory / "project", tests=2)  # its tests say isolate="none"
    done = run_pytest(project, "--autotune", "--autotune-cluster=tcp://127.0.0.1:9", timeout=LIMIT)
    needles = ["--autotune-cluster=tcp://127.0.0.1:9 needs isolated trials"]
    ok = done.returncode == 0 and not _missing(_output(done), needles) and not _bad(_output(done))
    return Observation(_observed(done, needles), ok)


# -- 3, 10: merge ---------------------------------------------------------------------------------------
def _recovery(project: Path, store: Path, stamp: str, measured_at: str | None) -> Path:
    """A recovery file named with ``stamp`` holding the store's first entry with another
    configuration, dated ``measured_at`` (None: undated, as an older version wrote it)."""
    data, device, tests = _slot(store)
    entry = dict(tests[NODE])
    entry.pop("history", None)
    entry.pop("measured_at", None)
    entry["config"] = {"A": 6}
    if measured_at is not None:
        entry["measured_at"] = measured_at
    info = data["devices"][device]["info"]
    path = project / f"autotune.json.recovered-{stamp}.json"
    document = {"schema_version": 1, "devices": {device: {"info": info, "tests": {NODE: entry}}}}
    path.write_text(json.dumps(document))
    return path


def _merge_kept(stamp: str, measured_at: str | None, needles: Sequence[str]) -> Callable[[Path], Observation]:
    """``merge RECOVERY`` must exit 0 with ``needles`` and leave the store's entry as it was."""

    def run(directory: Path) -> Observation:
        project, store = _tuned(directory)
        before = digest(store)
        done = _module("merge", str(_recovery(project, store, stamp, measured_at)), cwd=project)
        same = digest(store) == before
        ok = (
            done.returncode == 0 and same and not _missing(_output(done), needles) and not _bad(_output(done))
        )
        return Observation(_observed(done, needles, f"store unchanged: {same}"), ok, not same)

    return run


def _merge_into_dangling_link(directory: Path) -> Observation:
    project, store = _tuned(directory)
    recovery = _recovery(project, store, "20200101T000000Z", None)
    (project / "link.json").symlink_to(project / "nowhere" / "autotune.json")
    done = _module("merge", str(recovery), "--into", "link.json", cwd=project)
    created = (project / "nowhere").exists()
    needles = ["a symbolic link to", "does not exist"]
    ok = (
        done.returncode == 1
        and not created
        and not _missing(done.stderr, needles)
        and not _bad(_output(done))
    )
    return Observation(_observed(done, needles, f"folder created: {created}"), ok)


# -- 4, 5, 11: show and diff ----------------------------------------------------------------------------
def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=d@d", "-c", "user.name=d", *args], cwd=root, check=True, capture_output=True
    )


def _diff_not_utf8_at_ref(directory: Path) -> Observation:
    project, store = _tuned(directory)
    good = store.read_bytes()
    _git(project, "init", "-q")
    store.write_bytes(b'{"schema_version": 1, "devices": {"\xff\xfe": {}}}\n')
    _git(project, "add", "autotune.json")
    _git(project, "commit", "-qm", "garbled")
    store.write_bytes(good)
    done = _module("diff", "HEAD", "--file", "autotune.json", cwd=project)
    needles = ["at HEAD:", "cannot be read (not UTF-8 text"]
    ok = done.returncode == 1 and not _missing(done.stderr, needles) and not _bad(_output(done))
    return Observation(_observed(done, needles), ok, store.read_bytes() != good)


def _huge_integer(store: Path) -> str:
    """Put an integer of 5000 digits in the first entry's baseline median; returns the text."""
    data, _, tests = _slot(store)
    tests[NODE]["baseline"]["median"] = 1.0
    text = json.dumps(data).replace('"median": 1.0', '"median": ' + "9" * 5000, 1)
    store.write_text(text)
    return text


HUGE = ["holds an integer of 5000 digits at", f'"{NODE}" -> "baseline" -> "median"']


def _huge_plain_run(directory: Path) -> Observation:
    project, store = _tuned(directory)
    text = _huge_integer(store)
    done = run_pytest(project, timeout=LIMIT)
    output = _output(done)
    needles = [f"{store}: {HUGE[0]}", HUGE[1]]
    intact = store.read_text() == text
    ok = (
        done.returncode == 4
        and not _missing(output, needles)
        and "set_int_max_str_digits" not in output
        and not _bad(output)
        and intact
    )
    return Observation(_observed(done, needles), ok, not intact)


def _huge_show(directory: Path) -> Observation:
    project, store = _tuned(directory)
    _huge_integer(store)
    done = _module("show", "--file", "autotune.json", cwd=project)
    ok = (
        done.returncode == 1
        and not _missing(done.stderr, HUGE)
        and "set_int_max_str_digits" not in done.stderr
        and not _bad(_output(done))
    )
    return Observation(_observed(done, HUGE), ok)


def _show_fifo(directory: Path) -> Observation:
    os.mkfifo(directory / "fifo")
    try:
        done = _module("show", "--file", "fifo", cwd=directory)
    except subprocess.TimeoutExpired:
        return Observation(f"still running after {LIMIT:g}s", False)
    needles = ["is a FIFO (named pipe)"]
    ok = (
        done.returncode == 1
        and not _missing(done.stderr, needles)
        and "no such file" not in done.stderr.lower()
        and not _bad(_output(done))
    )
    return Observation(_observed(done, needles), ok)


HOSTILE_ID = "test_gone.py::test_k[\x1b[2J\x1b[31mred\u202egnp.exe]"


def _show_escapes(directory: Path) -> Observation:
    project, store = _tuned(directory)
    data, _, tests = _slot(store)
    tests[HOSTILE_ID] = tests[NODE]
    store.write_text(json.dumps(data))
    done = _module("show", "--file", "autotune.json", cwd=project)
    raw = "\x1b" in done.stdout or "\u202e" in done.stdout
    needles = ["test_gone.py::test_k[\\x1b[2J\\x1b[31mred\\u202egnp.exe]"]
    ok = done.returncode == 0 and not raw and not _missing(done.stdout, needles) and not _bad(_output(done))
    return Observation(_observed(done, needles, f"raw escapes printed: {raw}"), ok)


def _diff_md_code_span(directory: Path) -> Observation:
    """An entry added since HEAD whose id holds a backtick and a backslash: one code span, as written."""
    project, store = _tuned(directory)
    _git(project, "init", "-q")
    _git(project, "add", "autotune.json")
    _git(project, "commit", "-qm", "tuned")
    data, _, tests = _slot(store)
    tests["test_store_0.py::test_kernel[a`b\\c]"] = tests[NODE]
    store.write_text(json.dumps(data))
    done = _module("diff", "HEAD", "--md", "--file", "autotune.json", cwd=project)
    needles = ["| ``test_store_0.py::test_kernel[a`b\\c]`` |"]
    ok = done.returncode == 0 and not _missing(done.stdout, needles) and not _bad(_output(done))
    return Observation(_observed(done, needles), ok)


# -- 7: -W error ----------------------------------------------------------------------------------------
def _warning_as_error(directory: Path) -> Observation:
    project, _ = _tuned(directory)
    (project / "conftest.py").write_text(SLOW_CONFTEST)
    args = ["--autotune-check=warn", "--autotune-report-md=summary.md"]
    args += ["-W", "error::pytest_autotune.warning_types.AutotuneWarning"]
    done = run_pytest(project, *args, timeout=LIMIT, AUTOTUNE_SLOW="test_kernel[0]=3")
    output = _output(done)
    needles = [f"AutotuneRegressionWarning (an error under the warning filters, e.g. -W error): {NODE}"]
    summary = (project / "summary.md").read_text() if (project / "summary.md").exists() else ""
    counted = "2 tunable tests" in summary
    ok = (
        done.returncode == 1
        and "1 failed, 1 passed" in output
        and not _missing(output, needles)
        and "pytest_autotune/plugin" not in output
        and counted
        and not _bad(output)
    )
    return Observation(_observed(done, needles, f"summary counts 2 tests: {counted}"), ok)


# -- 8: thousands of unused entries under -q ------------------------------------------------------------
def _unused_summarised(directory: Path) -> Observation:
    project, store = _tuned(directory, tests=1)
    data, _, tests = _slot(store)
    for index in range(2000):
        tests[f"test_gone.py::test_{index:05d}"] = tests[NODE]
    store.write_text(json.dumps(data))
    done = run_pytest(project, "-q", timeout=LIMIT)
    needles = ["unused entries (remove: pytest --autotune-prune): 2000", "... and 1990 more (pytest -v"]
    size = len(done.stdout)
    ok = done.returncode == 0 and not _missing(done.stdout, needles) and size < 5000
    return Observation(_observed(done, needles, f"{size} characters of output"), ok)


# -- 12, 13: declarations -------------------------------------------------------------------------------
def _collected(source: str, code: int, needles: Sequence[str]) -> Callable[[Path], Observation]:
    """``pytest --collect-only`` on ``source`` must exit ``code`` with every one of ``needles``."""

    def run(directory: Path) -> Observation:
        project = make_store_project(directory / "project", tests=0)
        (project / "test_k.py").write_text(source)
        done = run_pytest(project, "--collect-only", "-p", "no:cacheprovider", timeout=LIMIT)
        output = _output(done)
        ok = done.returncode == code and not _missing(output, needles) and "INTERNALERROR" not in output
        return Observation(_observed(done, needles), ok)

    return run


def _options(options: str, strategy: str = "random") -> str:
    return (
        "from pytest_autotune import Interval, tunable\n\n\n"
        f'@tunable(X=Interval(1, 8), strategy="{strategy}", strategy_options={options})\n'
        "def test_k(autotune):\n    autotune.measure(lambda: None)\n"
    )


TRITON = """
from types import SimpleNamespace

from pytest_autotune import from_triton, tunable


def config(kwargs, **hooks):
    return SimpleNamespace(kwargs=kwargs, num_warps=4, num_stages=None, num_ctas=None, maxnreg=None, **hooks)


@tunable(**from_triton({configs}))
def test_k(autotune):
    autotune.measure(lambda: None)
"""


DRILLS: list[Drill] = [
    Drill(
        AREA,
        "--autotune-json=a FIFO",
        "usage error at start naming the FIFO; no hang after the tests",
        _output_fifo("--autotune-json"),
    ),
    Drill(
        AREA,
        "--autotune-report-md=a FIFO",
        "usage error at start naming the FIFO; no hang after the tests",
        _output_fifo("--autotune-report-md"),
    ),
    Drill(
        AREA,
        "--autotune-cluster='not an address'",
        "one usage error naming the option; no traceback",
        _bad_address("not an address"),
    ),
    Drill(
        AREA,
        "--autotune-cluster=tcp://[::1",
        "one usage error naming the option; no traceback",
        _bad_address("tcp://[::1"),
    ),
    Drill(
        AREA,
        "--autotune-cluster with isolate='none' tests",
        "a warning that the trials run here; the tests pass",
        _cluster_without_isolation,
    ),
    Drill(
        AREA,
        "merge a recovery file named ...-20261399T999999Z.json",
        "a note that the name's time is invalid; no traceback; entry kept",
        _merge_kept(
            "20261399T999999Z",
            None,
            ["(20261399T999999Z) is no valid time: ignored", f"kept      {NODE}"],
        ),
    ),
    Drill(
        AREA,
        "merge a recovery entry dated 2099",
        "suspect: kept, named as in the future, --overwrite offered",
        _merge_kept(
            "20990101T000000Z",
            "2099-01-01T00:00:00Z",
            ["the file's entry is dated 2099-01-01T00:00:00Z, in the future", "--overwrite takes the file's"],
        ),
    ),
    Drill(
        AREA,
        "merge --into a dangling link to a missing folder",
        "refused naming the link; no folder created",
        _merge_into_dangling_link,
    ),
    Drill(
        AREA,
        "diff HEAD when the store at HEAD is not UTF-8",
        "exit 1 naming the file at HEAD: not UTF-8; no UnicodeDecodeError",
        _diff_not_utf8_at_ref,
    ),
    Drill(
        AREA,
        "pytest on a store holding a 5000-digit integer",
        "usage error naming autotune.json and the entry's field; no sys.set_int_max_str_digits advice",
        _huge_plain_run,
    ),
    Drill(
        AREA,
        "show on a store holding a 5000-digit integer",
        "exit 1 naming the file and the entry's field; no traceback",
        _huge_show,
    ),
    Drill(AREA, "show --file a FIFO", "exit 1: 'is a FIFO', not 'no such file'; no hang", _show_fifo),
    Drill(
        AREA,
        "show on ids holding terminal escapes and U+202E",
        "the ids printed with the characters escaped",
        _show_escapes,
    ),
    Drill(
        AREA,
        "diff --md on an id holding a backtick and a backslash",
        "one code span holding both as written",
        _diff_md_code_span,
    ),
    Drill(
        AREA,
        "-W error on a regression warning (--autotune-check=warn)",
        "the test fails with the warning's text, no plugin traceback; the summary counts every test",
        _warning_as_error,
    ),
    Drill(
        AREA,
        "-q with 2000 unused entries",
        "the count and 10 ids, then '... and 1990 more'",
        _unused_summarised,
    ),
    Drill(
        AREA,
        "strategy_options={'max_fevals': None}",
        "collection fails: max_fevals=None needs a value (not 'unknown option')",
        _collected(_options('{"max_fevals": None}'), 2, ["max_fevals=None", "needs a value"]),
    ),
    Drill(
        AREA,
        "strategy_options={'time_limit': nan}",
        "collection fails echoing time_limit=nan as written",
        _collected(
            _options('{"time_limit": float("nan")}'), 2, ["time_limit=nan", "a positive number of seconds"]
        ),
    ),
    Drill(
        AREA,
        "genetic_algorithm with popsize=0",
        "collection fails: population=0 must be at least 2",
        _collected(_options('{"popsize": 0}', "genetic_algorithm"), 2, ["population=0 must be at least 2"]),
    ),
    Drill(
        AREA,
        "from_triton on a config with a pre_hook",
        "collected, with a warning naming the config and its dropped pre_hook",
        _collected(
            TRITON.format(configs="[config({'BLOCK': 64}), config({'BLOCK': 128}, pre_hook=print)]"),
            0,
            ["config 1 (BLOCK=128) has a pre_hook, which is not carried over"],
        ),
    ),
    Drill(
        AREA,
        "from_triton on a config keyword 'torch_device'",
        "collection fails: the name of the plugin's fixture torch_device",
        _collected(
            TRITON.format(configs="[{'BLOCK': 64, 'torch_device': 1}]"),
            2,
            ["config keyword 'torch_device' has the name of the plugin's fixture torch_device"],
        ),
    ),
]
