"""Cost of a large ``autotune.json``: a plain run and a one-test ``--autotune`` run against a store of
one entry and of many (issue 44: 10 000 entries took a plain run from 3.5 s to 10.6 s and ``--autotune``
on one test from 13 s to 47 s, and ``-q`` printed every unused id).

The project holds one tunable test timed by a fake timer; the store gets ``--entries`` distinct
entries of tests of a file that is gone (unused entries, as after a big rename), each with a history
of 19 trials. Reported per store size: the seconds of a plain ``pytest -q`` and of ``pytest -q
--autotune``, and the bytes the plain run printed. Run alone, with ``nice``, and report the load::

    nice -n 10 .venv/bin/python -m benchmarks big-store [--entries 10000] [--repeat 3]

Run it on two checkouts (before and after a change) to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import format_table

NAME = "big-store"
QUESTION = "what does a store of 10 000 entries cost a plain run and a one-test --autotune run?"

CONFTEST = """
import pytest

from pytest_autotune.testing import FakeTimer, bowl


@pytest.fixture
def autotune_timer():
    return FakeTimer(bowl)
"""

TEST = """
from pytest_autotune import Interval, Set, tunable


@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_a(autotune):
    autotune.measure(lambda: None)
"""


def _pytest(project: Path, *args: str) -> tuple[float, int]:
    """Seconds of one pytest run in ``project`` and the bytes it printed."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args],
        cwd=project,
        check=False,
        capture_output=True,
        env={**os.environ, "PYTEST_AUTOTUNE_ISOLATE": "none"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"pytest {' '.join(args)} failed:\n{done.stdout.decode()[-2000:]}")
    return time.perf_counter() - start, len(done.stdout) + len(done.stderr)


def _grow(store: Path, entries: int) -> None:
    """Add ``entries`` distinct unused entries (a copy of the tuned one, its numbers varied)."""
    data = json.loads(store.read_text())
    (slot,) = data["devices"].values()
    model = slot["tests"]["test_k.py::test_a"]
    for i in range(entries):
        entry = json.loads(json.dumps(model))
        entry["baseline"]["median"] = model["baseline"]["median"] * (1 + i / entries)
        history = entry.get("history")
        if history:
            history["trials"] = [[row[0] * (1 + i / 1e6), *row[1:]] for row in history["trials"]]
        slot["tests"][f"test_gone.py::test_{i:05d}"] = entry
    store.write_text(json.dumps(data, indent=2))


def measure(entries: int, repeat: int) -> list[list[object]]:
    """Per store size (1 and ``entries``): seconds of a plain run and of ``--autotune``, bytes printed."""
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="big-store-") as tmp:
        project = Path(tmp)
        (project / "conftest.py").write_text(CONFTEST)
        (project / "test_k.py").write_text(TEST)
        _pytest(project, "--autotune")
        store = project / "autotune.json"
        tuned = store.read_text()
        for size in (1, entries):
            store.write_text(tuned)
            if size > 1:
                _grow(store, size - 1)
            grown = store.read_text()
            plain = min(_pytest(project)[0] for _ in range(repeat))
            printed = _pytest(project)[1]
            tune_times = []
            for _ in range(repeat):
                store.write_text(grown)
                tune_times.append(_pytest(project, "--autotune")[0])
            rows.append(
                [size, f"{store.stat().st_size / 1e6:.1f}", f"{plain:.2f}", f"{min(tune_times):.2f}", printed]
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks big-store", description=QUESTION)
    parser.add_argument("--entries", type=int, default=10_000, help="entries in the large store")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions (minimum reported)")
    args = parser.parse_args()
    rows = measure(args.entries, args.repeat)
    print(format_table(["entries", "MB", "plain run s", "--autotune s", "bytes printed (-q)"], rows))


if __name__ == "__main__":
    main()
