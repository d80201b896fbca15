"""The tuning journal: an append-only JSON-lines file, one line per completed trial.

Line 1 is a header (format name and version, space hash, strategy, seed,
strategy options, objective direction); every further line is one trial,
written, flushed and fsync'd as soon as the trial completes, so a killed run
loses at most the trial in flight. Reading tolerates a torn last line (a
write cut short by a kill): it is ignored and cut off before appending again.
Any other unreadable line is an error naming the file and line.

Format version 2 adds two kinds of line, written only by a run whose trials
execute in its own process (where a crashing configuration takes the process
with it): ``{"started": N, "config": {...}}`` before trial ``N`` runs, and
``{"cancelled": N}`` when it was abandoned without an outcome (an interrupt).
A start followed by neither its trial line nor a cancellation is *unfinished*
(:attr:`JournalContents.unfinished`): the process died during that trial, and
the resuming run records it as a failure instead of running it again.
Version 1 journals (trial lines only) read as before.

One process at a time tunes from a journal: :func:`hold_journal` takes an
exclusive lock on ``<journal>.lock`` (POSIX ``flock``, released by the kernel
when the process dies) and writes its pid there; a second run waits a short
while, then gets :class:`JournalBusy` naming the holder's pid, without having
touched the journal. Written with ``flock`` directly rather than with ``filelock`` (which the
store uses) because the lock file also carries the holder's pid, written through the descriptor
that holds the lock, while ``filelock`` manages its lock files' content and lifetime itself.
The holder removes the lock file before it unlocks, so a finished run leaves none behind; a
waiter that then gets the lock of the removed file sees that the path no longer names the file
it locked and starts over on the new one, so two processes never hold the lock at once.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pytest_autotune.input_file import InputFileError, NotJsonError, parse_json, read_bounded
from pytest_autotune.outcome import LABELS, Outcome

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "JournalBusy",
    "JournalContents",
    "JournalEntry",
    "JournalError",
    "JournalHeader",
    "JournalMismatchError",
    "JournalWriter",
    "StartedTrial",
    "hold_journal",
    "read_journal",
    "set_aside",
]

FORMAT = "pytest-autotune-journal"
FORMAT_VERSION = 2
#: Bytes read at most from a journal (hundreds of thousands of trials).
MAX_BYTES = 256 * 1024 * 1024


class JournalError(ValueError):
    """A journal file cannot be read or does not belong to this tuning job."""

    def __init__(self, path: str | os.PathLike[str], message: str) -> None:
        super().__init__(f"{os.fspath(path)}: {message}")
        self.path = Path(path)


class JournalMismatchError(JournalError):
    """The journal was written by a different tuning job (space, strategy, seed, options)."""


class JournalBusy(JournalError):
    """Another live process holds the journal's lock (it is tuning the same test right now)."""


@contextlib.contextmanager
def hold_journal(path: str | os.PathLike[str], *, wait: float = 10.0) -> Iterator[None]:
    """Hold the exclusive lock of journal ``path`` for the block (see the module docstring).

    Waits up to ``wait`` seconds for another holder to finish, then raises :class:`JournalBusy`
    naming its pid. Where ``fcntl`` is missing (Windows) the block runs unlocked.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    lock_path = Path(path).with_name(Path(path).name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait
    while True:
        lock = open(lock_path, "a+", encoding="utf-8")  # noqa: SIM115 (closed below on every path)
        try:
            if _take(fcntl, lock, lock_path, deadline, (path, wait)):
                break
        except BaseException:
            lock.close()
            raise
        lock.close()  # the file was removed by its last holder: lock the new one
    try:
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock_path.unlink()  # while still holding it (module docstring)
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        lock.close()


def _take(
    fcntl: Any, lock: IO[str], lock_path: Path, deadline: float, waiting: tuple[str | os.PathLike[str], float]
) -> bool:
    """Wait for the lock of the open file ``lock``; False when it was taken from a file that is no
    longer at ``lock_path`` (its holder removed it). After ``deadline``, :class:`JournalBusy` for
    ``waiting``, the journal and the seconds its caller waits."""
    while True:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                lock.seek(0)
                holder = lock.read().strip() or "unknown"
                journal, wait = waiting
                raise JournalBusy(
                    journal,
                    f"this test is being tuned by another process (pid {holder}); "
                    f"waited {wait:g}s, left its journal untouched",
                ) from None
            time.sleep(0.1)
    try:
        current = os.stat(lock_path)
    except FileNotFoundError:
        current = None
    mine = os.fstat(lock.fileno())
    if current is not None and (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev):
        return True
    fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    return False


def _normalise(value: Any) -> Any:
    """What ``value`` reads back as after a JSON round trip (non-JSON values become their repr)."""
    return json.loads(json.dumps(value, default=repr, sort_keys=True))


@dataclass(frozen=True)
class JournalHeader:
    """Identity of a tuning job; a journal is resumed only by a job with the same header."""

    space_hash: str
    strategy: str
    seed: int
    options: Mapping[str, Any] = field(default_factory=dict)
    maximize: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The header line's content."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "space_hash": self.space_hash,
            "strategy": self.strategy,
            "seed": self.seed,
            "options": _normalise(dict(self.options)),
            "maximize": self.maximize,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str | os.PathLike[str]) -> JournalHeader:
        """Parse a header line; errors name the file."""
        if data.get("format") != FORMAT:
            raise JournalError(path, "not a pytest-autotune journal (bad header line)")
        version = data.get("version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise JournalError(
                path, f"journal format version {version!r} is newer than this pytest-autotune reads"
            )
        try:
            return cls(
                space_hash=str(data["space_hash"]),
                strategy=str(data["strategy"]),
                seed=int(data["seed"]),
                options=dict(data.get("options") or {}),
                maximize=bool(data.get("maximize", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(path, f"incomplete journal header ({exc!r})") from exc

    def differences(self, other: JournalHeader) -> list[str]:
        """Human-readable fields in which ``other`` differs from this header."""
        mine, theirs = self.to_dict(), other.to_dict()
        return [f"{k}: {theirs[k]!r} in the journal, {mine[k]!r} now" for k in mine if mine[k] != theirs[k]]


@dataclass(frozen=True)
class JournalEntry:
    """One completed trial as stored (``config`` is JSON-decoded: lists where tuples were)."""

    number: int
    config: dict[str, Any]
    outcome: Outcome
    eval_seconds: float
    suggest_seconds: float

    def to_line(self) -> str:
        """The JSON line (with its newline)."""
        data = {
            "trial": self.number,
            "config": self.config,
            "label": self.outcome.label,
            "value": self.outcome.value,
            "detail": self.outcome.detail,
            "eval_s": self.eval_seconds,
            "suggest_s": self.suggest_seconds,
        }
        return json.dumps(data, default=repr, sort_keys=True, allow_nan=False) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str | os.PathLike[str], line: int) -> JournalEntry:
        """Parse a trial line; errors name the file and line."""
        try:
            label = data["label"]
            if label not in LABELS:
                raise ValueError(f"unknown label {label!r}")
            outcome = Outcome(label, data.get("value"), str(data.get("detail", "")))
            config = data["config"]
            if not isinstance(config, dict):
                raise TypeError("config is not an object")
            return cls(
                number=int(data["trial"]),
                config=config,
                outcome=outcome,
                eval_seconds=_finite(data.get("eval_s", 0.0)),
                suggest_seconds=_finite(data.get("suggest_s", 0.0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(path, f"line {line}: not a valid trial record ({exc})") from exc


def _finite(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"bad duration {value!r}")
    return number


@dataclass(frozen=True)
class StartedTrial:
    """A trial journaled as started that has neither an outcome nor a cancellation."""

    number: int
    config: dict[str, Any]


@dataclass
class JournalContents:
    """What :func:`read_journal` found: header (None for an empty file), trials, and the good prefix.

    ``unfinished`` lists trials that were started and never finished (see the module docstring).
    """

    header: JournalHeader | None
    entries: list[JournalEntry]
    valid_bytes: int
    torn_tail: bool
    unfinished: list[StartedTrial] = field(default_factory=list)


def _started(record: Mapping[str, Any], path: str | os.PathLike[str], line: int) -> StartedTrial:
    number, config = record.get("started"), record.get("config")
    if not isinstance(number, int) or isinstance(number, bool) or not isinstance(config, dict):
        raise JournalError(path, f"line {line}: not a valid trial-start record")
    return StartedTrial(number, config)


def read_journal(path: str | os.PathLike[str]) -> JournalContents:
    """Read a journal; a missing or empty file gives empty contents.

    Read through :mod:`pytest_autotune.input_file`: a regular file of at most :data:`MAX_BYTES`,
    each line JSON without deep nesting.
    """
    try:
        data = read_bounded(path, limit=MAX_BYTES)
    except FileNotFoundError:
        return JournalContents(None, [], 0, False)
    except InputFileError as exc:
        raise JournalError(path, exc.why) from exc
    except OSError as exc:
        raise JournalError(path, f"cannot read the journal ({exc})") from exc
    lines = data.split(b"\n")
    tail = lines.pop()  # the bytes after the last newline: empty, or a torn write
    header: JournalHeader | None = None
    entries: list[JournalEntry] = []
    started: dict[int, StartedTrial] = {}
    offset = 0
    for number, raw in enumerate(lines, start=1):
        offset += len(raw) + 1
        if not raw.strip():
            continue
        try:
            record = parse_json(path, raw)
        except NotJsonError as exc:
            why = exc.why if exc.why.startswith("not valid JSON") else f"not valid JSON here: {exc.why}"
            raise JournalError(path, f"line {number} is {why}") from exc
        if not isinstance(record, dict):
            raise JournalError(path, f"line {number} is not a JSON object")
        if header is None:
            header = JournalHeader.from_dict(record, path)
        elif "started" in record:
            start = _started(record, path, number)
            started[start.number] = start
        elif "cancelled" in record:
            started.pop(record["cancelled"], None)
        else:
            entry = JournalEntry.from_dict(record, path, number)
            started.pop(entry.number, None)
            entries.append(entry)
    return JournalContents(header, entries, offset, torn_tail=bool(tail), unfinished=list(started.values()))


def set_aside(path: str | os.PathLike[str]) -> Path:
    """Rename a journal to a free ``<name>.<n>.old`` next to it (kept, not deleted); returns the new path."""
    source = Path(path)
    n = 1
    while (target := source.with_name(f"{source.name}.{n}.old")).exists():
        n += 1
    source.rename(target)
    return target


class JournalWriter:
    """Appends trials to a journal, each flushed and fsync'd before :meth:`append` returns."""

    def __init__(
        self, path: str | os.PathLike[str], header: JournalHeader, contents: JournalContents | None = None
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        resume = contents is not None and contents.header is not None
        self._file: IO[str] = open(self.path, "a+", encoding="utf-8")  # noqa: SIM115 - kept open
        if resume and contents is not None:
            self._file.truncate(contents.valid_bytes)  # drop a torn last line before appending
            self._file.seek(contents.valid_bytes)
        else:
            self._file.truncate(0)
            self._write(json.dumps(header.to_dict(), sort_keys=True) + "\n")

    def _write(self, line: str) -> None:
        self._file.write(line)
        self._file.flush()
        os.fsync(self._file.fileno())

    def append(self, entry: JournalEntry) -> None:
        """Write one trial line and make it durable."""
        self._write(entry.to_line())

    def start(self, number: int, config: Mapping[str, Any]) -> None:
        """Record durably that trial ``number`` is about to run (see the module docstring)."""
        line = {"started": number, "config": _normalise(dict(config))}
        self._write(json.dumps(line, sort_keys=True, allow_nan=False) + "\n")

    def cancel(self, number: int) -> None:
        """Record that started trial ``number`` was abandoned without an outcome (run it again)."""
        self._write(json.dumps({"cancelled": number}) + "\n")

    def close(self) -> None:
        """Close the file (appending again needs a new writer)."""
        self._file.close()

    def __enter__(self) -> JournalWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
