"""Every example kernel is correct at its default and at random valid configurations (on PoCL in CI),
and configurations beyond the device's limits become labelled trials instead of crashes.

Each configuration costs one build (PoCL: about a second) and one timed run; the sizes are those of
the examples, chosen so that a run takes milliseconds to tens of milliseconds on a 2-core CPU.
"""

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyopencl")
from pytest_autotune.testing.opencl_objective import KernelTestObjective
from tests.backends.opencl.kernel_objectives import objective_for_file

pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel

EXAMPLES = Path(__file__).resolve().parents[3] / "example_kernels"
KERNELS = ["saxpy", "gemm", "conv2d", "reduction", "transpose"]
LIMIT_ERRORS = ("INVALID_WORK_GROUP_SIZE", "INVALID_WORK_ITEM_SIZE", "OUT_OF_RESOURCES")


def objective_for(kernel: str) -> KernelTestObjective:
    return objective_for_file(EXAMPLES / f"test_{kernel}.py", f"test_{kernel}")


@pytest.mark.parametrize("kernel", KERNELS)
def test_default_configuration_is_correct(kernel: str) -> None:
    objective = objective_for(kernel)
    trial = objective.run(objective.space.default_config())
    assert trial.outcome.label == "ok", trial.outcome.detail
    assert trial.outcome.value is not None
    assert trial.outcome.value > 0


@pytest.mark.parametrize("kernel", KERNELS)
def test_random_valid_configurations_are_correct_or_hit_a_device_limit(kernel: str) -> None:
    objective = objective_for(kernel)
    space = objective.space
    configs = space.configs(space.sample(2, np.random.default_rng(sum(map(ord, kernel)))))
    for config in configs:
        outcome = objective(config)
        assert outcome.label == "ok" or (
            outcome.label == "runtime" and outcome.detail.startswith(LIMIT_ERRORS)
        ), f"{config}: {outcome}"


@pytest.mark.parametrize(
    ("kernel", "config", "status"),
    [
        # 512 x (512 + 1) floats of local memory: just above PoCL's 1 MiB (PoCL would segfault).
        ("transpose", {"TILE_X": 512, "TILE_Y": 512, "ROWS": 8, "LOCAL": True, "PAD": 1}, "OUT_OF_RESOURCES"),
        # The input tile (64*8 + 6)^2 floats exceeds 1 MiB of local memory.
        (
            "conv2d",
            {"BX": 64, "BY": 64, "TX": 8, "TY": 8, "LOCAL": True, "CONST_FILTER": False},
            "OUT_OF_RESOURCES",
        ),
        # 8192 work-items per work-group: above the device maximum.
        ("reduction", {"WG": 8192, "EPT": 1, "VW": 1, "UNROLL": 1, "STRIDED": True}, "INVALID_WORK"),
    ],
)
def test_configurations_beyond_device_limits_are_runtime_trials(kernel, config, status) -> None:
    objective = objective_for(kernel)
    if objective.device.local_mem_size != 1 << 20 or objective.device.max_work_group_size != 4096:
        pytest.skip("the limits in this test are PoCL's on the CI machine")
    assert objective.space.contains([config])[0], "the configuration must be valid for the tuner"
    outcome = objective(config)
    assert outcome.label == "runtime"
    assert outcome.detail.startswith(status)
