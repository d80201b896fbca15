"""Trials in a worker process: a crash or a hang fails the trial, not the tuning run.

A *worker* is a child process that answers requests one at a time over a
:class:`multiprocessing.connection.Connection`. :class:`Worker` (parent side)
sends a request and waits for the reply under a deadline:

* the child dies (segfault, ``abort()``, ``os._exit``, out-of-memory kill):
  the request fails with label ``runtime`` and the exit named (``killed by
  signal SIGSEGV (Segmentation fault)``), plus the end of the child's output
  when it writes to a log file;
* no reply before the deadline: the child's process group is killed and the
  request fails with label ``timeout``;
* the child's memory grew by more than a limit since it started (a leak across
  trials): the reply is kept and the child is replaced before the next request.

A replacement starts on the next request, so the caller just goes on. Children
watch their parent and exit when it is gone, so a parent killed with SIGKILL
leaves no worker behind, even one stuck in a hung trial.

:class:`IsolatedObjective` applies this to the library: wrap an objective and
pass it to :meth:`pytest_autotune.tuning.tuner.Tuner.run`. The pytest plugin's worker
(a pytest sub-session that sets the test up itself) is in
:mod:`pytest_autotune.plugin.worker_parent`.

Hand-written because the standard pools do not fit: ``ProcessPoolExecutor``
marks the whole pool broken after one crashed call and cannot stop a call that
hangs, and ``multiprocessing.Pool`` waits forever for a task whose worker died.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final, Protocol

from pytest_autotune.outcome import Label, Outcome

__all__ = [
    "STOP",
    "Child",
    "IsolatedObjective",
    "Launched",
    "Ready",
    "Reply",
    "Worker",
    "WorkerFailure",
    "WorkerStartError",
    "WorkerStats",
    "describe_exit",
    "output_excerpt",
    "resident_bytes",
    "serve_requests",
    "watch_parent",
]

#: The request that ends a worker's loop.
STOP: Final = "stop"
#: Seconds a stopping worker gets to finish (fixture teardown) before it is killed.
STOP_SECONDS: Final = 30.0
#: Characters of the worker's output kept in a failure's detail.
OUTPUT_LIMIT: Final = 1500
#: Exit status of a worker whose parent disappeared.
ORPHAN_STATUS: Final = 70
_POLL_SECONDS: Final = 0.2


# -- messages -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ready:
    """First message of a worker: set up and waiting; ``rss`` is its resident memory in bytes."""

    rss: int


@dataclass(frozen=True)
class Reply:
    """A worker's answer to one request, with its resident memory afterwards."""

    payload: Any
    rss: int


@dataclass(frozen=True)
class WorkerFailure:
    """A request that got no reply: the worker died (``runtime``) or ran past the deadline (``timeout``)."""

    label: Label
    detail: str

    def outcome(self) -> Outcome:
        """The trial outcome."""
        return Outcome.failed(self.label, self.detail)


class WorkerStartError(RuntimeError):
    """A worker exited or stalled before it was ready; the message holds its output."""


# -- child side -----------------------------------------------------------------------------------------
def resident_bytes() -> int:
    """Resident memory of this process in bytes (Linux: current; elsewhere: the peak)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)


def watch_parent(wait_until_gone: Callable[[], object]) -> None:
    """Exit this process (status :data:`ORPHAN_STATUS`) as soon as ``wait_until_gone()`` returns.

    ``wait_until_gone`` blocks until the parent is gone (e.g. reading a pipe whose write end only
    the parent holds). It runs in a daemon thread, so a hung trial cannot keep an orphan alive.
    """

    def watch() -> None:
        try:
            wait_until_gone()
        finally:
            os._exit(ORPHAN_STATUS)

    threading.Thread(target=watch, name="pytest-autotune-parent-watch", daemon=True).start()


def serve_requests(channel: Connection, handle: Callable[[Any], tuple[Any, bool]]) -> None:
    """The worker loop: send :class:`Ready`, then answer requests until :data:`STOP` or EOF.

    ``handle(request)`` returns ``(payload, go_on)``; the loop ends after a payload with
    ``go_on`` False (e.g. the test body called ``pytest.skip``).
    """
    channel.send(Ready(resident_bytes()))
    while True:
        try:
            request = channel.recv()
        except EOFError:
            return
        if isinstance(request, str) and request == STOP:
            return
        payload, go_on = handle(request)
        channel.send(Reply(payload, resident_bytes()))
        if not go_on:
            return


# -- parent side ----------------------------------------------------------------------------------------
def describe_exit(returncode: int) -> str:
    """``was killed by signal SIGSEGV (Segmentation fault)`` or ``exited with status 3``."""
    if returncode < 0:
        try:
            number = signal.Signals(-returncode)
        except ValueError:
            return f"was killed by signal {-returncode}"
        description = signal.strsignal(number) or ""
        hint = ", out of memory?" if number == signal.SIGKILL else ""
        return f"was killed by signal {number.name} ({description}{hint})"
    return f"exited with status {returncode}"


class Child(Protocol):
    """A started worker process, whatever started it."""

    @property
    def pid(self) -> int:
        """Process id."""

    def exitcode(self) -> int | None:
        """The exit status when the process has ended (negative: killed by that signal), else None."""

    def kill(self) -> None:
        """Kill the process (and what it started) if it still runs, and reap it."""

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for the exit; returns :meth:`exitcode`."""


@dataclass
class Launched:
    """A started worker: the process, the parent's end of its channel, and its output file if any."""

    child: Child
    channel: Connection
    log: Path | None = None
    cleanup: Callable[[], None] | None = None


@dataclass
class WorkerStats:
    """How often the worker was (re)started and why; seconds each start took until ready."""

    starts: int = 0
    crashes: int = 0
    timeouts: int = 0
    memory_restarts: int = 0
    start_seconds: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for reports."""
        return {
            "worker_starts": self.starts,
            "crashes": self.crashes,
            "timeouts": self.timeouts,
            "memory_restarts": self.memory_restarts,
            "start_seconds": [round(s, 4) for s in self.start_seconds],
        }


# Traceback lines of the machinery around the body (pytest, pluggy, this package, runpy), and
# faulthandler's list of extension modules: dropped from the output quoted in a failure.
_NOISE: Final = re.compile(
    r'File "(<frozen [^>]*>|[^"]*[/\\](_pytest|pluggy|pytest_autotune|pytest)[/\\][^"]*)"'
    r"|^Extension modules:"
)


def _informative_lines(text: str) -> list[str]:
    kept: list[str] = []
    other_thread = False
    for line in text.splitlines():
        if line.startswith("Thread 0x"):  # faulthandler's dump of a thread other than the crashing one
            other_thread = True
        elif not line.strip():
            other_thread = False
        if not other_thread and not _NOISE.search(line):
            kept.append(line)
    return kept


def output_excerpt(text: str) -> str:
    """The informative part of a worker's output: machinery frames dropped, long text cut in the middle."""
    kept = re.sub(r"\n{3,}", "\n\n", "\n".join(_informative_lines(text))).strip()
    if len(kept) <= OUTPUT_LIMIT:
        return kept
    half = OUTPUT_LIMIT // 2
    return f"{kept[:half]}\n[...]\n{kept[-half:]}"


def _output_since(log: Path | None, offset: int) -> str:
    if log is None:
        return ""
    try:
        with open(log, "rb") as handle:
            handle.seek(offset)
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return output_excerpt(text)


def _log_size(log: Path | None) -> int:
    try:
        return log.stat().st_size if log is not None else 0
    except OSError:
        return 0


_NO_REPLY: Final = object()


class Worker:
    """Parent side of one persistent worker (see the module docstring).

    ``launch()`` starts a child that runs :func:`serve_requests`; ``timeout`` limits each request
    (None: no limit), ``start_timeout`` the time until the child is ready, and ``memory_limit``
    (bytes, None: no limit) the growth of its resident memory since it was ready.
    """

    def __init__(
        self,
        launch: Callable[[], Launched],
        *,
        timeout: float | None,
        start_timeout: float = 300.0,
        memory_limit: int | None = None,
        name: str = "worker",
    ) -> None:
        self._launch = launch
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.memory_limit = memory_limit
        self.name = name
        self.stats = WorkerStats()
        self._current: Launched | None = None
        self._ready_rss = 0

    @property
    def running(self) -> bool:
        """Whether a worker process is up (it starts on the first request)."""
        return self._current is not None

    def request(self, message: Any) -> Any:
        """Send ``message``; return the reply's payload, or a :class:`WorkerFailure`.

        Raises :class:`WorkerStartError` when a worker cannot be started.
        """
        current = self._current or self._start()
        offset = _log_size(current.log)
        with contextlib.suppress(OSError):  # a worker that is gone is collected below as a crash
            current.channel.send(message)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        reply = self._receive(current, deadline)
        if reply is _NO_REPLY:
            exitcode = current.child.exitcode()
            label: Label = "runtime"
            if exitcode is None:
                self.stats.timeouts += 1
                label, what = "timeout", f"no result within the trial timeout of {self.timeout:g}s"
                what += f" (the {self.name} was killed)"
            else:
                self.stats.crashes += 1
                what = f"the {self.name} {describe_exit(exitcode)}"
            failure = WorkerFailure(label, self._detail(what, current, offset))
            self._discard()
            return failure
        assert isinstance(reply, Reply)
        if self.memory_limit is not None and reply.rss - self._ready_rss > self.memory_limit:
            self.stats.memory_restarts += 1
            self.stop()
        return reply.payload

    def _detail(self, what: str, current: Launched, offset: int) -> str:
        output = _output_since(current.log, offset)
        return f"{what}; its output:\n{output}" if output else what

    def _receive(self, current: Launched, deadline: float | None) -> Any:
        """The next message, or ``_NO_REPLY`` when the child died or the deadline passed."""
        channel, child = current.channel, current.child
        while True:
            wait = _POLL_SECONDS if deadline is None else min(_POLL_SECONDS, deadline - time.monotonic())
            try:
                if channel.poll(max(wait, 0.0)):
                    return channel.recv()
            except (EOFError, OSError):
                child.wait(5.0)
                return _NO_REPLY
            if child.exitcode() is not None:
                try:
                    return channel.recv() if channel.poll(0) else _NO_REPLY
                except (EOFError, OSError):
                    return _NO_REPLY
            if deadline is not None and time.monotonic() >= deadline:
                return _NO_REPLY

    def _start(self) -> Launched:
        started = time.perf_counter()
        current = self._launch()
        self._current = current
        self.stats.starts += 1
        ready = self._receive(current, time.monotonic() + self.start_timeout)
        if not isinstance(ready, Ready):
            exitcode = current.child.exitcode()
            why = (
                f"did not get ready within {self.start_timeout:g}s"
                if exitcode is None
                else describe_exit(exitcode)
            )
            detail = self._detail(f"the {self.name} {why} before running any trial", current, 0)
            self._discard()
            raise WorkerStartError(detail)
        self._ready_rss = ready.rss
        self.stats.start_seconds.append(time.perf_counter() - started)
        return current

    def stop(self) -> None:
        """Ask the worker to finish (it tears down) and wait; kill it if it does not."""
        current = self._current
        if current is None:
            return
        with contextlib.suppress(OSError):
            current.channel.send(STOP)
        current.child.wait(STOP_SECONDS)  # then killed if it is still there
        self._discard()

    def _discard(self) -> None:
        """Forget the current worker: kill what is left of it (its process group), reap, clean up."""
        current, self._current = self._current, None
        if current is None:
            return
        current.child.kill()
        current.channel.close()
        if current.cleanup is not None:
            current.cleanup()

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        self.stop()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        # On an interrupt or error there is no point waiting for a graceful stop.
        if exc[0] is not None:
            self._discard()
        else:
            self.close()


# -- the library wrapper --------------------------------------------------------------------------------
class _ProcessChild:
    """:class:`Child` over a :class:`multiprocessing.Process`."""

    def __init__(self, process: Any) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        return int(self._process.pid)

    def exitcode(self) -> int | None:
        code = self._process.exitcode
        return None if code is None else int(code)

    def kill(self) -> None:
        if self._process.exitcode is None:
            self._process.kill()
        self._process.join(10.0)

    def wait(self, timeout: float) -> int | None:
        self._process.join(timeout)
        return self.exitcode()


def _describe_error(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _objective_child(channel: Connection, objective: Callable[[Mapping[str, Any]], Any]) -> None:
    """Body of an :class:`IsolatedObjective` worker (runs in the child)."""
    import multiprocessing

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    parent = multiprocessing.parent_process()
    if parent is not None:
        sentinel = parent.sentinel
        watch_parent(lambda: multiprocessing.connection.wait([sentinel]))

    def handle(config: Any) -> tuple[Any, bool]:
        try:
            return objective(config), True
        except Exception as exc:
            return Outcome.failed("runtime", _describe_error(exc)), True

    serve_requests(channel, handle)


class IsolatedObjective:
    """``objective(config)`` evaluated in a worker process, for :meth:`Tuner.run`.

    The objective must be picklable (a module-level function or an instance of a module-level
    class): it is sent to a worker started with ``multiprocessing``'s ``start_method`` (``spawn``
    by default, so fork-unsafe libraries such as OpenCL drivers are safe). Each call returns what
    the objective returned, or an :class:`~pytest_autotune.outcome.Outcome`: ``runtime`` for an
    exception (its message as detail) or a worker that died (the signal named), ``timeout`` when
    no result came within ``timeout`` seconds (the worker is killed). A new worker replaces a dead
    one on the next call, and one whose memory grew by more than ``worker_memory`` bytes::

        with IsolatedObjective(run_kernel, timeout=10) as objective:
            result = Tuner(space, "bo", abort=50, journal="tune.jsonl").run(objective)
    """

    def __init__(
        self,
        objective: Callable[[Mapping[str, Any]], Any],
        *,
        timeout: float | None = None,
        start_timeout: float = 120.0,
        worker_memory: int | None = None,
        start_method: str = "spawn",
    ) -> None:
        if not callable(objective):
            raise TypeError(f"IsolatedObjective: the objective must be callable, got {objective!r}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"IsolatedObjective: timeout must be positive seconds or None, got {timeout!r}")
        self.objective = objective
        self.start_method = start_method
        self.worker = Worker(
            self._launch,
            timeout=timeout,
            start_timeout=start_timeout,
            memory_limit=worker_memory,
            name="objective worker",
        )

    def _launch(self) -> Launched:
        import multiprocessing

        context: Any = multiprocessing.get_context(self.start_method)
        parent_end, child_end = context.Pipe()
        process = context.Process(
            target=_objective_child, args=(child_end, self.objective), name="pytest-autotune-objective"
        )
        process.start()
        child_end.close()
        return Launched(_ProcessChild(process), parent_end)

    def __call__(self, config: Mapping[str, Any]) -> Any:
        """The objective's value for ``config`` (or a failed outcome, see the class docstring)."""
        reply = self.worker.request(dict(config))
        return reply.outcome() if isinstance(reply, WorkerFailure) else reply

    @property
    def stats(self) -> WorkerStats:
        """Starts, crashes, timeouts and memory restarts of the worker so far."""
        return self.worker.stats

    def close(self) -> None:
        """Stop the worker."""
        self.worker.close()

    def __enter__(self) -> IsolatedObjective:
        return self

    def __exit__(self, *exc: object) -> None:
        self.worker.__exit__(*exc)
