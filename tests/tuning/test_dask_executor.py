"""One run's trials on the devices of a Dask cluster: a scheduler and two workers on 127.0.0.1.

Each ``dask worker`` advertises one device (``--resources autotune-device=1``) and names it in its
environment (``DEVICE``, standing for ``PYOPENCL_CTX``). The trials run in each Dask worker's
persistent trial worker (an :class:`IsolatedObjective`); a trial that crashes its trial worker is
labelled by our isolation and the worker restarts; a trial that kills its Dask worker comes back
as a lost trial, once: Dask does not retry it on the other worker. Every process is bounded by a
timeout and stopped at the end.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Interval, build_space
from pytest_autotune.tuning.parallel import run_parallel
from pytest_autotune.tuning.parallel.dask import DaskExecutor
from pytest_autotune.tuning.tuner import Tuner
from tests.tuning.dask_cluster import dask_cluster

OBJECTIVE = """
import os, signal, time


def objective(config):
    x = config["X"]
    with open(os.environ["TRIAL_LOG"], "a") as log:
        log.write(f"{os.environ['DEVICE']} {os.getpid()} {x}\\n")
    if x == 13:
        os._exit(3)  # the trial worker crashes
    if x == 17:
        os.kill(os.getppid(), signal.SIGKILL)  # its Dask worker dies
        time.sleep(30)
    time.sleep(0.05)
    return float(x)


def runner():
    from pytest_autotune.tuning.parallel.executor import ObjectiveRunner
    from pytest_autotune.tuning.process.isolated import IsolatedObjective

    return ObjectiveRunner(IsolatedObjective(objective, timeout=60))
"""


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A Dask scheduler and two one-device workers on 127.0.0.1; yields the scheduler's address."""
    (tmp_path / "dask_objective.py").write_text(OBJECTIVE)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    env["TRIAL_LOG"] = str(tmp_path / "trials.log")
    with dask_cluster(tmp_path, env) as address:
        yield address


def _lost(config: dict[str, object], detail: str) -> Outcome:
    return Outcome.failed("runtime", detail)


def test_trials_run_on_each_devices_persistent_worker_and_failures_stay_trials(
    cluster: str, tmp_path: Path
) -> None:
    import dask_objective  # type: ignore[import-not-found]  # written by the fixture
    from distributed import Client

    space = build_space({"X": Interval(10, 21)})
    tuner = Tuner(space, "exhaustive", seed=0)
    with Client(cluster, timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
        with DaskExecutor(client, dask_objective.runner, _lost) as executor:
            assert executor.slots == 2
            assert executor.allowed_failures_before == 3  # Dask's default, set to 0 for the run
            result = run_parallel(tuner, executor, lambda trial, outcome: outcome)
            deadline = time.monotonic() + 10  # a release reaches the client's loop soon after
            while client.futures and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not client.futures  # each future released once read: nothing to recompute
        allowed_failures = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures)

    labels = {int(record.config["X"]): record.outcome.label for record in result.history}
    assert sorted(labels) == list(range(10, 22))  # every configuration told, once
    assert labels[13] == "runtime"  # the trial worker crashed: our isolation labelled it
    assert labels[17] == "runtime"  # the Dask worker died: a lost trial, not an error
    assert {x for x, label in labels.items() if label != "ok"} == {13, 17}
    detail = {int(r.config["X"]): r.outcome.detail for r in result.history}
    assert "exited with status 3" in detail[13]
    assert "Dask worker" in detail[17]
    assert "not retried" in detail[17]
    calls: dict[int, int] = defaultdict(int)
    pids: dict[str, set[str]] = defaultdict(set)
    for line in (tmp_path / "trials.log").read_text().splitlines():
        device, pid, x = line.split()
        calls[int(x)] += 1
        pids[device].add(pid)
    assert calls[17] == 1  # never retried on the other worker (Dask's default would: 3 times)
    assert set(calls.values()) == {1}
    assert set(pids) == {"a", "b"}  # both devices served trials
    # a persistent trial worker per device: a new one only after a crash (13) or a lost worker (17)
    assert sum(len(found) for found in pids.values()) <= 4
    assert result.best_config == {"X": 10}
    assert allowed_failures == 0
