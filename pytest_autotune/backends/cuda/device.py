"""CUDA devices: discovery, selection, keys, limits, and the context and stream a test uses.

:func:`list_devices` reads each GPU's facts once (:class:`CudaDeviceInfo`); no driver (CI) means
no devices, never an error. The device key is the GPU's name with its compute capability
(:func:`device_key`, shared with the torch backend so both store results of one GPU under one
key). :func:`device_limits` turns the facts into the
:class:`~pytest_autotune.backends.base.DeviceLimits` that become known constraints before tuning:
threads per block, block dimensions, and shared memory per block (the opt-in maximum as
``local_memory_opt_in``). :class:`CudaDevice` is what the ``cuda_device`` fixture gives a test:
the device's primary context made current, and helpers to move numpy arrays to and from it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_autotune.backends.base import DeviceLimits
from pytest_autotune.backends.cuda import driver
from pytest_autotune.backends.cuda.keys import device_key

__all__ = [
    "CudaDevice",
    "CudaDeviceInfo",
    "DeviceArray",
    "device_limits",
    "driver_problem",
    "list_devices",
    "select_device",
]


@dataclass(frozen=True)
class CudaDeviceInfo:
    """The facts of one GPU that tuning needs (read once from the driver)."""

    ordinal: int
    name: str
    capability: tuple[int, int]
    multiprocessors: int
    l2_bytes: int
    total_memory: int
    max_threads_per_block: int
    max_block_dims: tuple[int, int, int]
    max_grid_dims: tuple[int, int, int]
    shared_per_block: int
    shared_per_block_opt_in: int

    @property
    def key(self) -> str:
        """The device key: ``"NVIDIA H100 80GB HBM3 / sm_90"``."""
        return device_key(self.name, self.capability)

    @property
    def arch(self) -> str:
        """The real architecture NVRTC compiles for (``"sm_90"``)."""
        return f"sm_{self.capability[0]}{self.capability[1]}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict."""
        data = asdict(self)
        for name in ("capability", "max_block_dims", "max_grid_dims"):
            data[name] = list(data[name])
        return data


def driver_problem() -> str | None:
    """Why no CUDA device can be used here (no driver, cuda-python missing, no GPU), else None.

    The driver library is looked for first, without importing cuda-python: on a machine without
    a driver (CI) nothing of CUDA is imported.
    """
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            return f"no CUDA driver: libcuda.so.1 cannot be loaded ({exc})"
    try:
        devices = list_devices()
    except ImportError as exc:
        return f"cuda-python is not installed ({exc}); pip install 'pytest-autotune[cuda]'"
    except Exception as exc:
        return f"no CUDA driver: {type(exc).__name__}: {exc}"
    return None if devices else "no CUDA device"


_DEVICES: list[CudaDeviceInfo] = []
_READ: list[bool] = []


def list_devices() -> list[CudaDeviceInfo]:
    """Every CUDA device, by ordinal (read once per process)."""
    if _READ:
        return list(_DEVICES)
    drv = driver.api()
    driver.call("cuInit", 0)
    count = int(driver.call("cuDeviceGetCount"))
    attr = drv.CUdevice_attribute
    for ordinal in range(count):
        dev = driver.call("cuDeviceGet", ordinal)

        def get(name: str, dev: Any = dev) -> int:
            return int(driver.call("cuDeviceGetAttribute", getattr(attr, f"CU_DEVICE_ATTRIBUTE_{name}"), dev))

        raw = driver.call("cuDeviceGetName", 256, dev)
        _DEVICES.append(
            CudaDeviceInfo(
                ordinal=ordinal,
                name=bytes(raw).split(b"\x00", 1)[0].decode(errors="replace").strip(),
                capability=(get("COMPUTE_CAPABILITY_MAJOR"), get("COMPUTE_CAPABILITY_MINOR")),
                multiprocessors=get("MULTIPROCESSOR_COUNT"),
                l2_bytes=get("L2_CACHE_SIZE"),
                total_memory=int(driver.call("cuDeviceTotalMem", dev)),
                max_threads_per_block=get("MAX_THREADS_PER_BLOCK"),
                max_block_dims=(get("MAX_BLOCK_DIM_X"), get("MAX_BLOCK_DIM_Y"), get("MAX_BLOCK_DIM_Z")),
                max_grid_dims=(get("MAX_GRID_DIM_X"), get("MAX_GRID_DIM_Y"), get("MAX_GRID_DIM_Z")),
                shared_per_block=get("MAX_SHARED_MEMORY_PER_BLOCK"),
                shared_per_block_opt_in=get("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
            )
        )
    _READ.append(True)
    return list(_DEVICES)


def select_device(spec: str | None) -> CudaDeviceInfo:
    """The device named by ``spec``: an ordinal (``"0"``), its key, or a part of its name;
    without one ``$CUDA_DEVICE`` if set, else device 0. ``LookupError`` lists the devices."""
    devices = list_devices()
    if not devices:
        raise LookupError("no CUDA device on this machine")
    spec = spec if spec is not None else os.environ.get("CUDA_DEVICE") or None
    if spec is None:
        return devices[0]
    text = str(spec).strip()
    for info in devices:
        if text == str(info.ordinal) or text == info.key:
            return info
    matches = [info for info in devices if text.lower() in info.name.lower()]
    if len(matches) == 1:
        return matches[0]
    listing = "; ".join(f"{info.ordinal}: {info.key}" for info in devices)
    raise LookupError(f"no single CUDA device matches {spec!r}; devices: {listing}")


def device_limits(info: CudaDeviceInfo) -> DeviceLimits:
    """Threads per block, block dimensions and shared memory per block (default and opt-in)."""
    return DeviceLimits(
        max_work_group_size=info.max_threads_per_block,
        max_work_item_sizes=info.max_block_dims,
        local_memory=info.shared_per_block,
        local_memory_opt_in=info.shared_per_block_opt_in,
    )


class DeviceArray:
    """Device memory holding a copy of a numpy array (``shape``, ``dtype``); ``get()`` copies it
    back. ``ptr`` is the device address, which kernels receive. Freed with the object."""

    def __init__(self, nbytes: int, shape: Sequence[int], dtype: Any) -> None:
        self.nbytes = int(nbytes)
        self.shape = tuple(shape)
        self.dtype = dtype
        self.ptr = int(driver.call("cuMemAlloc", max(self.nbytes, 1), what=f"of {self.nbytes} bytes"))

    @classmethod
    def from_host(cls, array: Any) -> DeviceArray:
        """A device copy of the numpy array ``array``."""
        import numpy as np

        host = np.ascontiguousarray(array)
        result = cls(host.nbytes, host.shape, host.dtype)
        result.set(host)
        return result

    def set(self, array: Any) -> None:
        """Copy the numpy array ``array`` (same size) to the device."""
        import numpy as np

        host = np.ascontiguousarray(array)
        if host.nbytes != self.nbytes:
            raise ValueError(f"copying {host.nbytes} bytes into a device array of {self.nbytes}")
        driver.call("cuMemcpyHtoD", self.ptr, host.ctypes.data, self.nbytes)

    def get(self, out: Any = None) -> Any:
        """The contents as a numpy array (into ``out`` when given)."""
        import numpy as np

        host = np.empty(self.shape, self.dtype) if out is None else out
        if not host.flags.c_contiguous or host.nbytes != self.nbytes:
            raise ValueError("DeviceArray.get: out must be a C-contiguous array of the same size")
        driver.call("cuMemcpyDtoH", host.ctypes.data, self.ptr, self.nbytes)
        return host

    def free(self) -> None:
        """Release the memory now (idempotent)."""
        ptr, self.ptr = self.ptr, 0
        if ptr:
            with contextlib.suppress(Exception):
                driver.call("cuMemFree", ptr)

    def __del__(self) -> None:
        self.free()

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype})"


class CudaDevice:
    """One GPU with its primary context current in this process: what ``cuda_device`` gives.

    ``info`` holds its facts, ``key`` its device key, ``arch`` the architecture builds target,
    ``stream`` the stream launches and timing use (the default stream unless the ``cuda_stream``
    fixture set one). ``to_device(array)`` and ``empty(shape, dtype)`` make device arrays.
    """

    def __init__(self, info: CudaDeviceInfo) -> None:
        self.info = info
        handle = driver.call("cuDeviceGet", info.ordinal)
        self.context = driver.call("cuDevicePrimaryCtxRetain", handle)
        self.activate()
        self.stream: Any = 0

    @property
    def key(self) -> str:
        """The device key (name and compute capability)."""
        return self.info.key

    @property
    def arch(self) -> str:
        """The real architecture builds target (``"sm_90"``)."""
        return self.info.arch

    def activate(self) -> None:
        """Make this device's primary context current in the calling thread."""
        driver.call("cuCtxSetCurrent", self.context)

    def to_device(self, array: Any) -> DeviceArray:
        """A device copy of the numpy array ``array``."""
        return DeviceArray.from_host(array)

    def empty(self, shape: Sequence[int] | int, dtype: Any) -> DeviceArray:
        """Uninitialised device memory for an array of ``shape`` and ``dtype``."""
        import numpy as np

        dims = (shape,) if isinstance(shape, int) else tuple(shape)
        return DeviceArray(int(np.prod(dims)) * np.dtype(dtype).itemsize, dims, np.dtype(dtype))

    def synchronize(self) -> None:
        """Wait for everything this context enqueued."""
        driver.call("cuCtxSynchronize")

    def __repr__(self) -> str:
        return f"CudaDevice({self.key!r}, ordinal={self.info.ordinal})"
