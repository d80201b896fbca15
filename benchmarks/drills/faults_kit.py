"""Fault drills on real ``pytest`` processes: interrupt and kill tuning, then resume; damage the store.

Shared by the quick tests in ``tests/faults/`` and the full drill ``benchmarks/drills/faults.py``.
Every drill runs pytest in a subprocess on a generated project whose timings come from a fake
timer (a function of the configuration), so results are deterministic and comparable between runs.

* :func:`resume_drill`: tune a project once without interruption (the reference), then again with
  a pause in the middle of one test's tuning, during which the pytest process gets SIGINT or
  SIGKILL; resume with ``pytest --autotune=missing`` and compare with the reference: the same
  trials in the same order, the same winner, no trial evaluated twice, ``autotune.json`` valid
  after the interruption, and no worker process left behind.
* :func:`damaged_store_drill`: truncated, corrupted and newer-schema files: a clear error naming
  the file and the file left byte-identical, or a normal run leaving a valid file; never a crash.
* :func:`read_only_drill`: a read-only file and an unwritable location fail the run clearly and
  change nothing.
* :func:`concurrent_store_drill`: several ``pytest --autotune -n N`` sessions over many tunable
  tests writing one ``autotune.json`` at once while a reader checks every version it sees.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_autotune.entry import StoreEntry
from pytest_autotune.store import Store, StoreError

DRILL_CONFTEST = """
import pytest

from pytest_autotune.testing import FakeTimer, bowl


@pytest.fixture
def autotune_timer():
    return FakeTimer(bowl)
"""

DRILL_TESTS = """
import json, os, time
from pytest_autotune import Interval, Set, tunable


def log_call(name, config):
    # Every body call is logged; the call numbered $DRILL_PAUSE_AT of test $DRILL_TEST pauses
    # (after saying so in the file "paused") until the drill interrupts or kills pytest.
    path = "calls-" + name + ".jsonl"
    with open(path, "a") as f:
        f.write(json.dumps(config) + "\\n")
    if os.environ.get("DRILL_TEST") == name:
        with open(path) as f:
            count = sum(1 for _ in f)
        if count == int(os.environ["DRILL_PAUSE_AT"]):
            with open("paused.tmp", "w") as f:
                f.write(str(os.getpid()))
            os.replace("paused.tmp", "paused")
            time.sleep(600)


@tunable(A=Interval(1, 3, default=1), strategy="exhaustive")
def test_first(autotune):
    log_call("first", autotune.config)
    autotune.measure(lambda: None)


@tunable(
    A=Interval(1, 12, default=1),
    B=Set(1, 2, 3, 4, default=1),
    C=Interval(1, 8, default=1),
    budget={budget},
    strategy="{strategy}",
    seed=7,
)
def test_second(autotune):
    log_call("second", autotune.config)
    if autotune.config["C"] == 8:
        raise RuntimeError("C=8 is out of resources")
    autotune.measure(lambda: None)
"""

#: Strategy of the drilled test (by drill name) and its budget; "bo-light" is the Bayesian
#: optimizer with a cheaper acquisition search, for the quick tests.
STRATEGIES = {
    "random": "random",
    "bo": "bo:initial=5",
    "bo-light": "bo:initial=4,candidates=256,local_starts=2,fit_restarts=0",
}
BUDGETS = {"random": 16, "bo": 14, "bo-light": 10}


def clean_environment(**extra: str) -> dict[str, str]:
    """The environment of a drilled pytest: no autotune settings or addopts from outside."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_AUTOTUNE", "PYTEST_ADDOPTS", "DRILL_", "PYTEST_XDIST"))
    }
    env.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def pytest_command(*args: str) -> list[str]:
    """``python -m pytest`` with the drills' fixed options."""
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:hypothesispytest", *args]


def run_pytest(
    project: Path, *args: str, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run pytest in ``project`` to completion."""
    return subprocess.run(
        pytest_command(*args),
        cwd=project,
        env=clean_environment(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def make_drill_project(path: Path, strategy: str) -> Path:
    """A project with ``test_first`` (3 trials) and ``test_second`` (the drilled test)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "pytest.ini").write_text("[pytest]\n")
    (path / "conftest.py").write_text(DRILL_CONFTEST)
    (path / "test_drill.py").write_text(
        DRILL_TESTS.format(budget=BUDGETS[strategy], strategy=STRATEGIES[strategy])
    )
    return path


def read_calls(project: Path, name: str) -> list[dict[str, Any]]:
    """The configurations the body of ``test_<name>`` was called with (and clear the log)."""
    path = project / f"calls-{name}.jsonl"
    if not path.exists():
        return []
    calls = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    return calls


def journal_trials(project: Path, *, done: bool) -> list[tuple[dict[str, Any], str, float | None]]:
    """(config, label, value) of each trial in ``test_second``'s journal (finished or in progress)."""
    base = project / ".pytest_cache" / "d" / "autotune"
    pattern = "*test_second-" + "?" * 12 + (".done.jsonl" if done else ".jsonl")
    paths = sorted(base.glob(pattern))
    if len(paths) != 1:
        return []
    lines = paths[0].read_text().splitlines()[1:]
    records = [d for d in map(json.loads, lines) if "trial" in d]  # not the start/cancel lines
    return [(d["config"], d["label"], d["value"]) for d in records]


def store_entries(project: Path) -> dict[str, StoreEntry]:
    """Valid entries of the project's store by node id (one device), read by the store's own reader."""
    store = Store.load(project / "autotune.json")
    entries: dict[str, StoreEntry] = {}
    for device in store.devices():
        entries.update(store.entries(device))
    return entries


def essentials(entry: StoreEntry) -> dict[str, Any]:
    """What must be equal between runs: the winner, its baseline, and the trial counts."""
    assert entry.baseline is not None
    assert entry.tuning is not None
    return {
        "config": dict(entry.config),
        "median": entry.baseline.median,
        "trials": entry.tuning.trials,
        "counts": dict(entry.tuning.counts),
    }


def process_gone(pid: int, within: float = 15.0) -> bool:
    """Whether process ``pid`` has exited (waits up to ``within`` seconds)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split(") ", 1)[-1].startswith("Z"):
            return True  # a zombie has exited; its parent (gone) will not reap it
        time.sleep(0.1)
    return False


@dataclass
class Reference:
    """An uninterrupted tuning run of the drill project."""

    strategy: str
    trials: list[tuple[dict[str, Any], str, float | None]]
    entries: dict[str, dict[str, Any]]
    seconds: float


def reference_run(path: Path, strategy: str) -> Reference:
    """Tune the drill project once without interruption."""
    project = make_drill_project(path, strategy)
    started = time.perf_counter()
    done = run_pytest(project, "--autotune")
    if done.returncode != 0:
        raise RuntimeError(f"reference run failed:\n{done.stdout}\n{done.stderr}")
    return Reference(
        strategy,
        journal_trials(project, done=True),
        {k: essentials(v) for k, v in store_entries(project).items()},
        time.perf_counter() - started,
    )


@dataclass
class DrillResult:
    """One interrupt-and-resume drill, compared with the reference run."""

    strategy: str
    signal: str
    moment: str
    exit_code: int = 0
    journaled_before: int = 0
    store_valid_after_kill: bool = False
    first_entry_kept: bool = False
    worker_gone: bool = False
    resumed_evaluated: int = 0
    repeated: int = 0
    same_trials: bool = False
    same_winner: bool = False
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every check of the drill held."""
        return not self.problems


def _start_tuning(project: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        pytest_command("--autotune"),
        cwd=project,
        env=clean_environment(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_pause(project: Path, process: subprocess.Popen[str], within: float) -> None:
    deadline = time.monotonic() + within
    while not (project / "paused").exists():
        if process.poll() is not None:
            out, err = process.communicate()
            raise RuntimeError(f"pytest ended before the pause (status {process.returncode}):\n{out}\n{err}")
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the drilled test never reached its pause")
        time.sleep(0.05)


def stray_processes(project: Path) -> list[int]:
    """Live processes (not zombies) whose command line mentions ``project``: trial workers left over."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(") ", 1)[-1][:1]
        except OSError:
            continue
        if str(project) in command and state != "Z":
            found.append(int(entry.name))
    return found


def _interrupt(
    project: Path, process: subprocess.Popen[str], sig: signal.Signals, result: DrillResult
) -> None:
    """Send ``sig`` to pytest, wait for it and for its trial worker to end."""
    process.send_signal(sig)
    try:
        process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        result.problems.append(f"pytest did not end within 60 s of {sig.name}")
    result.exit_code = process.returncode
    deadline = time.monotonic() + 15
    while (strays := stray_processes(project)) and time.monotonic() < deadline:
        time.sleep(0.1)
    result.worker_gone = not strays
    for pid in strays:
        os.kill(pid, signal.SIGKILL)
        result.problems.append(f"process {pid} survived pytest's {sig.name}")


def _check_interrupted_state(project: Path, reference: Reference, result: DrillResult) -> None:
    """The journal is a prefix of the reference's; the store is valid and holds reference entries only."""
    before = journal_trials(project, done=False) or journal_trials(project, done=True)
    result.journaled_before = len(before)
    if before != reference.trials[: len(before)]:
        result.problems.append("the interrupted run's trials differ from the reference's")
    try:
        kept = {k: essentials(v) for k, v in store_entries(project).items()}
        result.store_valid_after_kill = True
    except (StoreError, KeyError) as exc:
        kept = {}
        result.problems.append(f"autotune.json unreadable after {result.signal}: {exc}")
    if result.signal == "SIGINT" and list(project.glob(".autotune.json.*.tmp")):
        result.problems.append("temporary files left after SIGINT")
    first = "test_drill.py::test_first"
    result.first_entry_kept = kept.get(first) == reference.entries[first]
    if any(entry != reference.entries[nodeid] for nodeid, entry in kept.items()):
        result.problems.append(
            f"the store after {result.signal} holds entries that differ from the reference's"
        )


def _resume_and_compare(project: Path, reference: Reference, result: DrillResult) -> None:
    """Resume with ``pytest --autotune=missing``; compare with the reference (module docstring)."""
    # a kill after the search finished leaves the journal marked done (and maybe the entry written)
    before = journal_trials(project, done=False) or journal_trials(project, done=True)
    kept_first = result.first_entry_kept
    read_calls(project, "first")
    read_calls(project, "second")
    resumed = run_pytest(project, "--autotune=missing")
    if resumed.returncode != 0:
        result.problems.append(f"the resumed run failed ({resumed.returncode}):\n{resumed.stdout[-3000:]}")
        return
    first_calls = read_calls(project, "first")
    if kept_first and first_calls != [reference.entries["test_drill.py::test_first"]["config"]]:
        result.problems.append("test_first was tuned again although its entry was kept")
    trials = journal_trials(project, done=True)
    calls = read_calls(project, "second")
    searched = calls[: len(trials) - len(before)]  # then come the finalists' and the final calls
    result.resumed_evaluated = len(searched)
    done_configs = [config for config, _, _ in before]
    result.repeated = sum(1 for config in searched if config in done_configs)
    result.same_trials = trials == reference.trials
    entries = {k: essentials(v) for k, v in store_entries(project).items()}
    result.same_winner = entries == reference.entries
    if result.repeated:
        result.problems.append(f"{result.repeated} journaled trial(s) evaluated again")
    if searched != [config for config, _, _ in reference.trials[len(before) :]]:
        result.problems.append("the resumed run did not evaluate exactly the reference's remaining trials")
    if not result.same_trials:
        result.problems.append("the resumed journal differs from the reference's")
    if not result.same_winner:
        result.problems.append(f"store entries differ: {entries} vs {reference.entries}")


def resume_drill(path: Path, reference: Reference, sig: signal.Signals, pause_at: int) -> DrillResult:
    """Interrupt ``test_second`` at body call ``pause_at`` with ``sig``, resume and compare."""
    result = DrillResult(reference.strategy, sig.name, f"trial {pause_at}")
    project = make_drill_project(path, reference.strategy)
    started = time.perf_counter()
    process = _start_tuning(project, DRILL_TEST="second", DRILL_PAUSE_AT=str(pause_at))
    _wait_for_pause(project, process, within=900)
    _interrupt(project, process, sig, result)
    if sig == signal.SIGINT and result.exit_code != 2:
        result.problems.append(f"SIGINT: exit status {result.exit_code}, expected 2 (interrupted)")
    (project / "paused").unlink()
    _check_interrupted_state(project, reference, result)
    if not result.first_entry_kept or result.journaled_before != pause_at - 1:
        result.problems.append(
            f"after {sig.name}: first entry kept {result.first_entry_kept}, "
            f"{result.journaled_before} trials journaled (expected {pause_at - 1})"
        )
    _resume_and_compare(project, reference, result)
    result.seconds = time.perf_counter() - started
    return result


def _journaled_count(project: Path) -> int:
    """Trials of ``test_second`` journaled so far (0 while a line is half written)."""
    try:
        return max(len(journal_trials(project, done=False)), len(journal_trials(project, done=True)))
    except (json.JSONDecodeError, KeyError, OSError):
        return 0


def chaos_drill(path: Path, reference: Reference, after_trials: int, fraction: float) -> DrillResult:
    """SIGKILL pytest at a random moment of ``test_second``'s tuning, resume and compare.

    The moment is paced by the drilled run itself, so the machine's load cannot move it past the
    end of tuning: once ``after_trials`` trials are journaled, wait ``fraction`` of the mean time
    per trial seen so far. It lands anywhere: in a trial, a journal or store write, a worker
    (re)start, or (after the last trial) the finalists.
    """
    result = DrillResult(reference.strategy, "SIGKILL", f"trial {after_trials} + {fraction:.2f}")
    project = make_drill_project(path, reference.strategy)
    started = time.perf_counter()
    process = _start_tuning(project)
    first_seen: float | None = None
    deadline = time.monotonic() + 300
    while (count := _journaled_count(project)) < after_trials and process.poll() is None:
        if count >= 1 and first_seen is None:
            first_seen = time.monotonic()
        if time.monotonic() > deadline:
            break
        time.sleep(0.01)
    if first_seen is not None and after_trials > 1:
        time.sleep(fraction * (time.monotonic() - first_seen) / (after_trials - 1))
    if process.poll() is not None:
        process.communicate()
        result.moment += " (after the run ended: nothing to drill)"
        return result
    _interrupt(project, process, signal.SIGKILL, result)
    _check_interrupted_state(project, reference, result)
    _resume_and_compare(project, reference, result)
    result.seconds = time.perf_counter() - started
    return result


# -- store drills ---------------------------------------------------------------------------------------
TUNABLE_MODULE = """
from pytest_autotune import Interval, tunable
import pytest


@tunable(A=Interval(1, 6, default=1), strategy="random", budget=4, isolate="none")
@pytest.mark.parametrize("n", range({first}, {last}))
def test_kernel(autotune, n):
    autotune.measure(lambda: None)
"""


def make_store_project(path: Path, tests: int, modules: int = 1) -> Path:
    """A project with ``tests`` tunable tests spread over ``modules`` files."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "pytest.ini").write_text("[pytest]\n")
    (path / "conftest.py").write_text(DRILL_CONFTEST)
    per = -(-tests // modules)
    for index in range(modules if tests else 0):
        first, last = index * per, min(tests, (index + 1) * per)
        (path / f"test_store_{index}.py").write_text(TUNABLE_MODULE.format(first=first, last=last))
    return path


@dataclass
class StoreCase:
    """One damaged-store case: the damage, what pytest said, whether the file survived."""

    kind: str
    name: str
    command: str
    exit_code: int
    error_named_file: bool
    unchanged: bool
    valid_after: bool

    @property
    def passed(self) -> bool:
        """A clear error leaving the file alone, or a normal run leaving a valid file; never a crash."""
        if self.exit_code in (3, 2):  # internal error, interrupted
            return False
        if self.exit_code == 4:
            return self.error_named_file and self.unchanged
        return self.valid_after


def _file_state(path: Path) -> bool:
    try:
        Store.load(path)
    except StoreError:
        return False
    return True


def _damage_cases(text: bytes, rng: random.Random, cuts: int, flips: int) -> Iterable[tuple[str, str, bytes]]:
    """(kind, description, damaged bytes) of each case."""
    for _ in range(cuts):
        at = rng.randrange(0, len(text))
        yield "truncated", f"truncated at byte {at}/{len(text)}", text[:at]
    for _ in range(flips):
        data = bytearray(text)
        at = rng.randrange(0, len(data))
        data[at] = rng.choice(b'{}[]",:0x\x00\xff')
        yield "byte replaced", f"byte {at} replaced by {data[at]:#04x}", bytes(data)
    document = json.loads(text)
    yield "newer schema", "schema version 2", json.dumps({**document, "schema_version": 2}).encode()
    yield "empty file", "empty file", b""


def damaged_store_drill(path: Path, *, cuts: int, flips: int, seed: int = 0) -> list[StoreCase]:
    """Damage a valid store in many ways; run a check and a tuning run on each (module docstring)."""
    project = make_store_project(path, tests=3)
    tuned = run_pytest(project, "--autotune")
    if tuned.returncode != 0:
        raise RuntimeError(f"could not create the store:\n{tuned.stdout}")
    store = project / "autotune.json"
    good = store.read_bytes()
    cases: list[StoreCase] = []
    rng = random.Random(seed)
    for kind, name, damaged in _damage_cases(good, rng, cuts, flips):
        for command in ((), ("--autotune",)):
            store.write_bytes(damaged)
            done = run_pytest(project, *command)
            output = done.stdout + done.stderr
            cases.append(
                StoreCase(
                    kind,
                    name,
                    " ".join(("pytest", *command)),
                    done.returncode,
                    str(store) in output and "pytest-autotune" in output,
                    store.read_bytes() == damaged,
                    _file_state(store),
                )
            )
    store.write_bytes(good)
    return cases


LATE_READ_ONLY = """
import os, shutil
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 3), strategy="exhaustive", isolate="none")
def test_a(autotune):
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 3), strategy="exhaustive", isolate="none")
def test_b(autotune):
    if not os.path.exists("snapshot.json"):  # test_a's entry is written by now; freeze the file
        shutil.copy("autotune.json", "snapshot.json")
        os.chmod("autotune.json", 0o444)
    autotune.measure(lambda: None)
"""


@dataclass
class WriteCase:
    """One unwritable-store case with the exit status and message it must produce."""

    name: str
    command: str
    exit_code: int
    expected_exit: int
    message_found: bool
    unchanged: bool

    @property
    def passed(self) -> bool:
        """The expected exit status, the message naming the file, and the file as it was."""
        return self.exit_code == self.expected_exit and self.message_found and self.unchanged


def _make_immutable(directory: Path, on: bool) -> bool:
    """Make ``directory`` unwritable even for root (``chattr +i``), else by permissions; False if neither."""
    flag = "+i" if on else "-i"
    if (
        shutil.which("chattr")
        and subprocess.run(["chattr", flag, str(directory)], capture_output=True).returncode == 0
    ):
        return True
    directory.chmod(0o555 if on else 0o755)
    return not on or os.geteuid() != 0


def read_only_drill(path: Path) -> list[WriteCase]:
    """A read-only store, an unwritable place and a store made read-only mid-run (module docstring)."""
    project = make_store_project(path / "project", tests=2)
    if run_pytest(project, "--autotune").returncode != 0:
        raise RuntimeError("could not create the store")
    store = project / "autotune.json"
    before = store.read_bytes()
    cases = []

    def case(name: str, args: Sequence[str], expected: int, message: str, target: Path) -> None:
        snapshot = target.read_bytes() if target.exists() else None
        done = run_pytest(project, *args)
        output = done.stdout + done.stderr
        after = target.read_bytes() if target.exists() else None
        found = not message or (message in output and str(target) in output)
        shown = " ".join(("pytest", *args)).replace(str(path), "TMP")
        cases.append(WriteCase(name, shown, done.returncode, expected, found, after == snapshot))

    store.chmod(0o444)
    try:
        case("read-only file", [], 0, "", store)  # a normal run only reads the store
        case("read-only file", ["--autotune"], 4, "is read-only", store)
    finally:
        store.chmod(0o644)
    locked = path / "locked"
    locked.mkdir()
    if _make_immutable(locked, True):
        try:
            case(
                "unwritable directory",
                ["--autotune", f"--autotune-cache={locked / 'autotune.json'}"],
                4,
                "cannot be written",
                locked / "autotune.json",
            )
        finally:
            _make_immutable(locked, False)
    blocker = project / "not-a-directory"
    blocker.write_text("a file where a directory should be\n")
    case(
        "a file in the way",
        ["--autotune", f"--autotune-cache={blocker / 'autotune.json'}"],
        4,
        "cannot be read",
        blocker / "autotune.json",
    )
    late = make_store_project(path / "late", tests=0)
    (late / "test_late.py").write_text(LATE_READ_ONLY)
    done = run_pytest(late, "--autotune")
    output = done.stdout + done.stderr
    frozen = late / "snapshot.json"
    cases.append(
        WriteCase(
            "made read-only during the run",
            "pytest --autotune",
            done.returncode,
            1,
            "could not update the cache" in output and "is read-only" in output,
            frozen.exists() and (late / "autotune.json").read_bytes() == frozen.read_bytes(),
        )
    )
    (late / "autotune.json").chmod(0o644)
    assert store.read_bytes() == before
    return cases


READER = """
import json, sys, time
from pathlib import Path
from pytest_autotune.store import Store
path, stop = Path(sys.argv[1]), Path(sys.argv[2])
seen = torn = 0
last = None
while not stop.exists():
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        time.sleep(0.002)
        continue
    if text != last:
        last = text
        seen += 1
        try:
            Store.load(path)
        except Exception as exc:
            torn += 1
            print("TORN", exc, file=sys.stderr)
    time.sleep(0.002)
print(json.dumps({"versions": seen, "torn": torn}))
"""


@dataclass
class ConcurrencyResult:
    """One repetition of the concurrent-writers drill."""

    sessions: int
    workers: int
    tests: int
    entries: int
    complete: int
    versions_seen: int
    torn_reads: int
    exit_codes: list[int]
    seconds: float

    @property
    def passed(self) -> bool:
        """Every test's entry present and complete, no torn version seen, every session passed."""
        return (
            self.entries == self.tests
            and self.complete == self.tests
            and self.torn_reads == 0
            and all(code == 0 for code in self.exit_codes)
        )


def concurrent_store_drill(path: Path, *, tests: int, sessions: int, workers: int) -> ConcurrencyResult:
    """``sessions`` concurrent ``pytest --autotune -n workers`` over disjoint files of one project."""
    if path.exists():
        shutil.rmtree(path)
    project = make_store_project(path, tests, modules=max(sessions, 1) * 2)
    files = sorted(p.name for p in project.glob("test_store_*.py"))
    stop = project / "stop-reader"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(project / "autotune.json"), str(stop)],
        env=clean_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.perf_counter()
    processes = [
        subprocess.Popen(
            pytest_command(
                "--autotune", "-n", str(workers), "--autotune-allow-shared-device", *files[index::sessions]
            ),
            cwd=project,
            env=clean_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for index in range(sessions)
    ]
    codes = []
    for process in processes:
        out, _ = process.communicate(timeout=600)
        codes.append(process.returncode)
        if process.returncode != 0:
            print(out[-3000:], file=sys.stderr)
    seconds = time.perf_counter() - started
    stop.write_text("")
    out, _ = reader.communicate(timeout=60)
    seen = json.loads(out.strip().splitlines()[-1]) if out.strip() else {"versions": 0, "torn": -1}
    entries = store_entries(project)
    complete = sum(
        1
        for entry in entries.values()
        if entry.baseline is not None
        and entry.tuning is not None
        and entry.commit_info is not None
        and (entry.baseline.rounds or 0) > 0
    )
    return ConcurrencyResult(
        sessions, workers, tests, len(entries), complete, seen["versions"], seen["torn"], codes, seconds
    )


def pause_points(strategy: str, count: int, rng: random.Random) -> Sequence[int]:
    """Body calls at which to interrupt ``test_second`` (within its search, after a few trials)."""
    budget = BUDGETS[strategy]
    return sorted(rng.sample(range(3, budget), count))
