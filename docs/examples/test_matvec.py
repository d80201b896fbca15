import functools

import numpy as np
import pyopencl as cl

from pytest_autotune import Geometry, Pow2, Set, tunable

M = N = 2048  # y = A @ x with A of M x N floats

SOURCE = """
__kernel void matvec(__global const float* A, __global const float* x, __global float* y, const int n)
{
    const int first = get_global_id(0) * ROWS;        // ROWS rows per work-item
    for (int r = first; r < first + ROWS; ++r) {
        float sum = 0.0f;
        for (int c = 0; c < n; c += UNROLL)           // UNROLL columns per step
            for (int u = 0; u < UNROLL; ++u)
                sum += A[r * n + c + u] * x[c + u];
        y[r] = sum;
    }
}
"""

# Kernel Tuner's launch rule: M rows, work-groups of block_size_x work-items, each doing ROWS rows
GEOMETRY = Geometry(problem_size=M, grid_div_x=["block_size_x", "ROWS"])


@functools.cache
def problem():
    """The inputs and the expected result, computed once per process."""
    rng = np.random.default_rng(0)
    a = rng.random((M, N), dtype=np.float32)
    x = rng.random(N, dtype=np.float32)
    return a, x, a @ x


@tunable(
    block_size_x=Pow2(16, 256, default=64),  # work-group size
    ROWS=Set(1, 2, 4, 8, default=1),  # rows per work-item
    UNROLL=Set(1, 2, 4, 8, 16, default=1),  # columns per inner step
    restrictions=[
        f"{N} % UNROLL == 0",  # the kernel has no remainder loop
        f"{M} // (block_size_x * ROWS) >= 8",  # at least 8 work-groups, to keep every core busy
    ],
    geometry=GEOMETRY,
    budget=30,  # 30 of the 70 configurations
)
def test_matvec(autotune, cl_queue):
    a, x, expected = problem()
    ctx = cl_queue.context
    mf = cl.mem_flags
    a_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, mf.WRITE_ONLY, M * 4)

    matvec = autotune.build(ctx, SOURCE)  # "#define ROWS 4" ... above the source
    global_size, local_size = autotune.launch  # from GEOMETRY and the configuration
    autotune.measure(lambda: matvec(cl_queue, global_size, local_size, a_buf, x_buf, y_buf, np.int32(N)))
    autotune.metric("GB/s", lambda seconds: a.nbytes / seconds / 1e9)  # A is read once per call

    y = np.empty(M, dtype=np.float32)
    cl.enqueue_copy(cl_queue, y, y_buf)
    np.testing.assert_allclose(y, expected, rtol=1e-4)
