import numpy as np
import pyopencl as cl
import pytest

M = N = 2048  # y = A @ x with A of M x N floats

SOURCE = """
#define ROWS 1
#define UNROLL 1
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


@pytest.fixture(scope="module")
def queue():
    return cl.CommandQueue(cl.create_some_context(interactive=False))


def test_matvec(queue):
    rng = np.random.default_rng(0)
    a = rng.random((M, N), dtype=np.float32)
    x = rng.random(N, dtype=np.float32)
    ctx = queue.context
    mf = cl.mem_flags
    a_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
    x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, mf.WRITE_ONLY, M * 4)

    program = cl.Program(ctx, SOURCE).build()
    program.matvec(queue, (M,), (64,), a_buf, x_buf, y_buf, np.int32(N))

    y = np.empty(M, dtype=np.float32)
    cl.enqueue_copy(queue, y, y_buf)
    np.testing.assert_allclose(y, a @ x, rtol=1e-4)
