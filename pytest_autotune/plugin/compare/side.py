"""The parent side of one side of ``--autotune-compare``: a worker pytest that runs the test from one tree.

A :class:`CompareSide` starts a worker in the ``compare`` role
(:mod:`pytest_autotune.plugin.compare.worker`) from the reference commit's tree (``root``) or from
the working tree (``root`` None), asks it to run the body once (:meth:`CompareSide.setup`) and then
again for each measurement (:meth:`CompareSide.measure`). The worker machinery is the trial workers' own
(:class:`~pytest_autotune.tuning.process.worker.Worker`): a crash or hang of the body ends in a
:class:`SideError`, not in a crash of pytest. Every problem comes back as a :class:`SideError`
whose ``kind`` lets the caller choose between skipping and failing the test: the worker's
:data:`~pytest_autotune.plugin.compare.messages.NotServedKind` (``missing``: the tree has no such
test; ``not-tunable``, ``collection``, ``store``, ``unfaithful``), ``ended`` (the body raised a
pytest outcome, kept in ``ended``) and ``failed`` (a failed assert, an exception, a crash, a hang,
a worker that could not start).

Each request is limited by the trial timeout and, once the pair's time cap runs
(:attr:`CompareSide.deadline`), by the time left of it, but never below :data:`HANG_FACTOR` times
the side's slowest run so far: a run that outlasts both is a hang, and ends the comparison within
the cap instead of the trial timeout (or never, with ``off``).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pytest_autotune.plugin.compare.messages import (
    CompareMeasure,
    CompareSetup,
    NotCollected,
    NotServedKind,
    SideSetup,
)
from pytest_autotune.plugin.workers.launch import launch_worker
from pytest_autotune.plugin.workers.protocol import BodyEnded, TrialReply
from pytest_autotune.tuning.process.worker import Launched, Worker, WorkerFailure, WorkerStartError

if TYPE_CHECKING:
    import pytest

__all__ = ["HANG_FACTOR", "HANG_GRACE", "START_TIMEOUT", "CompareSide", "SideError"]

#: Seconds a side's worker may take to collect and set up its test.
START_TIMEOUT: Final = 300.0
#: Past the time cap a run may still take this many times the side's slowest run so far ...
HANG_FACTOR: Final = 3.0
#: ... plus these seconds (also the least any run is allowed once the cap runs).
HANG_GRACE: Final = 1.0


class SideError(Exception):
    """Side ``side`` cannot be measured; ``kind``: ``missing``, ``ended`` or ``failed`` (module docstring).

    The message starts with the side's name.
    """

    def __init__(
        self,
        side: str,
        kind: NotServedKind | Literal["ended", "failed"],
        message: str,
        ended: BodyEnded | None = None,
    ) -> None:
        super().__init__(f"{side}: {message}")
        self.message = message
        self.side = side
        self.kind = kind
        self.ended = ended


class CompareSide:
    """One side of a comparison, served by a worker process (see the module docstring).

    ``name`` names the side in messages (``REF origin/main``, ``the working tree``); ``env`` is the
    worker's environment; ``timeout`` limits each request (None: no limit). Use it as a context
    manager: leaving stops the worker.
    """

    def __init__(
        self,
        item: pytest.Item,
        *,
        name: str,
        root: Path | None,
        env: dict[str, str],
        timeout: float | None,
        clock: str = "wall",
    ) -> None:
        self.item = item
        #: The clock the measurements are judged on (``cpu``: the CPU times the worker read, when it
        #: read them; :mod:`pytest_autotune.timing.clock`); :attr:`judged_on` says which one was.
        self.clock = clock
        self.judged_on = clock
        #: Each measurement's median on the other clock (reported, not judged).
        self.other: list[float] = []
        self.name = name
        self.root = root
        self.env = env
        self.worker = Worker(
            self._launch, timeout=timeout, start_timeout=START_TIMEOUT, name=f"worker of {name}"
        )
        #: When the pair's time cap ends (``time.monotonic()``; None: not running yet) and what it is.
        self.deadline: float | None = None
        self.cap = ""
        #: The longest request this side has served, in seconds.
        self.slowest = 0.0

    def _launch(self) -> Launched:
        return launch_worker(self.item, env=self.env, role="compare", root=self.root)

    def _not_served(self, reply: NotCollected) -> SideError:
        return SideError(self.name, reply.kind, reply.reason)

    def launch(self) -> None:
        """Start the worker process without waiting for it (:meth:`start` waits)."""
        self.worker.launch()

    def start(self) -> None:
        """Wait until the worker has collected its test and is ready; :class:`SideError` else."""
        try:
            self.worker.wait_ready()
        except WorkerStartError as exc:
            if isinstance(exc.reply, NotCollected):
                raise self._not_served(exc.reply) from None
            raise SideError(self.name, "failed", str(exc)) from None

    def _limit(self) -> tuple[float | None, str]:
        """This request's time limit and how to name it (module docstring)."""
        trial = self.worker.timeout
        if self.deadline is None:
            return trial, ""
        floor = HANG_FACTOR * self.slowest + HANG_GRACE
        allowed = max(self.deadline - time.monotonic(), floor)
        if trial is not None and trial <= allowed:
            return trial, ""
        return allowed, (
            f"{allowed:.3g}s (the time left of {self.cap}, or {HANG_FACTOR:g} times the slowest run "
            "so far: a hang? if a run takes that long, raise it)"
        )

    def _request(self, message: Any) -> Any:
        self.start()
        timeout, limit = self._limit()
        began = time.monotonic()
        reply = self.worker.request(message, timeout=timeout, limit=limit)
        self.slowest = max(self.slowest, time.monotonic() - began)
        if isinstance(reply, WorkerFailure):
            raise SideError(self.name, "failed", reply.detail)
        if isinstance(reply, NotCollected):  # the guard refused what a run imported
            self.worker.stop()
            raise self._not_served(reply)
        if isinstance(reply, BodyEnded):
            self.worker.stop()
            raise SideError(self.name, "ended", f"the test ended with {reply.kind}: {reply.message}", reply)
        return reply

    def _samples(self, run: TrialReply) -> tuple[float, ...]:
        if run.label != "ok":
            raise SideError(self.name, "failed", f"the test failed ({run.label}): {run.detail}")
        if not run.samples:
            raise SideError(
                self.name, "failed", "the test never called autotune.measure() or autotune.record()"
            )
        return run.samples

    def setup(self, repeat: int) -> SideSetup:
        """Start the worker and run the body once with the side's configuration (asserts included)."""
        setup = self._request(CompareSetup(repeat))
        assert isinstance(setup, SideSetup)
        self._samples(setup.run)
        return setup

    def measure(self, repeat: int, warmup: int) -> tuple[float, ...]:
        """One measurement: run the body again (``warmup`` untimed and ``repeat`` timed calls per
        ``autotune.measure``)."""
        run = self._request(CompareMeasure(repeat, warmup))
        assert isinstance(run, TrialReply)
        samples = self._samples(run)
        if self.clock == "cpu" and len(run.cpu) == len(samples):
            self.other.append(statistics.median(samples))
            return run.cpu
        self.judged_on = "wall"  # no CPU times (a timer that reads none, recorded values)
        if len(run.cpu) == len(samples):
            self.other.append(statistics.median(run.cpu))
        return samples

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        self.worker.close()

    def __enter__(self) -> CompareSide:
        return self

    def __exit__(self, *exc: object) -> None:
        self.worker.__exit__(*exc)
