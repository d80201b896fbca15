"""The OpenCL fixtures, ``cl_context`` and ``cl_queue``: the selected device, profiling enabled.

The plugin registers this module as a pytest plugin for every run (the backend registry names it),
so it must stay light: pyopencl is imported inside the fixtures, when a test requests one. The
device comes from the plugin's device resolver (fixture ``_autotune_devices``), which applies
``--autotune-device``, ``PYOPENCL_CTX`` and the xdist device assignment.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_autotune.backends.base import DeviceSource

__all__ = ["cl_context", "cl_queue"]


@pytest.fixture(scope="session")
def cl_context(_autotune_devices: DeviceSource) -> Any:
    """An OpenCL context on the selected device (``--autotune-device``, ``PYOPENCL_CTX``, first)."""
    from pytest_autotune.backends.opencl.device import create_context

    return create_context(_autotune_devices.device("opencl"))


@pytest.fixture(scope="session")
def cl_queue(cl_context: Any) -> Iterator[Any]:
    """A profiling-enabled command queue on ``cl_context``'s device."""
    from pytest_autotune.backends.opencl.device import create_queue

    queue = create_queue(cl_context)
    yield queue
    queue.finish()
