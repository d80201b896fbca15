"""Which device a tunable test runs on, its key in ``autotune.json``, and who else times on it.

* A test that requests the ``cl_context`` or ``cl_queue`` fixture (directly or through another
  fixture) runs on the OpenCL device chosen by ``--autotune-device``, else ``PYOPENCL_CTX``, else
  the first device; its key is :func:`pytest_autotune.backends.opencl.device_key`.
* Every other tunable test is keyed by the host CPU: ``host:<cpu model>``.
* Under xdist, worker ``gwK`` takes entry ``K`` (cyclically) of a comma-separated
  ``--autotune-device`` list; without a list, device ``K`` (cyclically) among all OpenCL devices,
  unless ``PYOPENCL_CTX`` or a single spec pins every worker to one device. Workers that land on
  the same device share it (:meth:`DeviceResolver.shared_by`): their timings interfere.

pyopencl is imported only when an OpenCL key is first needed.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Final

__all__ = ["OPENCL_FIXTURES", "DeviceResolver", "WorkerSlot", "host_info", "host_key"]

#: Fixtures whose use puts a test on the OpenCL device.
OPENCL_FIXTURES: Final = frozenset({"cl_context", "cl_queue"})


@cache
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return " ".join((platform.processor() or platform.machine() or "unknown cpu").split())


def host_key() -> str:
    """Key of the host CPU: ``host:<cpu model>``."""
    return f"host:{_cpu_model()}"


def host_info() -> dict[str, Any]:
    """Descriptive facts about the host (information only)."""
    return {
        "key": host_key(),
        "cpu": _cpu_model(),
        "machine": platform.machine(),
        "system": platform.system(),
        "cpu_count": os.cpu_count() or 0,
        "python": platform.python_version(),
    }


@dataclass(frozen=True)
class WorkerSlot:
    """This process's place among xdist workers (index 0 of 1 without xdist)."""

    index: int = 0
    count: int = 1

    @property
    def parallel(self) -> bool:
        """True when several workers run at once."""
        return self.count > 1


class DeviceResolver:
    """Resolves device keys for tests of one process (one per session or xdist worker)."""

    def __init__(self, spec: str | None, worker: WorkerSlot) -> None:
        self.specs = [s.strip() for s in spec.split(",")] if spec else []
        if spec is not None and not all(self.specs):
            raise ValueError(f"--autotune-device={spec!r}: empty device spec in the list")
        self.worker = worker

    # -- which device ---------------------------------------------------------------------------------
    @staticmethod
    def uses_opencl(fixturenames: Any) -> bool:
        """Whether a test with these (closure of) fixture names runs on the OpenCL device."""
        return bool(OPENCL_FIXTURES & set(fixturenames))

    def key_for(self, fixturenames: Any) -> str:
        """The device key of a test given its fixture names."""
        return self.opencl_key if self.uses_opencl(fixturenames) else host_key()

    def info_for(self, key: str) -> dict[str, Any]:
        """Information about the device with ``key`` (for the store's ``info`` block)."""
        if key == host_key():
            return host_info()
        from pytest_autotune.backends.opencl import device_info

        return device_info(self.opencl_device)

    def shared_by(self, key: str) -> int:
        """How many workers of this session time on the device with ``key`` (1 = this one alone)."""
        if not self.worker.parallel:
            return 1
        if key == host_key():
            return self.worker.count
        return self._opencl_sharing

    # -- OpenCL ---------------------------------------------------------------------------------------
    @cached_property
    def _assignment(self) -> tuple[Any, int]:
        """(device of this worker, number of workers on it)."""
        from pytest_autotune.backends.opencl import device_key, list_devices, probe_device, select_device

        slots = range(self.worker.count)
        if self.specs:
            keys = [device_key(select_device(s)) for s in self.specs]
            mine = self.worker.index % len(self.specs)
            sharing = sum(1 for k in slots if keys[k % len(keys)] == keys[mine])
            return select_device(self.specs[mine]), sharing
        if not self.worker.parallel or os.environ.get("PYOPENCL_CTX"):
            return select_device(None), self.worker.count
        entries = [entry for entry in list_devices() if probe_device(entry.device) is None]
        if not entries:
            return select_device(None), self.worker.count  # raises, listing what is available
        mine = self.worker.index % len(entries)
        sharing = sum(1 for k in slots if k % len(entries) == mine)
        return entries[mine].device, sharing

    @property
    def opencl_device(self) -> Any:
        """This process's OpenCL device (``pyopencl.Device``)."""
        return self._assignment[0]

    def opencl_spec(self) -> str:
        """The ``"P:D"`` spec of this process's OpenCL device: another process selects the same one."""
        from pytest_autotune.backends.opencl import list_devices

        device = self.opencl_device
        for entry in list_devices():
            if entry.device == device:
                return entry.spec
        return self.opencl_key

    @cached_property
    def opencl_key(self) -> str:
        """Key of this process's OpenCL device."""
        from pytest_autotune.backends.opencl import device_key

        return device_key(self.opencl_device)

    @property
    def _opencl_sharing(self) -> int:
        return self._assignment[1]
