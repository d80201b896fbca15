"""Tunable matrix transpose (2048 x 2048 floats).

The default is the direct kernel (16 x 16 tiles, 256 work-items each, reading rows and writing
columns, no local memory). Padded 512 x 512 tiles in local memory exceed the device's local memory
(1 MiB here) and work-groups beyond its maximum size fail at launch: both are left to the tuner as
hidden constraints.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyopencl as cl

from pytest_autotune import Bool, Pow2, Set, tunable

SOURCE = (Path(__file__).parent / "transpose.cl").read_text()
N = 2048


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
)
def test_transpose(autotune, cl_queue):
    matrix = make_input()
    cfg = autotune.config
    ctx = cl_queue.context
    transpose = autotune.build(ctx, SOURCE, defines=cfg)
    mf = cl.mem_flags
    source = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=matrix)
    target = cl.Buffer(ctx, mf.WRITE_ONLY, N * N * 4)
    group = cfg["TILE_X"] * cfg["ROWS"]  # one-dimensional work-groups (see transpose.cl)
    global_size = (N // cfg["TILE_X"] * group, N // cfg["TILE_Y"])
    local_size = (group, 1)
    autotune.measure(lambda: transpose(cl_queue, global_size, local_size, source, target, np.int32(N)))
    result = np.empty((N, N), dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, target)
    # Pure data movement of distinct values (all below 2^24, so exact in float32): must be exact.
    np.testing.assert_array_equal(result, matrix.T)
