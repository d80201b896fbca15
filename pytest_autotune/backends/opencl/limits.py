"""The launch limits of an OpenCL device, read from its device info.

One reading serves two users: the launch checks of :mod:`pytest_autotune.backends.opencl.build`
(which refuse a work-group the device cannot run before the driver sees it) and
:meth:`OpenCLBackend.limits <pytest_autotune.backends.opencl.backend.OpenCLBackend.limits>`, from which
known constraints of a search space can be derived. It reads attributes of the device object it is
given and imports nothing itself.
"""

from __future__ import annotations

from typing import Any

from pytest_autotune.backends.base import DeviceLimits

__all__ = ["device_limits"]


def device_limits(device: Any) -> DeviceLimits:
    """Maximum work-group size, maximum work-items per dimension and local memory of ``device``."""
    return DeviceLimits(
        max_work_group_size=int(device.max_work_group_size),
        max_work_item_sizes=tuple(int(size) for size in device.max_work_item_sizes),
        local_memory=int(device.local_mem_size),
    )
