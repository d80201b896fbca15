"""Device selection, device keys and device information on the machine's OpenCL devices (PoCL in CI)."""

import json

import pytest

cl = pytest.importorskip("pyopencl")
from pytest_autotune.opencl import (  # noqa: E402
    DeviceNotFoundError,
    device_info,
    device_key,
    list_devices,
    select_device,
)


@pytest.fixture
def first_device():
    entries = list_devices()
    if not entries:
        pytest.skip("no OpenCL device")
    return entries[0]


def test_default_is_the_first_device(first_device, monkeypatch) -> None:
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
