"""The key of a CUDA GPU in ``autotune.json``: its name with its compute capability.

Shared by the CUDA backend and the torch backend (Triton), so a GPU's results are found under one
key whichever library measured them. No driver version: it changes without changing the device.
"""

from __future__ import annotations

__all__ = ["device_key"]


def device_key(name: str, capability: tuple[int, int]) -> str:
    """``"NVIDIA H100 80GB HBM3 / sm_90"`` from the name and ``(major, minor)``."""
    major, minor = capability
    return f"{name.strip()} / sm_{int(major)}{int(minor)}"
