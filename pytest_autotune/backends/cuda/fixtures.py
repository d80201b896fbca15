"""The CUDA fixtures, ``cuda_device`` and ``cuda_stream``.

Registered for every run by the backend registry, so they stay light: cuda-python is imported
when a test requests one. The device comes from the plugin's device resolver (``--autotune-device``,
``$CUDA_DEVICE``, the xdist assignment); without a driver or GPU the test is skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_autotune.backends.base import DeviceSource

__all__ = ["cuda_device", "cuda_stream"]


@pytest.fixture(scope="session")
def cuda_device(_autotune_devices: DeviceSource) -> Any:
    """The selected GPU with its primary context current (a ``CudaDevice``); builds target its
    real architecture, launches and timing use its stream."""
    from pytest_autotune.backends.cuda.device import CudaDevice, driver_problem

    problem = driver_problem()
    if problem is not None:
        pytest.skip(f"needs a CUDA GPU: {problem}")
    return CudaDevice(_autotune_devices.device("cuda"))


@pytest.fixture
def cuda_stream(cuda_device: Any) -> Iterator[Any]:
    """A stream of its own on ``cuda_device``, used by launches and event timing during the test."""
    from pytest_autotune.backends.cuda import driver

    stream = driver.call("cuStreamCreate", 0)
    previous, cuda_device.stream = cuda_device.stream, stream
    yield stream
    cuda_device.stream = previous
    driver.call("cuStreamSynchronize", stream)
    driver.call("cuStreamDestroy", stream)
