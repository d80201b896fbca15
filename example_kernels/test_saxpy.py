"""Tunable SAXPY (z = a * x + y over 2^24 floats): pyATF's introductory example, as a pytest test.

The default is the textbook kernel: one element per work-item in work-groups of 64.

The three arrays (192 MiB) are far larger than the CPU's last-level cache, so every call streams
them from memory, as SAXPY does in real code. At 2^22 floats (48 MiB, about a 32 MiB L3's worth)
a configuration's time had two modes, 0.67 ms and 1.0 ms, and which one a process got depended on
how its pages fell in the cache: a plain ``pytest`` run after tuning then reported a 40 %
regression of unchanged code about one run in five.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyopencl as cl

from pytest_autotune import Bool, Geometry, Interval, Pow2, Set, tunable

KERNEL = Path(__file__).parent / "saxpy.cl"  # a path: build errors name this file and its lines
N = 1 << 24
A = np.float32(2.5)
EPS32 = 2.0**-24  # unit roundoff of float32
# Kernel Tuner's launch semantics: N elements, work-groups of LS work-items, each doing WPT of them.
GEOMETRY = Geometry(problem_size=N, block_size_names=["LS"], grid_div_x=["WPT", "LS"])


@functools.cache
def make_problem() -> dict[str, np.ndarray]:
    """Inputs, the float64 reference and the error bound."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal(N, dtype=np.float32)
    y = rng.standard_normal(N, dtype=np.float32)
    ax = np.float64(A) * x.astype(np.float64)
    return {
        "x": x,
        "y": y,
        "reference": ax + y,
        # A separate multiply and add round twice, a fused multiply-add once: either way the float32
        # result is within 2u (|a x| + |y|) of the exact value (u = 2^-24); a wrong element is not.
        "bound": 2 * EPS32 * (np.abs(ax) + np.abs(y)),
    }


@tunable(
    WPT=Interval(1, 64, where=lambda WPT: N % WPT == 0, default=1),  # elements per work-item
    # Work-group size: values above the device's maximum (4096 here) are left out before tuning
    # (the geometry says LS is the work-group size).
    LS=Pow2(1, 8192, where=lambda WPT, LS: (N // WPT) % LS == 0, default=64),
    VW=Set(1, 2, 4, 8, where=lambda WPT, VW: WPT % VW == 0, default=1),  # vector width
    STRIDED=Bool(default=False),  # GPU-style interleaved (True) or contiguous (False) chunks
    # Memory-bound: on a shared 2-vCPU VM its time moves by up to ~25% between processes (page
    # placement, the host's other tenants in the shared L3), beyond what one process's spread shows;
    # a 30% tolerance keeps the regression gate from failing unchanged code.
    tolerance="30%",
    geometry=GEOMETRY,
)
def test_saxpy(autotune, cl_queue):
    problem = make_problem()
    ctx = cl_queue.context
    saxpy = autotune.build(ctx, KERNEL)  # the configuration as #define lines, cached per configuration
    mf = cl.mem_flags
    x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["x"])
    y = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["y"])
    z = cl.Buffer(ctx, mf.WRITE_ONLY, N * 4)
    global_size, local_size = autotune.launch  # (N // WPT,), (LS,)
    autotune.measure(lambda: saxpy(cl_queue, global_size, local_size, A, x, y, z))
    result = np.empty(N, dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, z)
    assert np.all(np.abs(result - problem["reference"]) <= problem["bound"])
