"""The torch backend's fixture, ``torch_device``: the selected GPU (``cuda:N``), or ``cpu`` under
Triton's interpreter. Registered for every run, so it stays light: torch is imported only when a
test requests it."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune.backends.base import DeviceSource

__all__ = ["torch_device"]


@pytest.fixture(scope="session")
def torch_device(_autotune_devices: DeviceSource) -> Any:
    """The ``torch.device`` tensors and Triton kernels of the test run on."""
    import torch

    device = _autotune_devices.device("torch")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device
