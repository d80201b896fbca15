"""Device assignment to xdist workers, the host key, and the tuning progress line."""

from __future__ import annotations

import io
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_autotune.backends.host import host_key
from pytest_autotune.plugin.devices import DeviceResolver, WorkerSlot
from pytest_autotune.plugin.report.progress import TuningProgress
from pytest_autotune.policy import DEFAULT_POLICY


@pytest.fixture
def three_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend the machine has OpenCL devices 0:0, 0:1 and 1:0 (no OpenCL device involved)."""
    opencl = pytest.importorskip("pytest_autotune.backends.opencl.device")  # where the backend looks them up
    fake = {"0:0": "P0 / gpu-a", "0:1": "P0 / gpu-b", "1:0": "P1 / cpu"}
    monkeypatch.setattr(opencl, "select_device", lambda spec: fake[spec or "0:0"])
    monkeypatch.setattr(opencl, "device_key", lambda device: device)
    monkeypatch.setattr(opencl, "probe_device", lambda device: None)
    monkeypatch.setattr(
        opencl, "list_devices", lambda: [SimpleNamespace(spec=s, device=d) for s, d in fake.items()]
    )
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)


@pytest.mark.usefixtures("three_devices")
@pytest.mark.parametrize(
    ("spec", "index", "count", "key", "shared"),
    [
        (None, 0, 1, "P0 / gpu-a", 1),  # no xdist: the first device
        (None, 1, 3, "P0 / gpu-b", 1),  # gwK -> device K
        (None, 2, 3, "P1 / cpu", 1),
        (None, 3, 4, "P0 / gpu-a", 2),  # more workers than devices: gw3 shares device 0 with gw0
        ("0:1,1:0", 0, 2, "P0 / gpu-b", 1),  # a list assigns its K-th entry
        ("0:1,1:0", 1, 2, "P1 / cpu", 1),
        ("0:1,1:0", 2, 3, "P0 / gpu-b", 2),
        ("1:0", 1, 2, "P1 / cpu", 2),  # one spec pins every worker
    ],
)
def test_workers_map_to_devices(spec: str | None, index: int, count: int, key: str, shared: int) -> None:
    resolver = DeviceResolver(spec, WorkerSlot(index, count))
    assert resolver.key_for(["autotune", "cl_queue"]) == key
    assert resolver.shared_by(key) == shared
    assert resolver.key_for(["autotune"]) == host_key()
    assert resolver.shared_by(host_key()) == count


@pytest.mark.usefixtures("three_devices")
def test_workers_are_not_given_a_device_that_cannot_build(monkeypatch: pytest.MonkeyPatch) -> None:
    opencl = pytest.importorskip("pytest_autotune.backends.opencl.device")  # where the backend looks them up
    monkeypatch.setattr(opencl, "probe_device", lambda device: "broken" if device == "P0 / gpu-b" else None)
    keys = [DeviceResolver(None, WorkerSlot(index, 3)).key_for(["cl_queue"]) for index in range(3)]
    assert keys == ["P0 / gpu-a", "P1 / cpu", "P0 / gpu-a"]


@pytest.mark.usefixtures("three_devices")
def test_pyopencl_ctx_pins_every_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYOPENCL_CTX", "1:0")
    resolver = DeviceResolver(None, WorkerSlot(1, 2))
    assert resolver.shared_by(resolver.key_for(["cl_context"])) == 2


def test_host_key_and_bad_device_list() -> None:
    assert host_key().startswith("host:")
    assert len(host_key()) > len("host:")
    with pytest.raises(ValueError, match="empty device spec"):
        DeviceResolver("0:0,", WorkerSlot())
    assert DeviceResolver.backend_for(["autotune", "cl_queue"]).name == "opencl"
    assert DeviceResolver.backend_for(["autotune"]).name == "host"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _config(verbosity: int, worker: bool = False) -> Any:
    plugins = {"terminalreporter": object(), "capturemanager": None}
    config = SimpleNamespace(
        get_verbosity=lambda: verbosity,
        pluginmanager=SimpleNamespace(get_plugin=plugins.get),
    )
    if worker:
        config.workerinput = {}
    return config


def test_progress_line_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    with TuningProgress(_config(0), "test_k.py::test_gemm", DEFAULT_POLICY) as progress:
        progress.update(3, 0.5, "ok", 1.5e-4)
    text = terminal.getvalue()
    assert "autotune" in text
    assert "test_k.py::test_gemm" in text
    assert "best trial 150us" in text  # best so far, named as a trial's value (not re-measured)


@pytest.mark.parametrize(("verbosity", "worker"), [(-1, False), (0, True)])
def test_progress_is_quiet_under_q_and_on_workers(
    monkeypatch: pytest.MonkeyPatch, verbosity: int, worker: bool
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    with TuningProgress(_config(verbosity, worker), "test_k.py::test_gemm", DEFAULT_POLICY) as progress:
        progress.update(3, 0.5, "ok", 1.5e-4)
    assert terminal.getvalue() == ""
