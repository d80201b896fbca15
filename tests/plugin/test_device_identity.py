"""Workers share a device only when they time on the same physical device of the same host.

Fake OpenCL devices of one type (one key, several devices) stand for a box of identical GPUs;
the xdist specs are real execnet specs, so the host grouping is the controller's own.
"""

from __future__ import annotations

from types import SimpleNamespace

import execnet
import pytest

from pytest_autotune.backends.host import host_key
from pytest_autotune.plugin.devices import DeviceResolver, WorkerSlot
from pytest_autotune.plugin.xdist_hosts import host_label, slot_from_workerinput, slot_input

GPU = "NVIDIA CUDA / NVIDIA H100"


@pytest.fixture
def eight_gpus(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Eight identical fake GPUs on platform 0 (one key), each at its own PCI address."""
    opencl = pytest.importorskip("pytest_autotune.backends.opencl.device")  # where the backend looks them up
    devices = [f"gpu{d}" for d in range(8)]
    specs = {f"0:{d}": device for d, device in enumerate(devices)}
    monkeypatch.setattr(opencl, "select_device", lambda spec: specs[spec or "0:0"])
    monkeypatch.setattr(opencl, "device_key", lambda device: GPU)
    monkeypatch.setattr(opencl, "probe_device", lambda device: None)
    monkeypatch.setattr(opencl, "pci_address", lambda device: f"pci:0000:{10 + devices.index(device):02x}:00")
    monkeypatch.setattr(
        opencl, "list_devices", lambda: [SimpleNamespace(spec=s, device=d) for s, d in specs.items()]
    )
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    return devices


def _resolve(slot: WorkerSlot, spec: str | None = None) -> tuple[str, int, object]:
    resolver = DeviceResolver(spec, slot)
    key = resolver.key_for(["autotune", "cl_queue"])
    return key, resolver.shared_by(key), resolver.device("opencl")


@pytest.mark.usefixtures("eight_gpus")
def test_eight_identical_gpus_give_eight_workers_a_device_each() -> None:
    resolved = [_resolve(WorkerSlot(index, 8)) for index in range(8)]
    assert {key for key, _, _ in resolved} == {GPU}  # one type: one entry per test
    assert [shared for _, shared, _ in resolved] == [1] * 8
    assert len({device for _, _, device in resolved}) == 8


@pytest.mark.usefixtures("eight_gpus")
def test_a_device_list_of_identical_gpus_is_not_shared() -> None:
    assert _resolve(WorkerSlot(0, 2), "0:0,0:1")[1] == 1  # the case: it was 2 (same name)
    assert _resolve(WorkerSlot(1, 2), "0:0,0:1")[1] == 1
    assert _resolve(WorkerSlot(1, 3), "0:0,0:1")[1] == 1  # gw1 alone on 0:1; gw2 is on 0:0
    assert _resolve(WorkerSlot(2, 3), "0:0,0:1")[1] == 2
    assert _resolve(WorkerSlot(1, 2), "0:3,0:3")[1] == 2  # the same physical device twice


@pytest.mark.usefixtures("eight_gpus")
def test_more_workers_than_gpus_share_only_the_doubled_ones() -> None:
    shared = [_resolve(WorkerSlot(index, 10))[1] for index in range(10)]
    assert shared == [2, 2] + [1] * 6 + [2, 2]


@pytest.mark.usefixtures("eight_gpus")
def test_pyopencl_ctx_set_per_worker_is_not_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    overrides = tuple({"PYOPENCL_CTX": f"0:{index}"} for index in range(4))
    for index in range(4):
        monkeypatch.setenv("PYOPENCL_CTX", f"0:{index}")  # what execnet's env: does in the worker
        _, shared, device = _resolve(WorkerSlot(index, 4, overrides=overrides))
        assert (shared, device) == (1, f"gpu{index}")
    # the same value for two of them: those two share
    overrides = ({"PYOPENCL_CTX": "0:5"}, {"PYOPENCL_CTX": "0:5"}, {"PYOPENCL_CTX": "0:6"})
    monkeypatch.setenv("PYOPENCL_CTX", "0:5")
    assert _resolve(WorkerSlot(0, 3, overrides=overrides))[1] == 2


@pytest.mark.usefixtures("eight_gpus")
def test_pyopencl_ctx_in_the_host_environment_pins_every_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYOPENCL_CTX", "0:2")
    assert _resolve(WorkerSlot(1, 3))[1:] == (3, "gpu2")
    # a worker whose spec overrides it knows what the others inherit (the controller's value)
    overrides = ({"PYOPENCL_CTX": "0:4"}, {}, {})
    monkeypatch.setenv("PYOPENCL_CTX", "0:4")
    assert _resolve(WorkerSlot(0, 3, overrides=overrides, base={"PYOPENCL_CTX": "0:2"}))[1] == 1


def test_host_labels_follow_the_address() -> None:
    proxy = execnet.XSpec("ssh=me@box7//id=box7")
    assert host_label(execnet.XSpec("popen")) == "local"
    assert host_label(execnet.XSpec("ssh=me@box1//env:PYOPENCL_CTX=0:1")) == "ssh:me@box1"
    assert host_label(execnet.XSpec("socket=10.0.0.2:8888")) == "socket:10.0.0.2:8888"
    assert host_label(execnet.XSpec("popen//via=box7"), {"box7": proxy}) == "ssh:me@box7"


def _specs(*texts: str) -> list[execnet.XSpec]:
    specs = [execnet.XSpec(text) for text in texts]
    for number, spec in enumerate(specs):
        spec.id = f"gw{number}"
    return specs


@pytest.mark.usefixtures("eight_gpus")
def test_workers_are_counted_per_host() -> None:
    """Two 8-GPU hosts with 8 workers each: gw8 is the first worker of the second host, on 0:0."""
    specs = _specs(*["ssh=a"] * 8, *["ssh=b"] * 8)
    slots = [
        slot_from_workerinput({"workerid": f"gw{k}", "autotune_host": slot_input(specs, f"gw{k}")})
        for k in range(16)
    ]
    assert [(slot.host, slot.index, slot.count) for slot in slots[7:9]] == [("ssh:a", 7, 8), ("ssh:b", 0, 8)]
    resolved = [_resolve(slot) for slot in slots]
    assert [shared for _, shared, _ in resolved] == [1] * 16
    assert [device for _, _, device in resolved[8:]] == [f"gpu{d}" for d in range(8)]


def test_the_workerinput_round_trip_keeps_each_workers_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYOPENCL_CTX", "0:2")
    specs = _specs("popen//env:PYOPENCL_CTX=0:1", "popen", "socket=h:1//env:PYOPENCL_CTX=0:0")
    data = slot_input(specs, "gw0")
    assert data == {
        "host": "local",
        "index": 0,
        "overrides": [{"PYOPENCL_CTX": "0:1"}, {}],
        "base": {"PYOPENCL_CTX": "0:2"},
    }
    slot = slot_from_workerinput({"workerid": "gw0", "autotune_host": data})
    assert slot.environment(1)["PYOPENCL_CTX"] == "0:2"
    assert slot_input(specs, "gw9") is None
    remote = slot_from_workerinput({"workerid": "gw2", "autotune_host": slot_input(specs, "gw2")})
    assert (remote.host, remote.index, remote.count, remote.base) == ("socket:h:1", 0, 1, {})
    # no answer from the controller: every worker of the run counts as a peer
    assert slot_from_workerinput({"workerid": "gw3", "workercount": 5}) == WorkerSlot(3, 5)
    assert slot_from_workerinput(None) == WorkerSlot()


def test_the_host_is_one_device_for_the_workers_of_one_host() -> None:
    resolver = DeviceResolver(None, WorkerSlot(0, 3, host="ssh:b"))
    assert resolver.shared_by(resolver.key_for(["autotune"])) == 3
    assert resolver.key_for(["autotune"]) == host_key()
