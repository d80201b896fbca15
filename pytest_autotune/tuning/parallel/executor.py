"""Trial executors: where one tuning run evaluates its trials, several at a time, one per device.

A :class:`TrialExecutor` owns a fixed number of *slots*, numbered ``0 .. slots - 1``: one per device
(a GPU of this host, a Dask worker's device on another host, ...), each served by one persistent
trial worker. The parallel driver (:mod:`pytest_autotune.tuning.parallel.loop`) keeps every free slot
busy: it asks the tuner for a trial, :meth:`~TrialExecutor.submit`\\ s it to a free slot, and tells
the tuner each outcome as :meth:`~TrialExecutor.wait` returns it, in whatever order the trials
finish. The contract an executor keeps:

* ``slots``: how many trials can run at once (fixed for the executor's life).
* ``free()``: the slots with no trial running, lowest first.
* ``submit(slot, ticket, config)``: start evaluating ``config`` on a free ``slot`` and return at
  once; ``ticket`` is the caller's name for the trial (the tuner's trial number) and comes back
  with its result. Submitting to a busy slot is a ``ValueError``.
* ``wait(timeout)``: the trials that finished since the last call, as :class:`Finished` records;
  blocks until at least one finished or ``timeout`` seconds passed (None: no limit; ``[]`` when
  the time ran out, or at once when nothing is running). A finished trial's slot is free again.
* A crash or a hang fails that trial only: its result says so (the local executor's results are
  whatever the slot's runner returns, e.g. a ``runtime`` or ``timeout`` run), and the slot's worker
  is replaced before its next trial. An exception the runner raised instead of returning (a
  ``pytest.skip`` in the body, an interrupt) comes back as :attr:`Finished.error`, for the caller
  to raise again.
* ``restart(slot)``: replace the worker of an idle slot now (e.g. a remote worker that was lost
  between trials); the next trial on it starts a fresh one.
* ``close()``: stop every worker (a trial still running is abandoned and its worker killed);
  idempotent. Executors are context managers that close on exit.

:class:`LocalExecutor` is the implementation for the devices of this host: one thread per slot
drives that slot's :class:`SlotRunner` (the plugin's per-device
:class:`~pytest_autotune.plugin.workers.parent.IsolatedTrials`, or a library
:class:`~pytest_autotune.tuning.process.isolated.IsolatedObjective` through :class:`ObjectiveRunner`), whose
own worker (:mod:`pytest_autotune.tuning.process.worker`) already turns a crash or a hang into a failed
result and restarts on the next request. Threads suffice: a slot's thread only waits on its worker's
pipe, so the evaluation itself runs in the worker processes, in parallel. An executor for other
hosts implements the same five calls (e.g. over Dask futures: ``submit`` = ``client.submit`` with
the slot's device as a resource, ``wait`` = the completed futures, released once read).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Finished", "LocalExecutor", "ObjectiveRunner", "SlotRunner", "TrialExecutor"]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


@dataclass(frozen=True)
class Finished(Generic[R_co]):
    """A trial that finished on ``slot``: its ``ticket``, and the runner's ``result`` or the ``error``
    it raised (exactly one of the two is set)."""

    slot: int
    ticket: int
    result: R_co | None = None
    error: BaseException | None = None


class TrialExecutor(Protocol[R_co]):
    """Evaluates trials on several slots at once (see the module docstring for the contract)."""

    @property
    def slots(self) -> int:
        """How many trials can run at once."""

    def free(self) -> list[int]:
        """The slots with no trial running, lowest first."""

    def submit(self, slot: int, ticket: int, config: Mapping[str, Any]) -> None:
        """Start evaluating ``config`` on the free ``slot``; returns at once."""

    def wait(self, timeout: float | None = None) -> Sequence[Finished[R_co]]:
        """The trials finished since the last call (blocks until one finished or ``timeout``)."""

    def restart(self, slot: int) -> None:
        """Replace the worker of the idle ``slot`` (its next trial starts a fresh one)."""

    def close(self) -> None:
        """Stop every worker; idempotent."""


class SlotRunner(Protocol[R_co]):
    """One slot's persistent trial worker, as :class:`LocalExecutor` drives it."""

    def __call__(self, config: dict[str, Any]) -> R_co:
        """Evaluate one configuration (a crash or hang comes back as a failed result)."""

    def restart(self) -> None:
        """Stop the worker; the next call starts a fresh one."""

    def close(self, *, kill: bool = False) -> None:
        """Stop the worker for good (idempotent); ``kill``: at once, it may be running a trial."""


class ObjectiveRunner:
    """A :class:`SlotRunner` over a library objective worker (``IsolatedObjective`` or any callable
    with ``close()``, and a ``worker`` with ``stop()`` when it can restart)."""

    def __init__(self, objective: Callable[[dict[str, Any]], Any]) -> None:
        self.objective = objective

    def __call__(self, config: dict[str, Any]) -> Any:
        """The objective's value (or failed outcome) for ``config``."""
        return self.objective(config)

    def restart(self) -> None:
        """Stop the objective's worker, if it has one."""
        worker = getattr(self.objective, "worker", None)
        if worker is not None:
            worker.stop()

    def close(self, *, kill: bool = False) -> None:
        """Close the objective, if it can be closed (``kill``: without waiting for its worker)."""
        worker = getattr(self.objective, "worker", None)
        if kill and worker is not None:
            worker.__exit__(RuntimeError, None, None)  # the worker's way of killing instead of stopping
            return
        close = getattr(self.objective, "close", None)
        if close is not None:
            close()


_STOP = object()


class LocalExecutor(Generic[R]):
    """A :class:`TrialExecutor` over this host's devices: one thread and one runner per slot.

    ``runners[i]`` serves slot ``i``; the executor closes them when it closes.
    """

    def __init__(self, runners: Sequence[SlotRunner[R]]) -> None:
        if not runners:
            raise ValueError("LocalExecutor: at least one slot runner is needed")
        self._runners = list(runners)
        self._inboxes: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in self._runners]
        self._done: queue.SimpleQueue[Finished[R]] = queue.SimpleQueue()
        self._busy: set[int] = set()
        self._threads: list[threading.Thread | None] = [None] * len(self._runners)
        self._closed = False

    @property
    def slots(self) -> int:
        """How many trials can run at once (one per runner)."""
        return len(self._runners)

    @property
    def runners(self) -> list[SlotRunner[R]]:
        """The slot runners, by slot."""
        return list(self._runners)

    def free(self) -> list[int]:
        """The slots with no trial running, lowest first."""
        return [slot for slot in range(self.slots) if slot not in self._busy]

    def submit(self, slot: int, ticket: int, config: Mapping[str, Any]) -> None:
        """Hand ``config`` to ``slot``'s thread (started on first use); returns at once."""
        if self._closed:
            raise RuntimeError("LocalExecutor: submit after close")
        if not 0 <= slot < self.slots:
            raise ValueError(f"LocalExecutor: no slot {slot} (slots 0..{self.slots - 1})")
        if slot in self._busy:
            raise ValueError(f"LocalExecutor: slot {slot} is busy")
        self._busy.add(slot)
        if self._threads[slot] is None:
            thread = threading.Thread(
                target=self._serve, args=(slot,), name=f"pytest-autotune-slot-{slot}", daemon=True
            )
            self._threads[slot] = thread
            thread.start()
        self._inboxes[slot].put((ticket, dict(config)))

    def _serve(self, slot: int) -> None:
        """A slot's thread: run each trial handed to it, post what came of it."""
        runner, inbox = self._runners[slot], self._inboxes[slot]
        while (work := inbox.get()) is not _STOP:
            ticket, config = work
            try:
                self._done.put(Finished(slot, ticket, result=runner(config)))
            except BaseException as exc:  # the caller raises it again (a pytest outcome, an interrupt)
                self._done.put(Finished(slot, ticket, error=exc))

    def wait(self, timeout: float | None = None) -> list[Finished[R]]:
        """The trials finished since the last call; blocks until one finished or ``timeout``."""
        finished: list[Finished[R]] = []
        if self._busy:
            with contextlib.suppress(queue.Empty):
                finished.append(self._done.get(timeout=timeout))
        with contextlib.suppress(queue.Empty):
            while True:
                finished.append(self._done.get_nowait())
        for done in finished:
            self._busy.discard(done.slot)
        return finished

    def restart(self, slot: int) -> None:
        """Stop the idle ``slot``'s worker; its next trial starts a fresh one."""
        if slot in self._busy:
            raise ValueError(f"LocalExecutor: slot {slot} is busy; restart it when its trial finished")
        self._runners[slot].restart()

    def close(self) -> None:
        """Stop the slot threads and close every runner (a worker in a running trial is killed)."""
        if self._closed:
            return
        self._closed = True
        for inbox in self._inboxes:
            inbox.put(_STOP)
        for slot, runner in enumerate(self._runners):  # a killed worker's trial ends: so does its thread
            runner.close(kill=slot in self._busy)
        for thread in self._threads:
            if thread is not None:
                thread.join(timeout=10.0)

    def __enter__(self) -> LocalExecutor[R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
