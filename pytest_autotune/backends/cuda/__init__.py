"""The CUDA backend: CUDA C compiled by NVRTC for the GPU's real architecture, launched and timed
through the CUDA driver API, with device limits as known constraints and classified failures.

Why cuda-python (``cuda.bindings``: the driver API and NVRTC, with the ``nvidia-cuda-nvrtc``
wheel) and not CuPy or torch, as measured when this backend was written (numbers in
docs/gpu-backends.md, re-measurable with ``scripts/gpu-check --measure-install``):

* it compiles offline: NVRTC builds a cubin for a named ``sm_XY`` with no driver and no GPU, so
  CI checks builds, the define injection, resource failures ("uses too much shared data") and
  the build cache on every run; CuPy's compiler needs its CUDA runtime libraries, torch exposes
  no NVRTC at all;
* it is small: ``cuda-bindings`` and ``nvidia-cuda-nvrtc`` install as two wheels (a fraction of
  CuPy's, and torch's CUDA build is gigabytes), and importing NVRTC takes a fraction of a second;
* it gives the facts tuning needs directly: per-kernel registers, static shared memory and
  maximum threads per block (``cuFuncGetAttribute``), the opt-in shared memory limit, events.

Device arrays of CuPy and torch are still accepted as kernel arguments (by
``__cuda_array_interface__``/``data_ptr``), so tests keep their array library.

Modules: :mod:`~.errors` (kinds and labels), :mod:`~.nvrtc` (compile, resources, cache),
:mod:`~.driver` (typed driver calls), :mod:`~.device` (devices, keys, limits, device arrays),
:mod:`~.module` (loaded modules, checked launches), :mod:`~.timing` (events, L2 flush),
:mod:`~.backend` (the :class:`~pytest_autotune.backends.base.Backend`), :mod:`~.fixtures`
(``cuda_device``, ``cuda_stream``). Importing this package imports no cuda-python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_autotune._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "CompiledCuda": "nvrtc",
    "CudaTarget": "nvrtc",
    "KernelResources": "nvrtc",
    "build_cache_info": "nvrtc",
    "clear_build_cache": "nvrtc",
    "compile_cuda": "nvrtc",
    "CudaDevice": "device",
    "CudaDeviceInfo": "device",
    "DeviceArray": "device",
    "list_devices": "device",
    "CudaBuildError": "errors",
    "CudaContextLost": "errors",
    "CudaLaunchError": "errors",
    "CudaResourceError": "errors",
    "CudaKernel": "module",
    "CudaModule": "module",
}

__all__ = [
    "CompiledCuda",
    "CudaBuildError",
    "CudaContextLost",
    "CudaDevice",
    "CudaDeviceInfo",
    "CudaKernel",
    "CudaLaunchError",
    "CudaModule",
    "CudaResourceError",
    "CudaTarget",
    "DeviceArray",
    "KernelResources",
    "build_cache_info",
    "clear_build_cache",
    "compile_cuda",
    "list_devices",
]

__getattr__, __dir__ = lazy_exports(
    __name__, {name: f"{__name__}.{module}" for name, module in _EXPORTS.items()}, __all__
)

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from pytest_autotune.backends.cuda.device import CudaDevice, CudaDeviceInfo, DeviceArray, list_devices
    from pytest_autotune.backends.cuda.errors import (
        CudaBuildError,
        CudaContextLost,
        CudaLaunchError,
        CudaResourceError,
    )
    from pytest_autotune.backends.cuda.module import CudaKernel, CudaModule
    from pytest_autotune.backends.cuda.nvrtc import (
        CompiledCuda,
        CudaTarget,
        KernelResources,
        build_cache_info,
        clear_build_cache,
        compile_cuda,
    )
