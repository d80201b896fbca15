"""Two identical OpenCL devices (PoCL's CPU exposed twice) under ``pytest --autotune -n 2``.

The two devices have one key, as eight identical GPUs do: each worker gets its own, the tests are
spread over both workers, each test is tuned once, by one worker, and ``autotune.json`` holds one
entry per test under the one key.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl

TESTS = """
import os

import pyopencl as cl
from pytest_autotune import Interval, tunable


def device_index(queue):
    return cl.get_platforms()[0].get_devices().index(queue.device)


def log(autotune, cl_queue, name):
    line = f"{os.environ.get('PYTEST_XDIST_WORKER')} {name} {device_index(cl_queue)} {autotune.tuning}"
    with open(os.environ["TRIAL_LOG"], "a") as out:
        out.write(line + "\\n")


@tunable(A=Interval(1, 4, default=1), strategy="exhaustive")
def test_a(autotune, cl_queue):
    log(autotune, cl_queue, "a")
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 4, default=1), strategy="exhaustive")
def test_b(autotune, cl_queue):
    log(autotune, cl_queue, "b")
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 4, default=1), strategy="exhaustive")
def test_c(autotune, cl_queue):
    log(autotune, cl_queue, "c")
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 4, default=1), strategy="exhaustive")
def test_d(autotune, cl_queue):
    log(autotune, cl_queue, "d")
    autotune.measure(lambda: None)
"""


@pytest.mark.parametrize(
    "workers",
    [
        ["-n", "2"],  # each worker takes a usable device of its own
        ["-n", "2", "--autotune-device=0:0,0:1"],  # was: "2 xdist workers share it" (one name)
        ["--dist=load", "--tx=popen//env:PYOPENCL_CTX=0:0", "--tx=popen//env:PYOPENCL_CTX=0:1"],  # was too
    ],
    ids=["auto", "device-list", "env-per-worker"],
)
def test_two_identical_devices_tune_side_by_side(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    monkeypatch.setenv("POCL_DEVICES", "pthread pthread")
    monkeypatch.setenv("TRIAL_LOG", str(project.path / "trials.log"))
    project.makepyfile(test_k=TESTS)
    result = project.runpytest_subprocess(
        *workers, "-p", "no:hypothesispytest", "-p", "no:benchmark", "--autotune"
    )
    result.assert_outcomes(passed=4)
    trials: dict[str, set[tuple[str, str]]] = defaultdict(set)
    devices: dict[str, set[str]] = defaultdict(set)
    for line in (project.path / "trials.log").read_text().splitlines():
        worker, test, device, tuning = line.split()
        devices[worker].add(device)
        if tuning == "True":
            trials[test].add((worker, device))
    assert devices.keys() == {"gw0", "gw1"}  # spread over both workers
    assert [len(found) for found in devices.values()] == [1, 1]  # each keeps its device
    assert devices["gw0"] != devices["gw1"]  # and has a device of its own
    assert sorted(trials) == ["a", "b", "c", "d"]
    assert all(len(tuners) == 1 for tuners in trials.values())  # each test tuned by one worker only
    store = json.loads((project.path / "autotune.json").read_text())
    (device,) = store["devices"].values()  # one device type, one key
    assert sorted(device["tests"]) == [f"test_k.py::test_{name}" for name in "abcd"]
