"""``runtime.build`` and the SAXPY application: the configuration launched outside pytest.

The application script (``example_kernels/apps/saxpy_app.py``) reads a store, builds the kernel
with the chosen configuration as the test builds it, launches it with the kernel module's launch
sizes and checks the numbers; here it runs for a size that was not tuned and must take the entry of
the nearest tuned size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel
from pytest_autotune import runtime  # noqa: E402
from pytest_autotune.backends import BackendError, opencl  # noqa: E402
from pytest_autotune.backends.opencl.defines import define_source  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
KERNEL = ROOT / "example_kernels" / "saxpy.cl"


@pytest.fixture(scope="module")
def device():
    try:
        return opencl.select_device(None)
    except LookupError:
        pytest.skip("no OpenCL device")


def test_runtime_build_writes_the_defines_as_the_test_does(device) -> None:
    context = opencl.create_context(device)
    config = {"WPT": 2, "LS": 64, "VW": 2, "STRIDED": True}
    program = runtime.build(context, KERNEL, config)
    assert program.source == define_source(config, KERNEL.read_text(), str(KERNEL))
    assert program.kernel_names == ("saxpy",)
    from example_kernels.saxpy_sizes import launch

    sizes = launch(1 << 16, config)
    assert (sizes.global_size, sizes.local_size) == ((1 << 15,), (64,))


def test_runtime_build_refuses_an_object_no_backend_owns() -> None:
    with pytest.raises(BackendError, match=r"runtime\.build got a 'object', which no backend owns"):
        runtime.build(object(), "__kernel void k() {}", {})


def test_the_application_launches_the_nearest_tuned_size(device, tmp_path: Path) -> None:
    key = runtime.opencl_device(device).key
    configs = {
        65536: {"LS": 256, "STRIDED": True, "VW": 1, "WPT": 1},
        262144: {"LS": 32, "STRIDED": False, "VW": 2, "WPT": 4},
        1048576: {"LS": 64, "STRIDED": False, "VW": 1, "WPT": 1},
    }
    tests = {
        f"example_kernels/test_saxpy_sizes.py::test_saxpy_sizes[{n}]": {
            "config": config,
            "space_hash": "h",
            "kernel": "saxpy",
            "key": {"N": n},
        }
        for n, config in configs.items()
    }
    store = tmp_path / "autotune.json"
    store.write_text(json.dumps({"schema_version": 1, "devices": {key: {"info": {}, "tests": tests}}}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_AUTOTUNE_CAPTURE": str(tmp_path / "captures")}
    done = subprocess.run(
        [sys.executable, "-m", "example_kernels.apps.saxpy_app", "303104", "--store", str(store)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout.splitlines()[0])
    assert shown["config"] == configs[262144]  # 303104 is 0.21 doublings from 262144
    assert (shown["key"], shown["device_match"], shown["size_match"]) == ({"N": 262144}, "exact", "nearest")
    assert "the nearest key {'N': 262144}" in done.stderr
    # and it captured its inputs for N = 303104, as a test would load them
    from example_kernels.saxpy_sizes import A, inputs

    captured = runtime.load_capture(tmp_path / "captures", "saxpy", {"N": 303104})
    x, y = inputs(303104)
    assert captured["a"] == A
    np.testing.assert_array_equal(captured["x"], x)
    np.testing.assert_array_equal(captured["y"], y)


FAKE_TIMER = """
import pytest

from pytest_autotune.testing import FakeTimer, bowl


@pytest.fixture
def autotune_timer():
    return FakeTimer(bowl)
"""


def test_tuned_by_pytest_then_launched_by_the_application(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's demo in small: tune the example over its 3 sizes, run the application for a 4th."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    source = (ROOT / "example_kernels" / "test_saxpy_sizes.py").read_text()
    assert "budget=16," in source
    # 2 trials per size instead of 16: what is checked here is where each entry goes, not its quality
    (pytester.path / "test_saxpy_sizes.py").write_text(source.replace("budget=16,", "budget=2,"))
    pytester.makeconftest(FAKE_TIMER)  # the kernel runs and is checked; its time is made up
    tuned = pytester.runpytest_subprocess("--autotune", "--autotune-isolate=none", "-p", "no:cacheprovider")
    tuned.assert_outcomes(passed=3)
    store = pytester.path / "autotune.json"
    ((device_key, device),) = json.loads(store.read_text())["devices"].items()
    stored = {nodeid: entry["config"] for nodeid, entry in device["tests"].items()}
    nearest = "test_saxpy_sizes.py::test_saxpy_sizes[262144]"
    assert set(stored) == {f"test_saxpy_sizes.py::test_saxpy_sizes[{n}]" for n in (65536, 262144, 1048576)}
    done = subprocess.run(
        [sys.executable, "-m", "example_kernels.apps.saxpy_app", "303104", "--store", str(store)],
        capture_output=True,
        text=True,
        cwd=pytester.path,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout.splitlines()[0])
    assert (shown["entry"], shown["config"], shown["size_match"]) == (nearest, stored[nearest], "nearest")
    logged = [line for line in done.stderr.splitlines() if "pytest_autotune.runtime" in line]
    assert logged == [
        f"INFO pytest_autotune.runtime: kernel 'saxpy': {store}: entry '{nearest}' of device "
        f"{device_key!r} (this device, the nearest key {{'N': 262144}}, 0.21 doublings "
        "from {'N': 303104})"
    ]
