"""The parent side of trial isolation: one persistent worker process, replaced when it fails.

:class:`Worker` sends a request to its worker process and waits for the reply under a deadline:

* the child dies (segfault, ``abort()``, ``os._exit``, out-of-memory kill): the request fails with
  label ``runtime`` and the exit named (``killed by signal SIGSEGV (Segmentation fault)``), plus the
  end of the child's output when it writes to a log file (:mod:`pytest_autotune.tuning.process.output`);
* no reply before the deadline: the child's process group is killed and the request fails with
  label ``timeout``;
* the child's memory grew by more than a limit since it started (a leak across trials): the reply
  is kept and the child is replaced before the next request;
* the child says it cannot go on (its reply's ``restart``: a GPU context lost to an illegal
  address): the reply is kept and the child is replaced before the next request.

A replacement starts on the next request, so the caller just goes on. How a child is started is
not this class's business: the caller passes a ``launch`` function returning :class:`Launched` (a
:class:`Child` process and the parent's end of its pipe), so the library
(:mod:`pytest_autotune.tuning.process.isolated`) and the pytest plugin
(:mod:`pytest_autotune.plugin.workers.parent`) share this logic while starting workers their own way.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final, Protocol

from pytest_autotune.outcome import Label, Outcome
from pytest_autotune.tuning.process.output import log_size, output_since
from pytest_autotune.tuning.process.protocol import STOP, Ready, Reply

__all__ = [
    "STOP_SECONDS",
    "Child",
    "Launched",
    "Worker",
    "WorkerFailure",
    "WorkerStartError",
    "WorkerStats",
    "describe_exit",
]

#: Seconds a stopping worker gets to finish (fixture teardown) before it is killed.
STOP_SECONDS: Final = 30.0
_POLL_SECONDS: Final = 0.2


@dataclass(frozen=True)
class WorkerFailure:
    """A request that got no reply: the worker died (``runtime``) or ran past the deadline (``timeout``)."""

    label: Label
    detail: str

    def outcome(self) -> Outcome:
        """The trial outcome."""
        return Outcome.failed(self.label, self.detail)


class WorkerStartError(RuntimeError):
    """A worker exited or stalled before it was ready; the message holds its output.

    ``reply`` is what the worker sent instead of getting ready (None when it sent nothing), e.g. a
    message saying why it cannot serve.
    """

    def __init__(self, message: str, reply: Any = None) -> None:
        super().__init__(message)
        self.reply = reply


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


def _the(name: str) -> str:
    """``"the trial worker"``; a name that has its article already stays as it is (``"the working
    tree worker"``, not ``"the the working tree worker"``)."""
    return name if name.startswith("the ") else f"the {name}"


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
    context_restarts: int = 0
    start_seconds: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for reports."""
        return {
            "worker_starts": self.starts,
            "crashes": self.crashes,
            "timeouts": self.timeouts,
            "memory_restarts": self.memory_restarts,
            "context_restarts": self.context_restarts,
            "start_seconds": [round(s, 4) for s in self.start_seconds],
        }


_NO_REPLY: Final = object()
_OWN_TIMEOUT: Final = object()  # request(): the worker's own timeout


class Worker:
    """Parent side of one persistent worker (see the module docstring).

    ``launch()`` starts a child that runs
    :func:`~pytest_autotune.tuning.process.serve.serve_requests`; ``timeout`` limits each request
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
        #: When the current child was launched (perf_counter), while it has not said it is ready.
        self._launched_at: float | None = None

    @property
    def running(self) -> bool:
        """Whether a worker process is up (it starts on the first request)."""
        return self._current is not None

    def request(self, message: Any, *, timeout: float | object | None = _OWN_TIMEOUT, limit: str = "") -> Any:
        """Send ``message``; return the reply's payload, or a :class:`WorkerFailure`.

        ``timeout`` replaces the worker's own for this request (None: no limit) and ``limit`` says
        what it is in the failure's message. Raises :class:`WorkerStartError` when a worker cannot be
        started.
        """
        current = self.wait_ready()
        offset = log_size(current.log)
        with contextlib.suppress(OSError):  # a worker that is gone is collected below as a crash
            current.channel.send(message)
        seconds = self.timeout if timeout is _OWN_TIMEOUT else timeout
        assert seconds is None or isinstance(seconds, (int, float))
        deadline = None if seconds is None else time.monotonic() + seconds
        reply = self._receive(current, deadline)
        if reply is _NO_REPLY:
            exitcode = current.child.exitcode()
            label: Label = "runtime"
            if exitcode is None:
                self.stats.timeouts += 1
                label, what = "timeout", f"no result within {limit or f'the trial timeout of {seconds:g}s'}"
                what += f" ({_the(self.name)} was killed)"
            else:
                self.stats.crashes += 1
                what = f"{_the(self.name)} {describe_exit(exitcode)}"
            failure = WorkerFailure(label, self._detail(what, current, offset))
            self._discard()
            return failure
        assert isinstance(reply, Reply)
        if reply.restart is not None:
            self.stats.context_restarts += 1
            self.stop()  # the child ends its loop after this reply
        elif self.memory_limit is not None and reply.rss - self._ready_rss > self.memory_limit:
            self.stats.memory_restarts += 1
            self.stop()
        return reply.payload

    def _detail(self, what: str, current: Launched, offset: int) -> str:
        output = output_since(current.log, offset)
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

    def launch(self) -> None:
        """Start the child now without waiting for it (no-op when one is up); the next request, or
        :meth:`wait_ready`, waits until it is ready. Several workers launched first and then waited
        for set up at the same time, e.g. the fresh processes of a baseline."""
        if self._current is None:
            self._current = self._launch()
            self._launched_at = time.perf_counter()
            self.stats.starts += 1

    def wait_ready(self) -> Launched:
        """The child, started if none is up, once it is ready to serve requests.

        Raises :class:`WorkerStartError` when it exits or stalls (``start_timeout`` counted from its
        launch) before it is ready.
        """
        self.launch()
        current = self._current
        assert current is not None
        if self._launched_at is None:
            return current
        deadline = time.monotonic() + self.start_timeout - (time.perf_counter() - self._launched_at)
        ready = self._receive(current, deadline)
        if not isinstance(ready, Ready):
            exitcode = current.child.exitcode()
            why = (
                f"did not get ready within {self.start_timeout:g}s"
                if exitcode is None
                else describe_exit(exitcode)
            )
            detail = self._detail(f"{_the(self.name)} {why} before running any trial", current, 0)
            self._discard()
            raise WorkerStartError(detail, None if ready is _NO_REPLY else ready)
        self._ready_rss = ready.rss
        self.stats.start_seconds.append(time.perf_counter() - self._launched_at)
        self._launched_at = None
        return current

    def stop(self) -> None:
        """Ask the worker to finish (it tears down) and wait; kill it if it does not."""
        current = self._current
        if current is None:
            return
        with contextlib.suppress(OSError):
            current.channel.send(STOP)
        if self._launched_at is not None:  # launched, never ready: nothing to tear down gracefully
            self._discard()
            return
        try:
            current.child.wait(STOP_SECONDS)  # then killed if it is still there
        finally:  # an interrupt while waiting kills it at once
            self._discard()

    def _discard(self) -> None:
        """Forget the current worker: kill what is left of it (its process group), reap, clean up."""
        current, self._current = self._current, None
        self._launched_at = None
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
