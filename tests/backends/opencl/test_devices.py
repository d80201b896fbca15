"""Device selection, device keys and device information on the machine's OpenCL devices (PoCL in CI)."""

import json
from types import SimpleNamespace

import pytest

cl = pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel
from pytest_autotune.backends.opencl import (  # noqa: E402
    DeviceNotFoundError,
    DeviceUnusableError,
    device_info,
    device_key,
    list_devices,
    probe_device,
    select_device,
)
from pytest_autotune.warning_types import AutotuneWarning  # noqa: E402


@pytest.fixture
def first_device():
    """The first device that can build a kernel (the marker skips the module when none can)."""
    return next(entry for entry in list_devices() if probe_device(entry.device) is None)


def test_default_is_the_first_usable_device(first_device, monkeypatch) -> None:
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    assert select_device() == first_device.device
    assert select_device("") == first_device.device


@pytest.mark.parametrize("style", ["index", "pair", "platform name", "device name", "key"])
def test_specs_select_the_device(first_device, style: str) -> None:
    device = first_device.device
    spec = {
        "index": str(first_device.platform_index),
        "pair": first_device.spec,
        "platform name": device.platform.name.split()[0].upper(),  # case-insensitive substring
        "device name": device.name[-4:].lower(),
        "key": device_key(device),
    }[style]
    assert select_device(spec) == device


def test_pyopencl_ctx_is_used_when_no_spec_is_given(first_device, monkeypatch) -> None:
    monkeypatch.setenv("PYOPENCL_CTX", "no-such-device-xyz")
    with pytest.raises(DeviceNotFoundError, match="PYOPENCL_CTX 'no-such-device-xyz'"):
        select_device()
    monkeypatch.setenv("PYOPENCL_CTX", first_device.spec)
    assert select_device() == first_device.device


@pytest.mark.parametrize("spec", ["no-such-device-xyz", "99", "0:99", "0:0,1", "a:b:c"])
def test_unmatched_specs_list_every_device(first_device, spec: str) -> None:
    with pytest.raises(LookupError) as info:
        select_device(spec)
    message = str(info.value)
    assert repr(spec) in message
    for entry in list_devices():
        assert f"{entry.spec}  {device_key(entry.device)}" in message


def test_device_key_is_platform_and_device_name_only(first_device) -> None:
    device = first_device.device
    key = device_key(device)
    assert key == f"{' '.join(device.platform.name.split())} / {' '.join(device.name.split())}"
    assert device.driver_version.strip() not in key
    assert device_key(select_device(first_device.spec)) == key  # stable across lookups


def test_device_info_is_json_and_matches_the_device(first_device) -> None:
    device = first_device.device
    info = device_info(device)
    json.dumps(info)
    assert info["key"] == device_key(device)
    assert info["max_work_group_size"] == device.max_work_group_size
    assert info["local_mem_size"] == device.local_mem_size
    assert info["driver_version"] == device.driver_version.strip()


def test_a_usable_device_passes_the_probe(first_device) -> None:
    assert probe_device(first_device.device) is None
    assert probe_device(first_device.device) is None  # cached: asked once per process


@pytest.fixture
def broken_second(first_device, monkeypatch):
    """Two devices, the first of which cannot build (a compiler older than the CPU, say)."""
    from pytest_autotune.backends.opencl import device as opencl  # where select_device looks them up

    broken = SimpleNamespace(spec="0:0", device="broken-device", platform_index=0, device_index=0)
    working = SimpleNamespace(spec="1:0", device="working-device", platform_index=1, device_index=0)
    monkeypatch.setattr(opencl, "list_devices", lambda: [broken, working])
    monkeypatch.setattr(opencl, "device_key", lambda device: f"P / {device}")
    monkeypatch.setattr(
        opencl,
        "probe_device",
        lambda device: (
            "BUILD_PROGRAM_FAILURE: error: unknown target CPU 'generic'"
            if device == "broken-device"
            else None
        ),
    )
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    return opencl


def test_the_default_skips_a_device_that_cannot_build_and_says_so(broken_second) -> None:
    with pytest.warns(AutotuneWarning, match=r"0:0 P / broken-device: BUILD_PROGRAM_FAILURE.*using 1:0"):
        assert broken_second.select_device(None) == "working-device"


def test_choosing_a_device_that_cannot_build_is_an_error_with_its_log(broken_second) -> None:
    with pytest.raises(
        DeviceUnusableError, match=r"(?s)'P / broken-device' selects.*unknown target CPU.*apt-get"
    ):
        broken_second.select_device("P / broken-device")


def test_no_usable_device_at_all_is_an_error_listing_each(broken_second, monkeypatch) -> None:
    monkeypatch.setattr(broken_second, "probe_device", lambda device: f"cannot build on {device}")
    with pytest.raises(DeviceUnusableError) as info:
        broken_second.select_device(None)
    assert "0:0 P / broken-device: cannot build on broken-device" in str(info.value)
    assert "1:0 P / working-device: cannot build on working-device" in str(info.value)
