"""The host backend: plain Python callables timed by the wall clock on the host CPU.

Every tunable test that uses no other backend's fixtures runs here. The host is one device, keyed
``host:<cpu model>`` in ``autotune.json`` (the model name only, so the key survives OS and Python
updates; those are kept as information). There is nothing to select, build or classify: a device
spec given for an accelerator does not apply to the host, the timer falls back to the wall clock,
and every exception of a test body keeps the plugin's generic labels.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pytest_autotune.backends.base import Backend

__all__ = ["HostBackend", "HostDevice", "host_info", "host_key"]


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
class HostDevice:
    """The host CPU, by model name."""

    cpu: str


class HostBackend(Backend):
    """The host CPU: one device, wall-clock timing, no builds (see the module docstring)."""

    name = "host"

    def devices(self) -> list[Any]:
        """The host, the only device of this backend."""
        return [HostDevice(_cpu_model())]

    def select(self, spec: str | None) -> Any:
        """The host, whatever ``spec`` says (device specs name accelerators)."""
        return HostDevice(_cpu_model())

    def is_cpu(self, device: Any) -> bool:
        """Yes: host kernels (numpy, Python) run in the measuring process."""
        return True

    def key(self, device: Any) -> str:
        """``host:<cpu model>``."""
        return f"host:{device.cpu}"

    def info(self, device: Any) -> dict[str, Any]:
        """CPU model, machine, system, CPU count and Python version."""
        return {**host_info(), "key": self.key(device), "cpu": device.cpu}

    def spec_of(self, device: Any) -> str | None:
        """None: every process runs on the same host."""
        return None
