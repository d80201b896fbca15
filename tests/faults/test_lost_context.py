"""A trial that loses the GPU context (an illegal address) fails alone: the isolated worker that
says so is replaced, and tuning goes on in a fresh process, in the plugin and in the library."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from pytest_autotune import Interval, Tuner, backends, build_space
from pytest_autotune.tuning.process.isolated import IsolatedObjective

GPU_BACKEND = """
import os
import pytest
from pytest_autotune.backends import Backend

LOST = []


class LosingBackend(Backend):
    name = "losing"
    fixtures = frozenset({"losing_device"})

    def devices(self):
        return ["gpu"]

    def select(self, spec):
        return "gpu"

    def key(self, device):
        return "losing:gpu"

    def info(self, device):
        return {"key": "losing:gpu"}

    def needs_restart(self):
        return LOST[0] if LOST else None


@pytest.fixture(scope="session")
def losing_device(_autotune_devices):
    return _autotune_devices.device("losing")
"""

CONFTEST = """
from pytest_autotune.backends import register_backend

register_backend(
    "losing", "losing_backend:LosingBackend", fixtures=["losing_device"], fixture_module="losing_backend"
)
"""

TEST = """
import json, os
import losing_backend
from pytest_autotune import Interval, tunable


@tunable(x=Interval(1, 5, default=1), strategy="exhaustive")
def test_gpu(autotune, losing_device):
    with open("ran.jsonl", "a") as ran:
        ran.write(json.dumps({"x": autotune.config["x"], "pid": os.getpid()}) + "\\n")
    if autotune.tuning and autotune.config["x"] == 3:
        losing_backend.LOST.append("CUDA_ERROR_ILLEGAL_ADDRESS")
        raise RuntimeError("an illegal memory access was encountered")
    autotune.record(1e-3 * (1 + abs(autotune.config["x"] - 4)))
"""


def test_the_plugin_replaces_a_worker_whose_context_is_lost(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends.registry, "_REGISTRY", dict(backends.registry._REGISTRY))
    monkeypatch.setattr(backends.registry, "_INSTANCES", dict(backends.registry._INSTANCES))
    project.makepyfile(losing_backend=GPU_BACKEND, test_gpu=TEST)
    project.makeconftest(CONFTEST)
    project.syspathinsert()
    result = project.runpytest("--autotune", "--autotune-isolate=process", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 lost GPU context*"])
    result.stdout.fnmatch_lines(["*{'x': 4}*"])
    ran = [json.loads(line) for line in (project.path / "ran.jsonl").read_text().splitlines()]
    trials = ran[:5]  # exhaustive: each configuration once, then finalists and the real run
    assert sorted(r["x"] for r in trials) == [1, 2, 3, 4, 5]
    lost = next(i for i, r in enumerate(trials) if r["x"] == 3)
    before = {r["pid"] for r in trials[: lost + 1]}
    after = {r["pid"] for r in trials[lost + 1 :]}
    assert len(before) == 1  # one worker up to and including the lost context
    assert len(after) <= 1
    assert not before & after
    assert "losing:gpu" in (project.path / "autotune.json").read_text()


OBJECTIVE = """
import os
from pytest_autotune.backends import register_backend, Backend

LOST = []


class LosingBackend(Backend):
    name = "losing"

    def devices(self):
        return ["gpu"]

    def select(self, spec):
        return "gpu"

    def key(self, device):
        return "losing:gpu"

    def info(self, device):
        return {}

    def needs_restart(self):
        return LOST[0] if LOST else None


register_backend("losing", LosingBackend)


def objective(config):
    with open(os.environ["RAN_FILE"], "a") as ran:
        ran.write(f"{config['x']} {os.getpid()}\\n")
    if config["x"] == 2:
        LOST.append("CUDA_ERROR_ILLEGAL_ADDRESS")
        raise RuntimeError("an illegal memory access was encountered")
    return float(config["x"])
"""


@pytest.fixture
def objectives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """A module of objectives importable by name (spawned workers import it again)."""
    monkeypatch.setattr(backends.registry, "_REGISTRY", dict(backends.registry._REGISTRY))
    monkeypatch.setattr(backends.registry, "_INSTANCES", dict(backends.registry._INSTANCES))
    (tmp_path / "losing_objectives.py").write_text(OBJECTIVE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RAN_FILE", str(tmp_path / "ran.txt"))
    import losing_objectives  # type: ignore[import-not-found]

    return losing_objectives  # type: ignore[no-any-return]


def test_the_library_replaces_a_worker_whose_context_is_lost(objectives: ModuleType, tmp_path: Path) -> None:
    space = build_space({"x": Interval(1, 4)})
    with IsolatedObjective(objectives.objective, timeout=30.0) as objective:
        result = Tuner(space, "exhaustive", seed=0).run(objective)
        stats = objective.stats
    by_x = {record.config["x"]: record.outcome for record in result.history}
    assert by_x[2].label == "runtime"
    assert "illegal memory access" in by_x[2].detail
    assert [by_x[x].value for x in (1, 3, 4)] == [1.0, 3.0, 4.0]
    pids = dict(line.split() for line in (tmp_path / "ran.txt").read_text().splitlines())
    assert pids["1"] == pids["2"] != pids["3"] == pids["4"]
    assert stats.context_restarts == 1
    assert stats.crashes == 0
