"""One run's trials on several slots at once: the local executor and the parallel driver.

Trials finish out of order (each fake device sleeps a time that depends on the configuration), and
the tuner's journal, resume and abort conditions must behave as in a sequential run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune import testing
from pytest_autotune.outcome import Outcome
from pytest_autotune.tuning.abort import Duration, Evaluations
from pytest_autotune.tuning.parallel.executor import LocalExecutor
from pytest_autotune.tuning.parallel.loop import run_parallel
from pytest_autotune.tuning.tuner import Tuner


class FakeDevice:
    """A slot runner that sleeps ``x`` milliseconds times ``scale`` and returns the toy objective."""

    def __init__(self, scale: float = 2.0, fail_on: Mapping[str, Any] | None = None) -> None:
        self.scale = scale
        self.fail_on = fail_on
        self.calls: list[dict[str, Any]] = []
        self.restarts = 0
        self.closed = False
        self.threads: set[str] = set()

    def __call__(self, config: dict[str, Any]) -> Outcome:
        self.calls.append(config)
        self.threads.add(threading.current_thread().name)
        if self.fail_on is not None and all(config.get(k) == v for k, v in self.fail_on.items()):
            raise KeyboardInterrupt("stop")
        time.sleep(self.scale * config["x"] / 1000)
        return testing.toy_objective(config)

    def restart(self) -> None:
        self.restarts += 1

    def close(self, *, kill: bool = False) -> None:
        self.closed = True


def _outcome(trial: object, result: Outcome) -> Outcome:
    return result


def test_trials_run_on_every_slot_and_finish_out_of_order() -> None:
    space = testing.toy_space()
    devices = [FakeDevice() for _ in range(3)]
    with LocalExecutor(devices) as executor:
        tuner = Tuner(space, "random", abort=Evaluations(24), seed=3)
        result = run_parallel(tuner, executor, _outcome)
    assert result.evaluations == 24  # the budget counts trials under way: none is started in excess
    assert sum(len(d.calls) for d in devices) == 24
    assert all(d.calls for d in devices)
    assert all(d.closed for d in devices)
    assert len({t for d in devices for t in d.threads}) == 3
    numbers = [record.number for record in result.history]
    assert sorted(numbers) == list(range(24))
    assert numbers != sorted(numbers), "trials were told in the order they were asked"
    keys = {tuple(sorted(r.config.items())) for r in result.history}
    assert len(keys) == 24


def test_a_time_limit_stops_asking_and_every_started_trial_is_told() -> None:
    space = testing.toy_space()
    with LocalExecutor([FakeDevice(scale=20.0) for _ in range(2)]) as executor:
        tuner = Tuner(space, "random", abort=Duration(0.4), seed=1)
        result = run_parallel(tuner, executor, _outcome)
    assert 2 <= result.evaluations < 40
    assert not tuner._ledger.pending  # nothing left asked and untold


def test_journal_and_resume_with_trials_finishing_out_of_order(tmp_path: Path) -> None:
    space = testing.toy_space()
    journal = tmp_path / "journal.jsonl"
    executor = LocalExecutor([FakeDevice() for _ in range(4)])
    with executor, Tuner(space, "anneal", abort=Evaluations(12), seed=5, journal=journal) as tuner:
        first = run_parallel(tuner, executor, _outcome)
    assert [r.number for r in first.history] != list(range(12))
    devices = [FakeDevice() for _ in range(4)]
    executor = LocalExecutor(devices)
    with executor, Tuner(space, "anneal", abort=Evaluations(30), seed=5, journal=journal) as tuner:
        resumed = run_parallel(tuner, executor, _outcome)
    assert resumed.resumed == 12
    assert resumed.evaluations == 30
    ran_again = [c for d in devices for c in d.calls]
    assert len(ran_again) == 18
    recorded = [r.config for r in first.history]
    assert not any(config in recorded for config in ran_again), "a journaled trial ran again"
    assert sorted(r.number for r in resumed.history) == list(range(30))
    assert len({tuple(sorted(r.config.items())) for r in resumed.history}) == 30


def test_an_exception_from_a_slot_cancels_the_trials_under_way(tmp_path: Path) -> None:
    space = testing.toy_space()
    journal = tmp_path / "journal.jsonl"
    devices = [FakeDevice(scale=5.0, fail_on={"x": 3}) for _ in range(2)]
    executor = LocalExecutor(devices)
    with executor, Tuner(space, "exhaustive", abort=Evaluations(50), seed=0, journal=journal) as tuner:
        with pytest.raises(KeyboardInterrupt, match="stop"):
            run_parallel(tuner, executor, _outcome)
        assert not tuner._ledger.pending
        told = len(tuner.history)
    with Tuner(space, "exhaustive", abort=Evaluations(50), seed=0, journal=journal) as tuner:
        assert tuner.result.resumed == told
        assert all(r.config["x"] != 3 for r in tuner.history)  # the interrupted trial runs again


def test_the_executor_refuses_a_busy_slot_and_restarts_an_idle_one() -> None:
    devices = [FakeDevice(scale=50.0)]
    with LocalExecutor(devices) as executor:
        assert executor.free() == [0]
        executor.submit(0, 7, {"x": 1, "y": 1, "mode": "a"})
        assert executor.free() == []
        with pytest.raises(ValueError, match="busy"):
            executor.submit(0, 8, {"x": 2, "y": 1, "mode": "a"})
        with pytest.raises(ValueError, match="busy"):
            executor.restart(0)
        (done,) = executor.wait()
        assert (done.slot, done.ticket, done.error) == (0, 7, None)
        assert done.result == testing.toy_objective({"x": 1, "y": 1, "mode": "a"})
        assert executor.free() == [0]
        assert executor.wait(timeout=0.01) == []
        executor.restart(0)
    assert devices[0].restarts == 1
    assert devices[0].closed
