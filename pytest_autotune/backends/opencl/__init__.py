"""The OpenCL backend: devices, contexts and queues, builds with ``#define`` lines, events, errors.

Importing this package is free: its public names load lazily (PEP 562), so the plugin can register
the OpenCL fixtures and name the backend's class without importing pyopencl, which loads only when
a name that needs it is first used. The modules:

* :mod:`~pytest_autotune.backends.opencl.device`: device discovery, selection (:func:`select_device`),
  keys and information, contexts, profiling queues, event times (imports pyopencl);
* :mod:`~pytest_autotune.backends.opencl.build`: :func:`build_program`, cached per context, whose
  kernels check each launch against the device limits (imports pyopencl);
* :mod:`~pytest_autotune.backends.opencl.defines`: a configuration as ``#define`` lines (the default)
  or ``-D`` options;
* :mod:`~pytest_autotune.backends.opencl.errors`: error types and their trial labels;
* :mod:`~pytest_autotune.backends.opencl.limits`: the device limits as a
  :class:`~pytest_autotune.backends.base.DeviceLimits`;
* :mod:`~pytest_autotune.backends.opencl.backend`: ``OpenCLBackend``, the
  :class:`~pytest_autotune.backends.base.Backend` over all of the above (the plugin reaches it
  through the registry: ``get_backend("opencl")``);
* :mod:`~pytest_autotune.backends.opencl.fixtures`: the ``cl_context`` and ``cl_queue`` fixtures;
* :mod:`~pytest_autotune.testing.opencl_objective`: a ``@tunable`` OpenCL test as a library objective.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_autotune._lazy import lazy_exports

# public name -> module (in this package) that defines it
_EXPORTS: dict[str, str] = {
    "DeviceEntry": "device",
    "create_context": "device",
    "create_queue": "device",
    "device_info": "device",
    "device_key": "device",
    "event_seconds": "device",
    "list_devices": "device",
    "pci_address": "device",
    "probe_device": "device",
    "select_device": "device",
    "BuildCacheInfo": "build",
    "BuiltProgram": "build",
    "CheckedKernel": "build",
    "build_cache_info": "build",
    "build_program": "build",
    "clear_build_cache": "build",
    "define_options": "defines",
    "define_source": "defines",
    "DeviceNotFoundError": "errors",
    "DeviceUnusableError": "errors",
    "KernelBuildError": "errors",
    "LaunchError": "errors",
    "classify_error": "errors",
    "status_name": "errors",
    "device_limits": "limits",
}

__all__ = [
    "BuildCacheInfo",
    "BuiltProgram",
    "CheckedKernel",
    "DeviceEntry",
    "DeviceNotFoundError",
    "DeviceUnusableError",
    "KernelBuildError",
    "LaunchError",
    "build_cache_info",
    "build_program",
    "classify_error",
    "clear_build_cache",
    "create_context",
    "create_queue",
    "define_options",
    "define_source",
    "device_info",
    "device_key",
    "device_limits",
    "event_seconds",
    "list_devices",
    "pci_address",
    "probe_device",
    "select_device",
    "status_name",
]


__getattr__, __dir__ = lazy_exports(
    __name__, {name: f"{__name__}.{module}" for name, module in _EXPORTS.items()}, __all__
)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from pytest_autotune.backends.opencl.build import (
        BuildCacheInfo,
        BuiltProgram,
        CheckedKernel,
        build_cache_info,
        build_program,
        clear_build_cache,
    )
    from pytest_autotune.backends.opencl.defines import define_options, define_source
    from pytest_autotune.backends.opencl.device import (
        DeviceEntry,
        create_context,
        create_queue,
        device_info,
        device_key,
        event_seconds,
        list_devices,
        pci_address,
        probe_device,
        select_device,
    )
    from pytest_autotune.backends.opencl.errors import (
        DeviceNotFoundError,
        DeviceUnusableError,
        KernelBuildError,
        LaunchError,
        classify_error,
        status_name,
    )
    from pytest_autotune.backends.opencl.limits import device_limits
