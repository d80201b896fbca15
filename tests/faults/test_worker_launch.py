"""``Worker.launch``: start a worker's process without waiting for it; the first request waits.

The children here are fakes (a pipe and a settable exit status), so the order of events is exact.
"""

from __future__ import annotations

from multiprocessing import Pipe
from multiprocessing.connection import Connection

import pytest

from pytest_autotune.tuning.process.protocol import Ready
from pytest_autotune.tuning.process.worker import Launched, Worker, WorkerStartError


class FakeChild:
    """A child process that is only an exit status."""

    pid = 12345

    def __init__(self) -> None:
        self.status: int | None = None

    def exitcode(self) -> int | None:
        return self.status

    def kill(self) -> None:
        self.status = -9

    def wait(self, timeout: float) -> int | None:
        return self.status


class Launches:
    """The launch function of a :class:`Worker`: records each launch and keeps the child's end."""

    def __init__(self) -> None:
        self.children: list[FakeChild] = []
        self.ends: list[Connection] = []

    def __call__(self) -> Launched:
        parent_end, child_end = Pipe()
        self.children.append(FakeChild())
        self.ends.append(child_end)
        return Launched(self.children[-1], parent_end)


def test_launch_starts_the_process_without_waiting_and_wait_ready_waits_for_it() -> None:
    launches = Launches()
    worker = Worker(launches, timeout=None, start_timeout=5.0)
    worker.launch()  # the child has not said it is ready: launch must not wait for it
    assert len(launches.children) == 1
    assert worker.running
    assert worker.stats.starts == 1
    assert worker.stats.start_seconds == []
    worker.launch()  # one is up: no second process
    assert len(launches.children) == 1
    launches.ends[0].send(Ready(rss=0))
    worker.wait_ready()
    assert len(worker.stats.start_seconds) == 1
    worker.wait_ready()  # ready already: returns at once, nothing more recorded
    assert worker.stats.starts == 1
    assert len(worker.stats.start_seconds) == 1


def test_a_launched_process_that_exits_before_it_is_ready_fails_wait_ready() -> None:
    launches = Launches()
    worker = Worker(launches, timeout=None, start_timeout=5.0, name="baseline worker")
    worker.launch()
    launches.children[0].status = 3
    launches.ends[0].close()
    with pytest.raises(WorkerStartError, match="the baseline worker exited with status 3 before"):
        worker.wait_ready()
    assert not worker.running


def test_the_start_timeout_counts_from_the_launch() -> None:
    launches = Launches()
    worker = Worker(launches, timeout=None, start_timeout=0.0)
    worker.launch()
    with pytest.raises(WorkerStartError, match="did not get ready within 0s"):
        worker.wait_ready()
    assert launches.children[0].status == -9  # killed
