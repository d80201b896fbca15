"""The backend interface: the registry, the host backend, a fake third backend, OpenCL's limits.

The fake ``sim`` backend below is what a new kind of device costs: one module with a
:class:`Backend` subclass (and its fixtures), one registry entry. The plugin, the resolver, the
default timer, the error classification and ``autotune.build`` then use it with no other change.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_autotune import backends
from pytest_autotune.backends import (
    Backend,
    BackendError,
    DeviceLimits,
    available_backends,
    backend_entry,
    backend_for_fixtures,
    backend_name_for_fixtures,
    fixture_modules,
    get_backend,
    register_backend,
)
from pytest_autotune.backends.errors import classify_exception
from pytest_autotune.backends.host import HostBackend, host_key
from pytest_autotune.fixture import Autotune
from pytest_autotune.plugin.devices import DeviceResolver, WorkerSlot
from pytest_autotune.policy import merge_policy
from pytest_autotune.space import Interval, build_space
from pytest_autotune.timing.measure import DefaultTimer


@dataclass(frozen=True)
class SimResult:
    """What a simulated launch returns: the device time it would have taken."""

    seconds: float


class SimError(RuntimeError):
    """A simulated compiler error."""


class SimBackend(Backend):
    """Two simulated devices, ``sim:fast`` and ``sim:slow``; launches report their own time."""

    name = "sim"
    fixtures = frozenset({"sim_device"})

    def devices(self) -> list[Any]:
        return ["fast", "slow"]

    def select(self, spec: str | None) -> Any:
        if spec in (None, "", "0"):
            return "fast"
        if spec in self.devices():
            return spec
        raise LookupError(f"no simulated device {spec!r}")

    def key(self, device: Any) -> str:
        return f"sim:{device}"

    def info(self, device: Any) -> dict[str, Any]:
        return {"key": self.key(device), "simulated": True}

    def limits(self, device: Any) -> DeviceLimits:
        return DeviceLimits(max_work_group_size=256, max_work_item_sizes=(256, 256), local_memory=1 << 15)

    def result_seconds(self, result: Any) -> float | None:
        return result.seconds if isinstance(result, SimResult) else None

    def owns(self, obj: Any) -> bool:
        return obj == "sim-context"

    def build(self, context: Any, source: str, defines: Any = None, options: Any = ()) -> Any:
        if "#error" in source:
            raise SimError("error: the source says so")
        return ("program", source, dict(defines or {}))

    def classify(self, exc: BaseException) -> Any:
        return ("compile", str(exc)) if isinstance(exc, SimError) else None


@pytest.fixture
def sim_registered(monkeypatch: pytest.MonkeyPatch) -> Backend:
    """The registry with the ``sim`` backend added (restored afterwards)."""
    monkeypatch.setattr(backends.registry, "_REGISTRY", dict(backends.registry._REGISTRY))
    monkeypatch.setattr(backends.registry, "_INSTANCES", dict(backends.registry._INSTANCES))
    register_backend("sim", SimBackend)  # the one registry line
    return get_backend("sim")


def _autotune(backend: Backend | None, timer: Any = None) -> Autotune:
    fixture = Autotune(
        nodeid="test_x.py::test_k",
        space=build_space({"A": Interval(1, 4, default=2)}),
        policy=merge_policy([]),
        device="some device",
        timer=timer or DefaultTimer(),
        tuning=True,
        backend=backend,
    )
    fixture.begin_run({"A": 3}, repeat_default=1)
    return fixture


# -- the registry ---------------------------------------------------------------------------------------
CHOOSE_WITHOUT_PYOPENCL = """
import json, sys
from pytest_autotune.backends import backend_for_fixtures, fixture_modules, get_backend, loaded_backends
import pytest_autotune.backends.opencl
import pytest_autotune.backends.opencl.fixtures
import pytest_autotune.backends.cuda.fixtures
import pytest_autotune.backends.torch.fixtures
from pytest_autotune.plugin.devices import DeviceResolver, WorkerSlot
from pytest_autotune.backends.errors import classify_exception
from pytest_autotune.timing.measure import DefaultTimer

opencl = backend_for_fixtures(["autotune", "cl_queue"])
resolver = DeviceResolver("0:0", WorkerSlot())
print(json.dumps({
    "opencl": opencl.name,
    "host": backend_for_fixtures(["autotune"]).name,
    "synchronizer": opencl.synchronizer(["autotune"], None) is None,
    "host_key": resolver.key_for(["autotune"]),
    "loaded": [backend.name for backend in loaded_backends()],
    "timed": DefaultTimer()(lambda: 7, None)[0],
    "classified": classify_exception(ValueError("plain"))[0],
    "modules": fixture_modules(),
    "pyopencl": "pyopencl" in sys.modules,
    "heavy": sorted({m.split(".")[0] for m in sys.modules} & {"torch", "triton", "cupy", "cuda"}),
}))
"""


def test_choosing_a_backend_imports_no_device_library() -> None:
    run = subprocess.run([sys.executable, "-c", CHOOSE_WITHOUT_PYOPENCL], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["pyopencl"] is False
    assert (found["opencl"], found["host"]) == ("opencl", "host")
    assert found["synchronizer"] is True
    assert found["host_key"] == host_key()
    assert found["loaded"] == ["host"]  # the OpenCL backend is asked nothing while pyopencl is absent
    assert (found["timed"], found["classified"]) == (7, "runtime")
    assert found["modules"] == [
        "pytest_autotune.backends.opencl.fixtures",
        "pytest_autotune.backends.cuda.fixtures",
        "pytest_autotune.backends.torch.fixtures",
    ]
    assert found["heavy"] == []  # nor cuda-python, torch or triton


def test_registry_entries_agree_with_their_classes() -> None:
    assert {"host", "opencl"} <= set(available_backends())
    for name in available_backends():
        backend = get_backend(name)  # raises when the static names and the class disagree
        assert backend.name == name
        assert backend.fixtures == backend_entry(name).fixtures
        assert get_backend(name) is backend
    assert "cl_context" in backend_entry("opencl").fixtures
    assert "pytest_autotune.backends.opencl.fixtures" in fixture_modules()


def test_bad_registrations_and_names_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backends.registry, "_REGISTRY", dict(backends.registry._REGISTRY))
    with pytest.raises(ValueError, match="unknown backend 'metal'; available: cuda, host, opencl, torch"):
        get_backend("metal")
    with pytest.raises(ValueError, match="module:Class"):
        register_backend("metal", "pytest_autotune.backends.metal")
    with pytest.raises(ValueError, match="letters, digits"):
        register_backend("cu da", SimBackend)
    register_backend("wrong", SimBackend)  # the class says "sim"
    with pytest.raises(ValueError, match="the class SimBackend says 'sim'"):
        get_backend("wrong")


# -- the host backend -----------------------------------------------------------------------------------
def test_host_backend_key_info_and_limits() -> None:
    host = get_backend("host")
    assert isinstance(host, HostBackend)
    device = host.select(None)
    assert host.select("1:0") == device == host.devices()[0]  # device specs name accelerators
    assert host.key(device) == host_key()
    assert host.key(device).startswith("host:")
    info = host.info(device)
    assert info["key"] == host_key()
    assert {"cpu", "machine", "system", "cpu_count", "python"} <= set(info)
    assert host.limits(device) == DeviceLimits(None, None, None)
    assert host.limits(device).to_dict() == {
        "max_work_group_size": None,
        "max_work_item_sizes": None,
        "local_memory": None,
        "local_memory_opt_in": None,
    }
    assert host.spec_of(device) is None  # a trial worker needs no device spec
    assert host.result_seconds(object()) is None
    assert host.classify(ValueError()) is None
    with pytest.raises(BackendError, match="does not build"):
        host.build(None, "source")


def test_building_on_the_host_is_a_clear_error() -> None:
    autotune = _autotune(get_backend("host"))
    refusal = r"test_k: autotune.build: the 'host' backend does not build.*opencl \(cl_context, cl_queue\)"
    with pytest.raises(BackendError, match=refusal):
        autotune.build(object(), "__kernel void k() {}")
    with pytest.raises(BackendError, match="no loaded backend owns, and the test has no backend"):
        _autotune(None).build(object(), "__kernel void k() {}")


# -- a third backend: one module, one registry line -----------------------------------------------------
def test_a_registered_backend_is_chosen_timed_classified_and_built(sim_registered: Backend) -> None:
    assert backend_name_for_fixtures(["autotune", "sim_device"]) == "sim"
    assert backend_for_fixtures(["sim_device"]) is sim_registered
    with pytest.raises(BackendError, match=r"one backend only.*opencl: cl_queue; sim: sim_device"):
        backend_name_for_fixtures(["cl_queue", "sim_device"])
    # the default timer reads the device time a loaded backend finds in the result
    assert DefaultTimer()(lambda: SimResult(2.5e-3), None) == (SimResult(2.5e-3), 2.5e-3)
    # trial errors are labelled by the backend
    assert classify_exception(SimError("error: bad")) == ("compile", "error: bad")
    # autotune.build: the backend that owns the context, else the test's backend
    assert _autotune(None).build("sim-context", "src") == ("program", "src", {"A": 3})
    assert _autotune(sim_registered).build(object(), "src", defines={"B": 1})[2] == {"B": 1}


@pytest.mark.parametrize(
    ("spec", "index", "count", "key", "shared"),
    [
        (None, 0, 1, "sim:fast", 1),
        (None, 1, 3, "sim:slow", 1),  # gwK -> usable device K
        (None, 2, 3, "sim:fast", 2),  # cyclically, shared with gw0
        ("slow,fast", 0, 2, "sim:slow", 1),  # a list assigns its K-th entry
        ("slow", 1, 2, "sim:slow", 2),  # one spec pins every worker
    ],
)
def test_the_resolver_assigns_a_registered_backends_devices(
    sim_registered: Backend, spec: str | None, index: int, count: int, key: str, shared: int
) -> None:
    resolver = DeviceResolver(spec, WorkerSlot(index, count))
    assert resolver.key_for(["autotune", "sim_device"]) == key
    assert resolver.shared_by(key) == shared
    assert resolver.device("sim") == key.removeprefix("sim:")
    assert resolver.info_for(key) == {"key": key, "simulated": True}
    assert resolver.spec_for(key) == key  # Backend.spec_of defaults to the key
    assert resolver.key_for(["autotune"]) == host_key()  # the host is unaffected
    assert resolver.spec_for(host_key()) is None


SIM_MODULE = """
import pytest
from pytest_autotune.backends import Backend


class SimResult:
    def __init__(self, seconds):
        self.seconds = seconds


class SimBackend(Backend):
    name = "sim"
    fixtures = frozenset({"sim_device"})

    def devices(self):
        return ["fast", "slow"]

    def select(self, spec):
        return spec or "fast"

    def key(self, device):
        return f"sim:{device}"

    def info(self, device):
        return {"key": self.key(device), "simulated": True}

    def result_seconds(self, result):
        return result.seconds if isinstance(result, SimResult) else None


@pytest.fixture(scope="session")
def sim_device(_autotune_devices):
    return _autotune_devices.device("sim")
"""

SIM_CONFTEST = """
from pytest_autotune.backends import register_backend

register_backend("sim", "sim_backend:SimBackend", fixtures=["sim_device"], fixture_module="sim_backend")
"""

SIM_TEST = """
from sim_backend import SimResult
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 5, default=1), strategy="exhaustive")
def test_sim(autotune, sim_device):
    assert sim_device == "slow"
    autotune.measure(lambda: SimResult(1e-3 * (1 + (autotune.config["A"] - 4) ** 2)))
"""


def test_a_backend_in_its_own_module_runs_tunable_tests_end_to_end(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(backends.registry, "_REGISTRY", dict(backends.registry._REGISTRY))
    monkeypatch.setattr(backends.registry, "_INSTANCES", dict(backends.registry._INSTANCES))
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "none")
    pytester.makepyfile(sim_backend=SIM_MODULE, test_sim=SIM_TEST)
    pytester.makeconftest(SIM_CONFTEST)
    pytester.syspathinsert()
    pytester.runpytest("--autotune", "--autotune-device=slow").assert_outcomes(passed=1)
    devices = json.loads((pytester.path / "autotune.json").read_text())["devices"]
    assert list(devices) == ["sim:slow"]
    assert devices["sim:slow"]["info"] == {"key": "sim:slow", "simulated": True}
    entry = devices["sim:slow"]["tests"]["test_sim.py::test_sim"]
    assert entry["config"] == {"A": 4}
    assert entry["baseline"]["median"] == pytest.approx(1e-3)  # the backend's time, not the wall clock


# -- OpenCL's limits on the machine's device ------------------------------------------------------------
@pytest.mark.opencl
def test_opencl_backend_reads_limits_and_round_trips_its_device() -> None:
    cl = pytest.importorskip("pyopencl")
    opencl = get_backend("opencl")
    device = opencl.select(None)
    limits = opencl.limits(device)
    assert limits.max_work_group_size == device.max_work_group_size > 0
    assert limits.max_work_item_sizes == tuple(device.max_work_item_sizes)
    assert len(limits.max_work_item_sizes) >= 3
    assert limits.local_memory == device.local_mem_size > 0
    info = opencl.info(device)
    assert info["key"] == opencl.key(device)
    assert info["max_work_group_size"] == limits.max_work_group_size
    assert opencl.select(opencl.spec_of(device)) == device  # what a trial worker is told
    assert device in opencl.usable_devices()
    context = cl.Context(devices=[device])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    assert opencl.owns(context)
    assert not opencl.owns(queue)
    fake_queue = SimpleNamespace(finish=lambda: None)
    assert opencl.synchronizer(["cl_queue"], {"cl_queue": fake_queue}.__getitem__) is fake_queue.finish
    program = opencl.build(context, "__kernel void k(__global float* x) { x[0] = N; }", {"N": 2})
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, 4)
    seconds = opencl.result_seconds(program(queue, (1,), (1,), buffer))
    assert seconds is not None
    assert seconds >= 0
    assert opencl.result_seconds(object()) is None
    with pytest.raises(Exception) as info_error:
        opencl.build(context, "__kernel void k() { this does not compile }")
    assert opencl.classify(info_error.value) is not None
    assert opencl.classify(info_error.value)[0] == "compile"
