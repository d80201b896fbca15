"""The torch backend: Triton kernels and plain torch code on a CUDA GPU (or in Triton's interpreter).

Tests that use ``torch_device`` run here. The device is a ``torch.device``: ``cuda:N`` on a GPU,
keyed like the CUDA backend (the GPU's name with its compute capability, so both backends store
one GPU's results under one key); under ``TRITON_INTERPRET=1`` with no GPU, ``cpu``, keyed
``Triton interpreter / <CPU>``, so the interpreter's tuning never mixes with a GPU's. Timing is
CUDA events with an L2 flush (:class:`~pytest_autotune.backends.event_timer.EventTimer` over
:class:`~pytest_autotune.backends.torch.events.TorchEvents`); in the interpreter, wall-clock.
Triton's ``OutOfResources``, ``PTXASError`` and ``CompilationError`` are labelled infeasible
trials (:mod:`~pytest_autotune.backends.torch.errors`). Importing this module imports no torch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping
from typing import Any

from pytest_autotune.backends.base import Backend, DeviceLimits
from pytest_autotune.backends.cuda.errors import context_lost
from pytest_autotune.backends.cuda.keys import device_key
from pytest_autotune.backends.torch.errors import classify_triton_error
from pytest_autotune.outcome import Label

__all__ = ["TorchBackend", "interpreting"]


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "").strip() in {"1", "true", "True"}


def _cuda_count() -> int:
    import torch

    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


class TorchBackend(Backend):
    """CUDA GPUs as torch sees them, for Triton kernels and torch code."""

    name = "torch"
    fixtures = frozenset({"torch_device"})

    # -- devices ----------------------------------------------------------------------------------------
    def devices(self) -> list[Any]:
        """``cuda:0``, ``cuda:1``, ...; ``cpu`` alone under Triton's interpreter without a GPU."""
        try:
            import torch
        except ImportError:
            return []
        count = _cuda_count()
        if count == 0:
            return [torch.device("cpu")] if interpreting() else []
        return [torch.device("cuda", index) for index in range(count)]

    def unavailable(self) -> str | None:
        """Why no device can run the test: torch missing, or no GPU outside the interpreter."""
        try:
            import torch  # noqa: F401
        except ImportError as exc:
            return f"torch is not installed ({exc})"
        if self.devices():
            return None
        return "torch sees no CUDA GPU (set TRITON_INTERPRET=1 to run Triton kernels on the CPU)"

    def select(self, spec: str | None) -> Any:
        """An index (``"0"``), ``cuda:N``, a device key or a part of a GPU name; else the first."""
        devices = self.devices()
        if not devices:
            raise LookupError(self.unavailable() or "no device")
        spec = spec if spec is not None else self.environment_spec()
        if spec is None:
            return devices[0]
        text = str(spec).strip()
        for device in devices:
            if text in {str(device), str(device.index), self.key(device)}:
                return device
        matches = [device for device in devices if text.lower() in self.key(device).lower()]
        if len(matches) == 1:
            return matches[0]
        listing = "; ".join(f"{device}: {self.key(device)}" for device in devices)
        raise LookupError(f"no single torch device matches {spec!r}; devices: {listing}")

    def environment_spec(self, env: Mapping[str, str] | None = None) -> str | None:
        """``$CUDA_DEVICE`` of ``env`` (this process's environment when None), when set: it pins
        the worker to one device."""
        return (os.environ if env is None else env).get("CUDA_DEVICE") or None

    def key(self, device: Any) -> str:
        """The GPU's name with its compute capability (``Triton interpreter / <CPU>`` on the CPU)."""
        if device.type != "cuda":
            from pytest_autotune.backends.host import host_key

            return f"Triton interpreter / {host_key()}"
        import torch

        return device_key(torch.cuda.get_device_name(device), torch.cuda.get_device_capability(device))

    def is_cpu(self, device: Any) -> bool:
        """True for ``cpu`` (Triton's interpreter, which runs in this process), False for a GPU."""
        return bool(device.type != "cuda")

    def identity(self, device: Any) -> str:
        """The key and the index: which GPU of this host (as this process numbers them)."""
        return f"{self.key(device)} #{device.index or 0}"

    def info(self, device: Any) -> dict[str, Any]:
        """Name, capability, multiprocessors, L2 and memory sizes, torch and Triton versions."""
        import torch

        info: dict[str, Any] = {"key": self.key(device), "torch": torch.__version__, "device": str(device)}
        try:
            import triton

            info["triton"] = triton.__version__
        except ImportError:
            pass
        if device.type == "cuda":
            props = torch.cuda.get_device_properties(device)
            info.update(
                name=props.name,
                capability=[props.major, props.minor],
                multiprocessors=props.multi_processor_count,
                total_memory=props.total_memory,
                l2_bytes=int(getattr(props, "L2_cache_size", 0)),
            )
        return info

    def limits(self, device: Any) -> DeviceLimits:
        """Threads per block (1024), shared memory per block and its opt-in maximum."""
        if device.type != "cuda":
            return DeviceLimits()
        import torch

        props = torch.cuda.get_device_properties(device)
        shared = getattr(props, "shared_memory_per_block", None)
        opt_in = getattr(props, "shared_memory_per_block_optin", None)
        return DeviceLimits(
            max_work_group_size=int(getattr(props, "max_threads_per_block", 1024)),
            max_work_item_sizes=(1024, 1024, 64),
            local_memory=None if shared is None else int(shared),
            local_memory_opt_in=None if opt_in is None else int(opt_in),
        )

    # -- fixtures and timing ----------------------------------------------------------------------------
    def synchronizer(
        self, fixturenames: Collection[str], fixture: Callable[[str], Any]
    ) -> Callable[[], Any] | None:
        """``torch.cuda.synchronize`` on a GPU."""
        if "torch_device" not in fixturenames or fixture("torch_device").type != "cuda":
            return None
        import torch

        return torch.cuda.synchronize

    def timer(self, fixturenames: Collection[str], fixture: Callable[[str], Any]) -> Any:
        """CUDA events with an L2 flush on a GPU (None in the interpreter: wall-clock)."""
        if "torch_device" not in fixturenames:
            return None
        device = fixture("torch_device")
        if device.type != "cuda":
            return None
        from pytest_autotune.backends.event_timer import EventTimer
        from pytest_autotune.backends.torch.events import TorchEvents

        return EventTimer(TorchEvents(device), flush_l2=bool(fixture("autotune_l2_flush")))

    # -- errors -----------------------------------------------------------------------------------------
    def classify(self, exc: BaseException) -> tuple[Label, str] | None:
        """Triton's resource and compilation errors are ``compile``; a lost context ``runtime``."""
        return classify_triton_error(exc)

    def needs_restart(self) -> str | None:
        """Why this process's CUDA context is unusable (an illegal address), else None."""
        return context_lost()
