import numpy as np
import pyopencl as cl

from pytest_autotune import Pow2, Set, tunable

N = 1 << 22
SOURCE = """
__kernel void scale(__global const float* x, __global float* y, const float a) {
    const int first = get_global_id(0) * WPT;     // WPT comes from the configuration
    for (int i = 0; i < WPT; ++i)
        y[first + i] = a * x[first + i];
}
"""


@tunable(
    WPT=Set(1, 2, 4, 8, 16, default=1),  # elements per work-item
    LS=Pow2(16, 256, default=64),  # work-group size
)
def test_scale(autotune, cl_queue):
    ctx = cl_queue.context
    cfg = autotune.config  # e.g. {"WPT": 4, "LS": 128}
    program = autotune.build(ctx, SOURCE)  # "#define WPT 4" ... written above the source
    x = np.random.default_rng(0).random(N, dtype=np.float32)
    x_buf = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, x.nbytes)
    global_size, local_size = (N // cfg["WPT"],), (cfg["LS"],)
    # measure() times the calls; a kernel launch returns an OpenCL event, so device time is used
    autotune.measure(lambda: program(cl_queue, global_size, local_size, x_buf, y_buf, np.float32(2)))
    y = np.empty_like(x)
    cl.enqueue_copy(cl_queue, y, y_buf)
    assert np.allclose(y, 2 * x)  # a wrong result marks the configuration infeasible
