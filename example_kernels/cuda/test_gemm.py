"""Tunable CUDA SGEMM (C = A @ B, float32, 2048^3 on a GPU): shared-memory tiles, register tiles.

The declared default is a plain 16 x 16 block with one output per thread; tuning explores the
block shape, the outputs per thread in each direction and the depth of the shared-memory slices.
Blocks beyond 1024 threads, and shared memory beyond the device's opt-in maximum, are left out by
the device's limits before tuning (the geometry declares both); static shared memory beyond 48 KiB
fails at build time (ptxas: "uses too much shared data"), before any launch. The result is checked
against numpy's float64 product within the float32 error bound of a length-K dot product. Skipped
without a CUDA GPU.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from pytest_autotune import Geometry, Pow2, Set, constraint, tunable

SOURCE = (Path(__file__).parent / "gemm.cu").read_text()
M = N = K = int(os.environ.get("AUTOTUNE_CUDA_GEMM_SIZE", "2048"))
EPS32 = 2.0**-24
GEOMETRY = Geometry(
    problem_size=(N, M),
    block_size_names=["BX", "BY"],
    grid_div_x=["BX", "WX"],
    grid_div_y=["BY", "WY"],
    local_memory=lambda p: 4 * p["TK"] * (p["BY"] * p["WY"] + p["BX"] * p["WX"]),
)


@functools.cache
def make_problem() -> dict[str, np.ndarray]:
    """Inputs, the float64 reference and the float32 error bound (Higham, eq. 3.5)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    gamma = K * EPS32 / (1 - K * EPS32)
    return {"A": a, "B": b, "reference": a64 @ b64, "bound": gamma * (np.abs(a64) @ np.abs(b64))}


@tunable(
    BX=Pow2(8, 128, default=16),  # threads per block along N (columns of C)
    BY=Pow2(1, 32, default=16),  # threads per block along M (rows of C)
    WX=Set(1, 2, 4, 8, default=1),  # outputs per thread along N
    WY=Set(1, 2, 4, 8, default=1),  # outputs per thread along M
    TK=Set(8, 16, 32, 64, default=16),  # depth of the shared-memory slices
    geometry=GEOMETRY,
)
@constraint(lambda WX, WY: WX * WY <= 32)  # accumulators in registers, not spilled
def test_gemm(autotune, cuda_device):
    problem = make_problem()
    module = autotune.build(cuda_device, SOURCE)
    a, b = cuda_device.to_device(problem["A"]), cuda_device.to_device(problem["B"])
    c = cuda_device.empty((M, N), np.float32)
    sizes = np.int32(M), np.int32(N), np.int32(K)
    autotune.measure(lambda: module.gemm(autotune.launch, a, b, c, *sizes))
    error = np.abs(c.get().astype(np.float64) - problem["reference"])
    assert np.all(error <= problem["bound"]), (
        f"max error beyond the bound: {np.max(error - problem['bound'])}"
    )
    autotune.metric("GFLOP/s", lambda seconds: 2 * M * N * K / seconds / 1e9)
