"""Trials in a worker process: a crash or a hang fails the trial, not the tuning run.

A *worker* is a child process that answers requests one at a time over a pipe. If it dies
(segfault, ``abort()``, out-of-memory kill) the request fails with label ``runtime`` and the exit
named; if it does not answer before the deadline its process group is killed and the request fails
with label ``timeout``; if its memory grew too much it is replaced. A replacement starts on the next
request, so the caller just goes on. Children watch their parent and exit when it is gone, so a
parent killed with SIGKILL leaves no worker behind, even one stuck in a hung trial.

The pieces, each in its own module so that the parent and the child side can be read (and started)
apart:

* :mod:`~pytest_autotune.tuning.process.protocol`: the messages over the pipe;
* :mod:`~pytest_autotune.tuning.process.worker`: the parent side, :class:`Worker` (start, deadline, restart,
  kill) and the failures it reports;
* :mod:`~pytest_autotune.tuning.process.serve`: the child side, :func:`serve_requests` and
  :func:`watch_parent`;
* :mod:`~pytest_autotune.tuning.process.output`: the part of a dead worker's output quoted in its
  failure.

This module applies them to the library: :class:`IsolatedObjective` wraps an objective for
:meth:`pytest_autotune.tuning.tuner.Tuner.run`, starting workers with ``multiprocessing``. The
pytest plugin's worker (a pytest sub-session that sets the test up itself) is in
:mod:`pytest_autotune.plugin.workers.parent`. The names of the modules above are re-exported here.

Hand-written because the standard pools do not fit: ``ProcessPoolExecutor``
marks the whole pool broken after one crashed call and cannot stop a call that
hangs, and ``multiprocessing.Pool`` waits forever for a task whose worker died.
"""

from __future__ import annotations

import signal
import traceback
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from typing import Any

from pytest_autotune.outcome import Outcome
from pytest_autotune.tuning.process.output import output_excerpt
from pytest_autotune.tuning.process.protocol import STOP, Ready, Reply
from pytest_autotune.tuning.process.serve import resident_bytes, serve_requests, watch_parent
from pytest_autotune.tuning.process.worker import (
    Child,
    Launched,
    Worker,
    WorkerFailure,
    WorkerStartError,
    WorkerStats,
    describe_exit,
)

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

    from pytest_autotune.backends import restart_needed

    serve_requests(channel, handle, restart_needed)


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
