"""Tunable GEMM (C = A @ B, 512 x 512 x 512, float32): CLBlast-style tiling with 12 parameters.

The naive default gives each work-item one element of C in 16 x 16 work-groups, reading A and B
straight from global memory; tuning explores work-group tiles, per-work-item register tiles,
vector widths, K-unrolling, local-memory staging and the work-item-to-data mapping.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyopencl as cl

from pytest_autotune import Bool, Geometry, Pow2, Set, constraint, tunable

KERNEL = Path(__file__).parent / "gemm.cl"  # a path: build errors name this file and its lines
M = N = K = 512
EPS32 = 2.0**-24  # unit roundoff of float32
# Work-groups of NDIMC x MDIMC work-items, each computing an NWG x MWG tile of C; SA and SB stage
# KWG x MWG and KWG x NWG floats of A and B in local memory.
GEOMETRY = Geometry(
    problem_size=(N, M),
    block_size_names=["NDIMC", "MDIMC"],
    grid_div_x=["NWG"],
    grid_div_y=["MWG"],
    local_memory=lambda p: 4 * p["KWG"] * (p["MWG"] * p["SA"] + p["NWG"] * p["SB"]),
)


@functools.cache
def make_problem() -> dict[str, np.ndarray]:
    """Inputs (A given transposed, as the kernel reads it) and the float64 reference."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return {
        "AT": np.ascontiguousarray(a.T),
        "B": b,
        "reference": a64 @ b64,
        # Any float32 dot product of length K, in any order, with or without fused multiply-adds,
        # is within gamma_K * (|A| @ |B|) of the exact result, gamma_K = K u / (1 - K u) with
        # u = 2^-24 (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., eq. 3.5).
        # A wrong index or a lost term is off by O(|a b|) ~ 1, far outside this bound.
        "bound": (K * EPS32 / (1 - K * EPS32)) * (np.abs(a64) @ np.abs(b64)),
    }


@tunable(
    MWG=Pow2(16, 128, default=16),  # work-group tile: rows of C
    NWG=Pow2(16, 128, default=16),  # work-group tile: columns of C
    KWG=Pow2(8, 32, default=16),  # K-loop tile (the depth of the local-memory tiles)
    MDIMC=Pow2(4, 32, where=lambda MWG, MDIMC: MWG % MDIMC == 0, default=16),  # work-items along M
    NDIMC=Pow2(4, 32, where=lambda NWG, NDIMC: NWG % NDIMC == 0, default=16),  # work-items along N
    VWM=Set(1, 2, 4, 8, where=lambda MWG, MDIMC, VWM: MWG % (MDIMC * VWM) == 0, default=1),
    VWN=Set(1, 2, 4, 8, where=lambda NWG, NDIMC, VWN: NWG % (NDIMC * VWN) == 0, default=1),
    KWI=Set(1, 2, 4, 8, where=lambda KWG, KWI: KWG % KWI == 0, default=1),  # K unroll
    SA=Bool(default=False),  # stage A in local memory
    SB=Bool(default=False),  # stage B in local memory
    STRM=Bool(default=True),  # strided (True) or contiguous rows per work-item
    STRN=Bool(default=True),  # strided (True) or contiguous columns per work-item
    geometry=GEOMETRY,
)
# The unrolled inner block (register tile x K unroll) stays within 512 multiply-adds: beyond that the
# accumulators spill and PoCL's build of a single variant takes several seconds.
@constraint(lambda MWG, MDIMC, NWG, NDIMC, KWI: (MWG // MDIMC) * (NWG // NDIMC) * KWI <= 512)
def test_gemm(autotune, cl_queue):
    problem = make_problem()
    ctx = cl_queue.context
    gemm = autotune.build(ctx, KERNEL)
    mf = cl.mem_flags
    a_t = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["AT"])
    b = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["B"])
    c = cl.Buffer(ctx, mf.WRITE_ONLY, M * N * 4)
    global_size, local_size = autotune.launch  # (N // NWG * NDIMC, M // MWG * MDIMC), (NDIMC, MDIMC)
    sizes = np.int32(M), np.int32(N), np.int32(K)
    autotune.measure(lambda: gemm(cl_queue, global_size, local_size, *sizes, a_t, b, c))
    result = np.empty((M, N), dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, c)
    assert np.all(np.abs(result - problem["reference"]) <= problem["bound"])
