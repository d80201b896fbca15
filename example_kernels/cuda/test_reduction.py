"""Tunable CUDA sum reduction of 2^26 floats: threads per block, elements per thread, warp shuffles.

Each block writes one partial sum (two-step reduction); the host adds the partials and compares
with numpy's float64 sum. The declared block sizes go up to 2048 threads: the device's limit of
1024 threads per block removes the larger ones before tuning. Skipped without a CUDA GPU.
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path

import numpy as np

from pytest_autotune import Bool, Geometry, Pow2, Set, tunable

SOURCE = (Path(__file__).parent / "reduction.cu").read_text()
SIZE = int(os.environ.get("AUTOTUNE_CUDA_REDUCTION_SIZE", str(1 << 26)))
GEOMETRY = Geometry(
    problem_size=SIZE,
    block_size_names=["BLOCK"],
    grid_div_x=["BLOCK", "ITEMS"],
    local_memory=lambda p: 4 * p["BLOCK"],  # the dynamic shared memory of the launch
)


@functools.cache
def make_problem() -> tuple[np.ndarray, float]:
    x = np.random.default_rng(2).random(SIZE, dtype=np.float32)
    return x, float(np.sum(x, dtype=np.float64))


@tunable(
    BLOCK=Pow2(32, 2048, default=256),
    ITEMS=Set(1, 2, 4, 8, 16, 32, default=1),
    WARP_SHUFFLE=Bool(default=False),
    geometry=GEOMETRY,
)
def test_reduction(autotune, cuda_device):
    x, expected = make_problem()
    module = autotune.build(cuda_device, SOURCE)
    device_x = cuda_device.to_device(x)
    launch = autotune.launch
    partial = cuda_device.empty(math.prod(launch.grid), np.float32)
    shared = 4 * autotune.config["BLOCK"]
    autotune.measure(
        lambda: module.reduce_sum(launch, device_x, partial, np.int32(SIZE), shared_memory=shared)
    )
    total = float(np.sum(partial.get(), dtype=np.float64))
    # float32 partial sums of up to 2^26 values in [0, 1): well within 1e-5 relative
    assert abs(total - expected) <= 1e-5 * expected, (total, expected)
    autotune.metric("GB/s", lambda seconds: 4 * SIZE / seconds / 1e9)
