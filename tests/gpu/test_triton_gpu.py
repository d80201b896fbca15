"""Triton on a CUDA GPU (marked ``gpu``): the tutorial matmul against torch, a configuration beyond
the device's shared memory is a labelled infeasible trial, the torch backend's event timer."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.gpu

EXAMPLE = Path(__file__).resolve().parents[2] / "example_kernels" / "triton" / "test_matmul.py"


@pytest.fixture(scope="module")
def matmul() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_test_matmul", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_too_much_shared_memory_is_a_labelled_infeasible_trial(matmul: Any) -> None:
    import torch

    from pytest_autotune.backends.torch.errors import classify_triton_error

    a = torch.randn((512, 512), device="cuda", dtype=torch.float16)
    c = torch.empty_like(a)
    huge = {
        "BLOCK_SIZE_M": 256,
        "BLOCK_SIZE_N": 256,
        "BLOCK_SIZE_K": 256,
        "GROUP_SIZE_M": 8,
        "num_warps": 8,
        "num_stages": 5,
    }
    with pytest.raises(Exception) as caught:
        matmul.matmul(a, a, c, **huge)
    label, detail = classify_triton_error(caught.value) or ("", "")
    assert label == "compile", caught.value
    assert detail.startswith("resources: ")


def test_the_event_timer_times_a_listed_config(matmul: Any) -> None:
    import torch

    from pytest_autotune.backends.event_timer import EventTimer
    from pytest_autotune.backends.torch.events import TorchEvents

    device = torch.device("cuda", 0)
    a, b, reference = matmul.problem(device)
    c = torch.empty_like(a)
    timer = EventTimer(TorchEvents(device))
    config = matmul.TUTORIAL_CONFIGS[2]
    seconds = [timer(lambda: matmul.matmul(a, b, c, **config), None)[1] for _ in range(5)]
    torch.testing.assert_close(c.float(), reference, atol=2e-2, rtol=2e-2)
    assert all(0 < s < 1 for s in seconds)
