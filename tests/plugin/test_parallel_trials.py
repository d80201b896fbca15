"""``--autotune-parallel``: one test's trials on several devices of one type, a worker per device.

A simulated backend with two identical devices (one key, two specs) stands in for a box of GPUs:
each trial writes which device and which worker process ran it.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pytest_autotune import backends

TWINS = """
import pytest
from pytest_autotune.backends import Backend


class SimResult:
    def __init__(self, seconds):
        self.seconds = seconds


class TwinBackend(Backend):
    name = "sim"
    fixtures = frozenset({"sim_device"})

    def devices(self):
        return ["gpu0", "gpu1"]

    def select(self, spec):
        return spec or "gpu0"

    def key(self, device):
        return "sim:twin"

    def spec_of(self, device):
        return device

    def info(self, device):
        return {"key": self.key(device)}

    def result_seconds(self, result):
        return result.seconds if isinstance(result, SimResult) else None


@pytest.fixture(scope="session")
def sim_device(_autotune_devices):
    return _autotune_devices.device("sim")
"""

CONFTEST = """
from pytest_autotune.backends import register_backend

register_backend("sim", "twins:TwinBackend", fixtures=["sim_device"], fixture_module="twins")
"""

TEST = """
import os
import time
from pathlib import Path

from twins import SimResult
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 8, default=1), strategy="exhaustive", budget=8)
def test_twin(autotune, sim_device):
    a = autotune.config["A"]
    if autotune.tuning:
        with open(Path(__file__).parent / "trials.log", "a") as log:
            log.write(f"{os.getpid()} {sim_device} {a}\\n")
    if a == 3 and autotune.tuning:
        os._exit(3)
    time.sleep(0.1 if sim_device == "gpu0" else 0.02)
    autotune.measure(lambda: SimResult(1e-3 * (1 + (a - 6) ** 2)))
"""


@pytest.fixture
def twins(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose one tunable test runs on the simulated twin devices."""
    monkeypatch.setattr(backends, "_REGISTRY", dict(backends._REGISTRY))
    monkeypatch.setattr(backends, "_INSTANCES", dict(backends._INSTANCES))
    pytester.makepyfile(twins=TWINS, test_twin=TEST)
    pytester.makeconftest(CONFTEST)
    pytester.syspathinsert()
    return pytester


def _trials(path: Path) -> list[tuple[int, str, int]]:
    rows = [line.split() for line in (path / "trials.log").read_text().splitlines()]
    return [(int(pid), device, int(a)) for pid, device, a in rows]


def test_trials_run_on_every_device_and_a_crash_fails_only_its_trial(twins: pytest.Pytester) -> None:
    result = twins.runpytest("--autotune", "--autotune-parallel=all", "--autotune-isolate=process", "-rA")
    result.assert_outcomes(passed=1)
    trials = _trials(twins.path)
    searched = Counter(a for _, _, a in trials)
    assert set(searched) == set(range(1, 9))
    by_device = Counter(device for _, device, _ in trials)
    assert set(by_device) == {"gpu0", "gpu1"}, by_device  # both devices ran trials
    pids = {device: {pid for pid, d, _ in trials if d == device} for device in by_device}
    assert not pids["gpu0"] & pids["gpu1"]  # one worker process per device
    crashed_on = next(device for _, device, a in trials if a == 3)
    assert len(pids[crashed_on]) >= 2 or trials[-1][2] == 3  # that device's worker was restarted
    store = json.loads((twins.path / "autotune.json").read_text())
    assert list(store["devices"]) == ["sim:twin"]  # one entry per device type
    entry = store["devices"]["sim:twin"]["tests"]["test_twin.py::test_twin"]
    assert entry["config"] == {"A": 6}
    assert entry["tuning"]["trials"] == 8
    assert entry["tuning"]["counts"]["runtime"] == 1
    assert entry["tuning"]["counts"]["ok"] == 7
    result.stdout.fnmatch_lines(["*1 crash*"])


def test_asking_for_more_devices_than_there_are_uses_those_there_are(twins: pytest.Pytester) -> None:
    result = twins.runpytest("--autotune", "--autotune-parallel=4", "--autotune-isolate=process")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*--autotune-parallel=4: this host has 2 usable device(s) of type sim:twin;*"]
    )
    assert {device for _, device, _ in _trials(twins.path)} == {"gpu0", "gpu1"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--autotune-parallel=0"], "*--autotune-parallel*expected at least 1 device, got 0*"),
        (["--autotune-parallel=many"], "*--autotune-parallel*expected a number of devices or 'all'*"),
        (["--autotune-parallel=2", "-n", "2"], "*--autotune-parallel cannot be combined with pytest-xdist*"),
    ],
)
def test_bad_parallel_values_are_usage_errors(twins: pytest.Pytester, args: list[str], message: str) -> None:
    result = twins.runpytest("--autotune", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
