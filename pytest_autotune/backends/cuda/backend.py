"""The CUDA backend as a :class:`~pytest_autotune.backends.base.Backend`.

Tests that use ``cuda_device`` or ``cuda_stream`` run here. A thin adapter over the package's
modules: devices and limits (:mod:`~pytest_autotune.backends.cuda.device`), NVRTC builds
(:mod:`~pytest_autotune.backends.cuda.nvrtc`), loaded modules and checked launches
(:mod:`~pytest_autotune.backends.cuda.module`), event timing with an L2 flush
(:mod:`~pytest_autotune.backends.cuda.timing`) and the error kinds
(:mod:`~pytest_autotune.backends.cuda.errors`). Importing it imports no cuda-python; the methods
the plugin calls for every test (``owns``, ``classify``, ``needs_restart``) look only at this
backend's own classes and state.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from pytest_autotune.backends.base import Backend, DeviceLimits
from pytest_autotune.backends.cuda.errors import classify_cuda_error, context_lost
from pytest_autotune.outcome import Label

__all__ = ["CudaBackend"]

_DEVICE_MODULE = "pytest_autotune.backends.cuda.device"
_NVRTC_MODULE = "pytest_autotune.backends.cuda.nvrtc"


class CudaBackend(Backend):
    """NVIDIA GPUs through cuda-python (driver API and NVRTC)."""

    name = "cuda"
    fixtures = frozenset({"cuda_device", "cuda_stream"})

    # -- devices ----------------------------------------------------------------------------------------
    def devices(self) -> list[Any]:
        """Every CUDA device (none where cuda-python or a driver is missing)."""
        from pytest_autotune.backends.cuda.device import list_devices

        try:
            return list(list_devices())
        except Exception:
            return []

    def select(self, spec: str | None) -> Any:
        """An ordinal, a device key or a part of a name; else ``$CUDA_DEVICE``, else device 0."""
        from pytest_autotune.backends.cuda.device import driver_problem, select_device

        problem = driver_problem()
        if problem is not None:
            raise LookupError(problem)
        return select_device(spec)

    def unavailable(self) -> str | None:
        """Why no CUDA device can be used (cuda-python missing, no driver, no GPU), else None."""
        from pytest_autotune.backends.cuda.device import driver_problem

        return driver_problem()

    def environment_spec(self, env: Mapping[str, str] | None = None) -> str | None:
        """``$CUDA_DEVICE`` of ``env`` (this process's environment when None), when set: it pins
        the worker to one device."""
        return (os.environ if env is None else env).get("CUDA_DEVICE") or None

    def key(self, device: Any) -> str:
        """The GPU's name with its compute capability."""
        return str(device.key)

    def identity(self, device: Any) -> str:
        """The key and the ordinal: which GPU of this host (as this process numbers them)."""
        return f"{device.key} #{device.ordinal}"

    def info(self, device: Any) -> dict[str, Any]:
        """Name, compute capability, multiprocessors, L2 and memory sizes, and the limits."""
        return {"key": device.key, "arch": device.arch, **device.to_dict()}

    def limits(self, device: Any) -> DeviceLimits:
        """Threads per block, block dimensions, shared memory per block (default and opt-in)."""
        from pytest_autotune.backends.cuda.device import device_limits

        return device_limits(device)

    # -- fixtures and timing ----------------------------------------------------------------------------
    def synchronizer(
        self, fixturenames: Collection[str], fixture: Callable[[str], Any]
    ) -> Callable[[], Any] | None:
        """Waiting for the device's context."""
        return fixture("cuda_device").synchronize if "cuda_device" in fixturenames else None

    def timer(self, fixturenames: Collection[str], fixture: Callable[[str], Any]) -> Any:
        """CUDA events on the device's stream, flushing the L2 first unless ``autotune_l2_flush``
        is overridden to False."""
        if "cuda_device" not in fixturenames:
            return None
        from pytest_autotune.backends.cuda.timing import DriverEvents
        from pytest_autotune.backends.event_timer import EventTimer

        return EventTimer(DriverEvents(fixture("cuda_device")), flush_l2=bool(fixture("autotune_l2_flush")))

    # -- builds and errors -----------------------------------------------------------------------------
    def owns(self, obj: Any) -> bool:
        """Whether ``obj`` is a ``CudaDevice`` or an offline ``CudaTarget``."""
        device, nvrtc = sys.modules.get(_DEVICE_MODULE), sys.modules.get(_NVRTC_MODULE)
        return (device is not None and isinstance(obj, device.CudaDevice)) or (
            nvrtc is not None and isinstance(obj, nvrtc.CudaTarget)
        )

    def build(
        self,
        context: Any,
        source: str,
        defines: Mapping[str, Any] | None = None,
        options: Sequence[str] = (),
        *,
        define_style: str | None = None,
        source_name: str | None = None,
        **backend_options: Any,
    ) -> Any:
        """Compile with NVRTC for the device's real architecture (``sm_XY``) and load the module
        on it; for a ``CudaTarget`` return the compiled program (no device needed).
        ``name_expressions=["gemm<float, 64>"]`` names template instances to look up by."""
        from pytest_autotune.backends.cuda.nvrtc import CudaTarget, compile_cuda

        name_expressions = backend_options.pop("name_expressions", ())
        if backend_options:
            raise TypeError(f"the cuda backend's build takes no {', '.join(sorted(backend_options))}")
        compiled = compile_cuda(
            source,
            arch=context.arch,
            defines=defines,
            options=options,
            name_expressions=name_expressions,
            define_style=define_style or "source",
            source_name=source_name,
        )
        if isinstance(context, CudaTarget):
            return compiled
        from pytest_autotune.backends.cuda.module import load_module

        return load_module(compiled, context.info, context.stream)

    def clear_build_cache(self) -> None:
        """Forget compiled programs."""
        from pytest_autotune.backends.cuda.nvrtc import clear_build_cache

        clear_build_cache()

    def classify(self, exc: BaseException) -> tuple[Label, str] | None:
        """compile/resources at build: ``compile``; resources/launch/illegal address: ``runtime``."""
        return classify_cuda_error(exc)

    def needs_restart(self) -> str | None:
        """Why this process's CUDA context is unusable (a sticky error happened), else None."""
        return context_lost()
