"""The OpenCL fixtures on the PoCL CPU device: device key, event timing, compile/runtime labels."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pyopencl")

KERNEL_TEST = '''
import numpy as np
import pyopencl as cl
from pytest_autotune import Interval, Pow2, tunable

SOURCE = """
#if BROKEN
#error this configuration does not compile
#endif
__kernel void scale(__global float *x) {
    int i = get_global_id(0);
    x[i] = 2.0f * x[i];
}
"""
N = 1024

@tunable(BROKEN=Interval(0, 1, default=0), LS=Pow2(16, 8192, default=16), strategy="exhaustive")
def test_scale(autotune, cl_queue):
    program = autotune.build(cl_queue.context, SOURCE)
    host = np.arange(N, dtype=np.float32)
    buffer = cl.Buffer(cl_queue.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
    autotune.measure(lambda: program.scale(cl_queue, (N,), (autotune.config["LS"],), buffer), repeat=1)
    cl.enqueue_copy(cl_queue, host, buffer)
    assert host[3] == 3 * 4  # one warmup and one timed launch, each doubling the buffer
'''


@pytest.mark.opencl
def test_opencl_tests_are_keyed_by_device_and_timed_by_events(
    project: pytest.Pytester, store_data: Callable[[], dict[str, Any]]
) -> None:
    from pytest_autotune.backends.opencl import device_key, select_device

    project.makepyfile(test_cl=KERNEL_TEST)
    result = project.runpytest("--autotune")
    result.assert_outcomes(passed=1)
    key = device_key(select_device(None))
    devices = store_data()["devices"]
    assert list(devices) == [key]
    assert devices[key]["info"]["key"] == key
    entry = devices[key]["tests"]["test_cl.py::test_scale"]
    assert entry["config"]["BROKEN"] == 0
    counts = entry["tuning"]["counts"]
    # BROKEN=1 never compiles (10 configurations); LS = 2048 and 4096 exceed the 1024 work-items
    # launched and 8192 also PoCL's 4096 per group: launch errors
    assert counts["compile"] == 10
    assert counts["runtime"] == 3
    assert counts["ok"] == 7
    assert 0 < entry["baseline"]["median"] < 0.1  # device time of one tiny launch, from its event
    result.stdout.fnmatch_lines([f"autotune: mode tune, device {key}, cache *"])
