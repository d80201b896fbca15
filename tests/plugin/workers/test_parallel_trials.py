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

    def identity(self, device):
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
    monkeypatch.setattr(backends.registry, "_REGISTRY", dict(backends.registry._REGISTRY))
    monkeypatch.setattr(backends.registry, "_INSTANCES", dict(backends.registry._INSTANCES))
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
    result.stdout.fnmatch_lines(["*trials on 2 devices at once; trial workers restarted: 1 crash*"])


def test_asking_for_more_devices_than_there_are_uses_those_there_are(twins: pytest.Pytester) -> None:
    result = twins.runpytest("--autotune", "--autotune-parallel=4", "--autotune-isolate=process")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*--autotune-parallel=4: this host has 2 usable device(s) of type sim:twin;*"]
    )
    assert {device for _, device, _ in _trials(twins.path)} == {"gpu0", "gpu1"}


def test_trials_in_the_pytest_process_run_one_at_a_time_with_a_warning(twins: pytest.Pytester) -> None:
    twins.makepyfile(test_twin=TEST.replace("os._exit(3)", "pass"))  # no crash in the pytest process
    result = twins.runpytest("--autotune", "--autotune-parallel=2", "--autotune-isolate=none")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*--autotune-parallel=2 needs isolated trials*"])
    assert {device for _, device, _ in _trials(twins.path)} == {"gpu0"}


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


INTERRUPTED = """
import os
import time
from pathlib import Path

from twins import SimResult
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 8, default=1), strategy="exhaustive", budget=8)
def test_twin(autotune, sim_device):
    a = autotune.config["A"]
    here = Path(__file__).parent
    if autotune.tuning:
        with open(here / "trials.log", "a") as log:
            log.write(f"{os.environ['RUN']} {sim_device} {a}\\n")
        if a == 5 and (here / "interrupt").exists():
            raise KeyboardInterrupt("stopped by hand")
    time.sleep(0.05 * a)
    autotune.measure(lambda: SimResult(1e-3 * (1 + (a - 6) ** 2)))
"""


def _journal(path: Path) -> list[tuple[int, int]]:
    """(trial number, A) of each trial line of the test's journal under the pytest cache."""
    (found,) = [p for p in path.glob(".pytest_cache/**/autotune/*.jsonl") if "lock" not in p.name]
    lines = [json.loads(line) for line in found.read_text().splitlines()[1:]]
    return [(line["trial"], line["config"]["A"]) for line in lines if "trial" in line]


def test_an_interrupted_parallel_run_resumes_from_its_journal(
    twins: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trials told out of order are journaled; the resumed run evaluates none of them again."""
    twins.makepyfile(test_twin=INTERRUPTED)
    (twins.path / "interrupt").touch()
    args = ("--autotune", "--autotune-parallel=2", "--autotune-isolate=process")
    monkeypatch.setenv("RUN", "1")
    assert twins.runpytest(*args, no_reraise_ctrlc=True).ret == pytest.ExitCode.INTERRUPTED
    told = _journal(twins.path)
    assert 5 not in {a for _, a in told}  # the interrupted trial is not journaled
    (twins.path / "interrupt").unlink()
    monkeypatch.setenv("RUN", "2")
    twins.runpytest(*args).assert_outcomes(passed=1)
    rows = [line.split() for line in (twins.path / "trials.log").read_text().splitlines()]
    second = [int(a) for run, _, a in rows if run == "2"]
    left = 8 - len(told)
    assert sorted(second[:left]) == sorted(set(range(1, 9)) - {a for _, a in told})  # then the finalists
    final = _journal(twins.path)
    assert final[: len(told)] == told
    assert sorted(a for _, a in final) == list(range(1, 9))  # each configuration journaled once
    assert len({n for n, _ in final}) == 8
    entry = json.loads((twins.path / "autotune.json").read_text())["devices"]["sim:twin"]["tests"]
    assert entry["test_twin.py::test_twin"]["config"] == {"A": 6}
    assert entry["test_twin.py::test_twin"]["tuning"]["trials"] == 8
