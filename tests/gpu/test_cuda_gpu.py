"""On a CUDA GPU (marked ``gpu``: skipped with the reason elsewhere; ``scripts/gpu-check`` runs
them): builds load and launch, numpy arguments round-trip, events time, the launch checks use the
kernel's own limit, a lost context is classified and asks for a new worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

SAXPY = """
extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


@pytest.fixture(scope="module")
def device():  # type: ignore[no-untyped-def]
    from pytest_autotune.backends.cuda.device import CudaDevice, select_device

    return CudaDevice(select_device(None))


def test_a_built_kernel_runs_on_numpy_and_device_arrays(device) -> None:  # type: ignore[no-untyped-def]
    from pytest_autotune.backends.cuda.module import load_module
    from pytest_autotune.backends.cuda.nvrtc import compile_cuda

    module = load_module(compile_cuda(SAXPY, arch=device.arch), device.info)
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, dtype=np.float32)
    module.saxpy((4,), (256,), y, x, np.float32(2), np.int32(1000))
    np.testing.assert_array_equal(y, 2 * np.arange(1000, dtype=np.float32) + 1)
    on_device = device.to_device(y)
    module.saxpy((4,), (256,), on_device, x, np.float32(1), np.int32(1000))
    np.testing.assert_array_equal(on_device.get(), 3 * np.arange(1000, dtype=np.float32) + 1)
    assert device.key.endswith(device.arch)


def test_event_timing_with_and_without_the_l2_flush(device) -> None:  # type: ignore[no-untyped-def]
    from pytest_autotune.backends.cuda.module import load_module
    from pytest_autotune.backends.cuda.nvrtc import compile_cuda
    from pytest_autotune.backends.cuda.timing import DriverEvents
    from pytest_autotune.backends.event_timer import EventTimer

    module = load_module(compile_cuda(SAXPY, arch=device.arch), device.info)
    n = 1 << 24
    x, y = device.to_device(np.ones(n, np.float32)), device.to_device(np.ones(n, np.float32))
    events = DriverEvents(device)

    def launch() -> None:
        module.saxpy((n // 256,), (256,), y, x, np.float32(1), np.int32(n))

    flushed = [EventTimer(events)(launch, None)[1] for _ in range(5)]
    warm = [EventTimer(events, flush_l2=False)(launch, None)[1] for _ in range(5)]
    assert all(0 < t < 0.1 for t in flushed + warm)


def test_the_kernels_own_thread_limit_refuses_a_launch_before_the_driver(device) -> None:  # type: ignore[no-untyped-def]
    from pytest_autotune.backends.cuda.errors import CudaLaunchError
    from pytest_autotune.backends.cuda.module import load_module
    from pytest_autotune.backends.cuda.nvrtc import compile_cuda

    bounded = SAXPY.replace("__global__ void", "__global__ void __launch_bounds__(128)")
    kernel = load_module(compile_cuda(bounded, arch=device.arch), device.info).saxpy
    assert kernel.max_threads == 128
    with pytest.raises(CudaLaunchError, match="refused before launch") as caught:
        kernel(
            (1,),
            (256,),
            device.empty(256, np.float32),
            device.empty(256, np.float32),
            np.float32(1),
            np.int32(256),
        )
    assert caught.value.kind == "resources"


def test_device_limits_and_keys_agree_with_torch(device) -> None:  # type: ignore[no-untyped-def]
    from pytest_autotune.backends import get_backend

    limits = get_backend("cuda").limits(device.info)
    assert limits.max_work_group_size == 1024
    assert limits.local_memory_opt_in is not None
    assert limits.local_memory_opt_in >= (limits.local_memory or 0)
    torch = pytest.importorskip("torch")
    assert get_backend("torch").key(torch.device("cuda", 0)) == device.key


LOSE_THE_CONTEXT = """
import numpy as np
from pytest_autotune.backends import restart_needed
from pytest_autotune.backends.cuda.device import CudaDevice, select_device
from pytest_autotune.backends.cuda.errors import CudaContextLost, classify_cuda_error
from pytest_autotune.backends.cuda.module import load_module
from pytest_autotune.backends.cuda.nvrtc import compile_cuda

device = CudaDevice(select_device(None))
source = 'extern "C" __global__ void bad(float* p) { p[threadIdx.x + (1ull << 40)] = 1.0f; }'
kernel = load_module(compile_cuda(source, arch=device.arch), device.info).bad
kernel((1,), (32,), device.empty(32, np.float32))
try:
    device.synchronize()
except CudaContextLost as exc:
    print(classify_cuda_error(exc)[1].split(":")[0], "|", restart_needed() is not None)
"""


def test_an_illegal_address_is_classified_and_asks_for_a_new_process() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(LOSE_THE_CONTEXT)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.strip() == "illegal address | True", done.stdout + done.stderr
