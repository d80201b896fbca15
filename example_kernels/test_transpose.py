"""Tunable matrix transpose (2048 x 2048 floats).

The default is the direct kernel (16 x 16 tiles, 256 work-items each, reading rows and writing
columns, no local memory). Padded 512 x 512 tiles in local memory exceed the device's local memory
(1 MiB here), and work-groups can exceed its maximum size: the geometry declares both, so tuning
leaves those configurations out on each device.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyopencl as cl

from pytest_autotune import Bool, Geometry, Pow2, Set, tunable

KERNEL = Path(__file__).parent / "transpose.cl"  # a path: build errors name this file and its lines
N = 2048
# One-dimensional work-groups of TILE_X * ROWS work-items (see transpose.cl), one per TILE_Y x TILE_X
# tile; with LOCAL the tile, padded by PAD columns, is staged in local memory.
GEOMETRY = Geometry(
    problem_size=(N, N),
    local_size=lambda p: (p["TILE_X"] * p["ROWS"], 1),
    grid_div_x=["TILE_X"],
    grid_div_y=["TILE_Y"],
    local_memory=lambda p: 4 * p["TILE_Y"] * (p["TILE_X"] + p["PAD"]) if p["LOCAL"] else 0,
)


@functools.cache
def make_input() -> np.ndarray:
    """A matrix whose every element is distinct, so any misplaced element is detected."""
    return np.arange(N * N, dtype=np.float32).reshape(N, N)


@tunable(
    TILE_X=Pow2(4, 512, default=16),  # tile width (input columns)
    TILE_Y=Pow2(4, 512, default=16),  # tile height (input rows)
    ROWS=Pow2(1, 64, where=lambda TILE_Y, ROWS: TILE_Y % ROWS == 0, default=16),  # work-items per tile column
    LOCAL=Bool(default=False),  # stage the tile in local memory
    PAD=Set(0, 1, where=lambda LOCAL, PAD: LOCAL or PAD == 0, default=0),  # local-memory padding
    geometry=GEOMETRY,
)
def test_transpose(autotune, cl_queue):
    matrix = make_input()
    ctx = cl_queue.context
    transpose = autotune.build(ctx, KERNEL)
    mf = cl.mem_flags
    source = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=matrix)
    target = cl.Buffer(ctx, mf.WRITE_ONLY, N * N * 4)
    global_size, local_size = (
        autotune.launch
    )  # (N // TILE_X * TILE_X * ROWS, N // TILE_Y), (TILE_X * ROWS, 1)
    autotune.measure(lambda: transpose(cl_queue, global_size, local_size, source, target, np.int32(N)))
    result = np.empty((N, N), dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, target)
    # Pure data movement of distinct values (all below 2^24, so exact in float32): must be exact.
    np.testing.assert_array_equal(result, matrix.T)
