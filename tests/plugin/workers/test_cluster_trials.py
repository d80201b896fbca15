"""A test's trials on the devices of a Dask cluster: worker pytests started on the Dask workers.

Two ``dask worker`` processes on 127.0.0.1, each with its device named in its environment
(``DEVICE``), run a pytester project's tunable test: each builds, from the test's recipe, a
persistent worker pytest that sets the test up on its host and serves trials; the tuning loop keeps
both busy. A trial that crashes its worker pytest fails alone, and that worker restarts.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("distributed")

from pytest_autotune.api import get_spec
from pytest_autotune.plugin.workers.launch import worker_recipe
from pytest_autotune.plugin.workers.remote import RemoteTrials, lost_trial
from pytest_autotune.tuning.parallel import run_parallel
from pytest_autotune.tuning.parallel.dask import DaskExecutor
from pytest_autotune.tuning.tuner import Tuner
from tests.tuning.dask_cluster import dask_cluster

TEST = """
import os

from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 6, default=1))
def test_k(autotune):
    with open(os.environ["TRIAL_LOG"], "a") as log:
        log.write(f"{os.environ['DEVICE']} {os.getpid()} {autotune.config['A']}\\n")
    if autotune.config["A"] == 5:
        os._exit(3)
    autotune.measure(lambda: None)
"""


def test_a_tests_trials_run_in_worker_pytests_on_the_dask_workers(project: pytest.Pytester) -> None:
    log = Path(project.path) / "trials.log"
    project.makepyfile(test_k=TEST)
    (item,), _ = project.inline_genitems()
    spec = get_spec(item.obj)
    assert spec is not None
    recipe = worker_recipe(item)
    env = {**os.environ, "TRIAL_LOG": str(log)}
    factory = RemoteTrials(recipe, repeat=3, timeout=120, cache_path=str(project.path / "autotune.json"))
    from distributed import Client

    with dask_cluster(Path(project.path), env) as address, Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
        with DaskExecutor(client, factory, lost_trial) as executor:
            tuner = Tuner(spec.space, "exhaustive", seed=0)
            result = run_parallel(tuner, executor, lambda trial, run: run.outcome())
    labels = {record.config["A"]: record.outcome.label for record in result.history}
    assert labels == {1: "ok", 2: "ok", 3: "ok", 4: "ok", 5: "runtime", 6: "ok"}
    assert result.best_config == {"A": 3}  # the fake timer's optimum: the samples came back
    workers: dict[str, set[str]] = defaultdict(set)
    for line in log.read_text().splitlines():
        device, pid, _ = line.split()
        workers[device].add(pid)
    assert set(workers) == {"a", "b"}  # both devices ran trials, each in its own worker pytest
    assert sum(len(pids) for pids in workers.values()) <= 3  # persistent: a new one only after A=5


LOGGED = """
import os

from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 6, default=1), strategy="exhaustive")
def test_k(autotune):
    with open(os.environ["TRIAL_LOG"], "a") as log:
        log.write(f"{os.environ['DEVICE']} {autotune.tuning} {autotune.config['A']}\\n")
    autotune.measure(lambda: None)
"""


def test_autotune_cluster_runs_the_search_on_the_clusters_devices(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, store_data: Any
) -> None:
    log = Path(project.path) / "trials.log"
    project.makepyfile(test_k=LOGGED)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "process")  # the project fixture runs in-process
    monkeypatch.setenv("TRIAL_LOG", str(log))
    monkeypatch.setenv("DEVICE", "here")  # this host's device: the finalists and the final call
    from distributed import Client

    with dask_cluster(Path(project.path), dict(os.environ)) as address:
        with Client(address, timeout=60) as client:  # the executor counts the workers it finds
            client.wait_for_workers(2, timeout=60)
        result = project.runpytest_subprocess(
            "-p", "no:hypothesispytest", "-p", "no:benchmark", "--autotune", f"--autotune-cluster={address}"
        )
    result.assert_outcomes(passed=1)
    searched: dict[str, set[str]] = defaultdict(set)
    for line in log.read_text().splitlines():
        device, tuning, a = line.split()
        if tuning == "True":
            searched[device].add(a)
    assert {"a", "b"} <= set(searched)  # the search ran on both of the cluster's devices
    assert set().union(*(searched[d] for d in ("a", "b"))) == {str(a) for a in range(1, 7)}
    (device,) = store_data()["devices"].values()
    assert device["tests"]["test_k.py::test_k"]["config"] == {"A": 3}
