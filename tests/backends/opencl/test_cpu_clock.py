"""On PoCL the kernel runs in threads of the measuring process: the CPU clock sees its work."""

import numpy as np
import pytest

cl = pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel
from pytest_autotune.backends import get_backend, opencl  # noqa: E402
from pytest_autotune.timing.measure import DefaultTimer  # noqa: E402

SPIN = """
__kernel void spin(__global float* x, const int rounds) {
    const int i = get_global_id(0);
    float v = x[i];
    for (int r = 0; r < rounds; ++r) { v = mad(v, 0.999f, 0.001f); }
    x[i] = v;
}
"""


def _cpu_device() -> object:
    backend = get_backend("opencl")
    device = backend.select(None)
    if not backend.is_cpu(device):
        pytest.skip(f"the OpenCL device {backend.key(device)} is not a CPU")
    return device


def test_a_pocl_device_is_a_cpu_device() -> None:
    backend = get_backend("opencl")
    pocl = [d for d in backend.devices() if "Portable Computing Language" in backend.key(d)]
    if not pocl:
        pytest.skip("no PoCL device")
    assert all(backend.is_cpu(device) for device in pocl)


def test_the_cpu_time_of_a_pocl_kernel_grows_with_its_work() -> None:
    device = _cpu_device()
    context = opencl.create_context(device)
    queue = opencl.create_queue(context, device)
    kernel = cl.Program(context, SPIN).build().spin
    data = np.ones(1 << 12, dtype=np.float32)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)
    timer = DefaultTimer()

    def cpu(rounds: int) -> float:
        def launch() -> object:
            return kernel(queue, data.shape, None, buffer, np.int32(rounds))

        launch().wait()  # built and warm
        return min(timer.time_both(launch, None)[2] for _ in range(5))

    small, large = cpu(2000), cpu(8000)
    assert small > 0
    # four times the work: the CPU time of the process's threads grows with it (loosely, under load)
    assert large > 2 * small
