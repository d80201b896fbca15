"""Tunable 2D convolution (1024 x 1024 output, 7 x 7 filter, float32), after Kernel Tuner's example.

The default is the direct kernel: one output per work-item in 16 x 16 work-groups, input and filter
read from global memory. Large work-groups with several outputs per work-item need more local
memory for the input tile than the device has, or more work-items than its maximum: the geometry
declares both, so tuning leaves those configurations out on each device.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyopencl as cl
from numpy.lib.stride_tricks import sliding_window_view

from pytest_autotune import Bool, Geometry, Pow2, Set, tunable

KERNEL = Path(__file__).parent / "conv2d.cl"  # a path: build errors name this file and its lines
WIDTH = HEIGHT = 1024
F = 7  # filter size
EPS32 = 2.0**-24  # unit roundoff of float32
# BX x BY work-groups, each work-item computing TX x TY outputs; with LOCAL the work-group stages its
# input tile and halo, (BY*TY + F-1) x (BX*TX + F-1) floats, in local memory.
GEOMETRY = Geometry(
    problem_size=(WIDTH, HEIGHT),
    block_size_names=["BX", "BY"],
    grid_div_x=["BX", "TX"],
    grid_div_y=["BY", "TY"],
    local_memory=lambda p: 4 * (p["BY"] * p["TY"] + F - 1) * (p["BX"] * p["TX"] + F - 1) if p["LOCAL"] else 0,
)


def correlate(image: np.ndarray, filt: np.ndarray) -> np.ndarray:
    """The "valid" cross-correlation of ``image`` with ``filt`` (what the kernel computes)."""
    return np.einsum("yxij,ij->yx", sliding_window_view(image, filt.shape), filt)


@functools.cache
def make_problem() -> dict[str, np.ndarray]:
    """Input image (with halo), filter, float64 reference and error bound."""
    rng = np.random.default_rng(4)
    image = rng.standard_normal((HEIGHT + F - 1, WIDTH + F - 1), dtype=np.float32)
    filt = rng.standard_normal((F, F), dtype=np.float32)
    image64, filt64 = image.astype(np.float64), filt.astype(np.float64)
    terms = F * F
    return {
        "image": image,
        "filter": filt,
        "reference": correlate(image64, filt64),
        # Each output is a float32 dot product of F*F terms: within gamma_{F^2} * (|image| * |filter|)
        # of the exact value, whatever the order and use of fused multiply-adds (Higham, eq. 3.5).
        "bound": (terms * EPS32 / (1 - terms * EPS32)) * correlate(np.abs(image64), np.abs(filt64)),
    }


@tunable(
    BX=Pow2(1, 256, default=16),  # work-group width
    BY=Pow2(1, 64, default=16),  # work-group height
    TX=Set(1, 2, 4, 8, where=lambda BX, TX: WIDTH % (BX * TX) == 0, default=1),  # outputs per item, x
    TY=Set(1, 2, 4, 8, where=lambda BY, TY: HEIGHT % (BY * TY) == 0, default=1),  # outputs per item, y
    LOCAL=Bool(default=False),  # stage the input tile (with halo) in local memory
    CONST_FILTER=Bool(default=False),  # filter in __constant memory
    geometry=GEOMETRY,
)
def test_conv2d(autotune, cl_queue):
    problem = make_problem()
    ctx = cl_queue.context
    conv = autotune.build(ctx, KERNEL, defines={**autotune.config, "F": F})
    mf = cl.mem_flags
    image = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["image"])
    filt = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["filter"])
    out = cl.Buffer(ctx, mf.WRITE_ONLY, WIDTH * HEIGHT * 4)
    global_size, local_size = autotune.launch  # (WIDTH // TX, HEIGHT // TY), (BX, BY)
    sizes = np.int32(WIDTH), np.int32(HEIGHT)
    autotune.measure(lambda: conv(cl_queue, global_size, local_size, image, filt, out, *sizes))
    result = np.empty((HEIGHT, WIDTH), dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, out)
    assert np.all(np.abs(result - problem["reference"]) <= problem["bound"])
