"""Which stored device stands in for the application's device: exact, same architecture, same vendor.

A device is known by its key in ``autotune.json`` (the backends build it: ``"NVIDIA H100 80GB HBM3
/ sm_90"`` for CUDA and Triton, ``"<platform> / <device>"`` for OpenCL, ``host:<cpu>`` for the
host, ``"Triton interpreter / host:<cpu>"`` for Triton on the CPU) and by what the key and the
store's ``info`` block tell about it (:class:`DeviceId`): its **architecture** (a CUDA compute
capability ``sm_90``, read from the key; the Triton interpreter), its **vendor** (NVIDIA for an
``sm_`` key, else the OpenCL ``vendor`` field) and its **kind** (GPU, CPU, ...: the OpenCL
``type`` field). :func:`match_level` ranks a stored device against the application's:

1. ``exact``: the same key;
2. ``architecture``: both architectures known and equal (any ``sm_90`` for an H100);
3. ``vendor``: both vendors known and equal, and the kinds equal where both are known;
4. else no match (the reader then uses the declared default).

Pure Python: the application's device may be given as a key string; :func:`opencl_device` and
:func:`torch_device` build it from a device object, importing that library only when called.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["DEVICE_LEVELS", "DeviceId", "DeviceLevel", "match_level", "opencl_device", "torch_device"]

#: How closely a stored device matches the application's, best first.
DeviceLevel = Literal["exact", "architecture", "vendor"]
DEVICE_LEVELS: Final[tuple[DeviceLevel, ...]] = ("exact", "architecture", "vendor")

_SM = re.compile(r"/ (sm_\d+)\Z")
_INTERPRETER: Final = "Triton interpreter / "
_VENDORS: Final = (("nvidia", "nvidia"), ("advanced micro", "amd"), ("amd", "amd"), ("intel", "intel"))


def _vendor(text: Any) -> str | None:
    """A vendor's short name (``"AuthenticAMD"`` -> ``"amd"``), None when unknown."""
    if not isinstance(text, str) or not text.strip():
        return None
    low = text.lower()
    return next((short for word, short in _VENDORS if word in low), low.split()[0])


@dataclass(frozen=True)
class DeviceId:
    """A device's key and what is known of its architecture, vendor and kind (None: unknown)."""

    key: str
    architecture: str | None = None
    vendor: str | None = None
    kind: str | None = None

    @classmethod
    def of(cls, key: str, info: Mapping[str, Any] | None = None) -> DeviceId:
        """The traits of the device with ``key``, read from the key and its ``info`` block."""
        info = info or {}
        sm = _SM.search(key)
        if sm is not None:
            return cls(key, sm.group(1), "nvidia", "GPU")
        if key.startswith(_INTERPRETER):
            return cls(key, "triton-interpreter", None, "interpreter")
        if key.startswith("host:"):
            return cls(key, None, None, "host")
        kind = info.get("type")
        return cls(key, None, _vendor(info.get("vendor")), kind.upper() if isinstance(kind, str) else None)


def match_level(stored: DeviceId, wanted: DeviceId) -> DeviceLevel | None:
    """How ``stored`` stands in for ``wanted`` (module docstring), None when it does not."""
    if stored.key == wanted.key:
        return "exact"
    if stored.architecture is not None and stored.architecture == wanted.architecture:
        return "architecture"
    same_kind = stored.kind is None or wanted.kind is None or stored.kind == wanted.kind
    return "vendor" if stored.vendor is not None and stored.vendor == wanted.vendor and same_kind else None


def opencl_device(device: Any) -> DeviceId:
    """The :class:`DeviceId` of a ``pyopencl.Device`` (its key as the OpenCL backend writes it)."""
    from pytest_autotune.backends import get_backend

    info = get_backend("opencl").info(device)
    return DeviceId.of(str(info["key"]), info)


def torch_device(device: Any = None) -> DeviceId:
    """The :class:`DeviceId` of a torch device (default: the one the torch backend selects, the
    first GPU or ``$CUDA_DEVICE``; the CPU under Triton's interpreter), keyed as the backend keys it."""
    from pytest_autotune.backends import get_backend

    backend = get_backend("torch")
    if device is None:
        device = backend.select(None)
    elif not hasattr(device, "type"):
        import torch

        device = torch.device(device)
    return DeviceId.of(backend.key(device))
