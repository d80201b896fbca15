"""SAXPY tuned per problem size: one ``autotune.json`` entry per ``N``, found by ``kernel="saxpy"``.

The application (``apps/saxpy_app.py``) imports the same kernel module and launches the stored
configuration of the nearest tuned size: ``python -m example_kernels.apps.saxpy_app 300000``.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from example_kernels.saxpy_sizes import KERNEL, PARAMS, SIZES, A, check, inputs, launch
from pytest_autotune import Geometry, tunable


@pytest.mark.parametrize("N", SIZES)
@tunable(**PARAMS, kernel="saxpy", key=("N",), budget=16, geometry=Geometry(block_size_names=["LS"]))
def test_saxpy_sizes(autotune, cl_queue, N):
    ctx = cl_queue.context
    saxpy = autotune.build(ctx, KERNEL)
    x, y = inputs(N)
    mf = cl.mem_flags
    x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=y)
    z_buf = cl.Buffer(ctx, mf.WRITE_ONLY, N * 4)
    global_size, local_size = launch(N, autotune.config)
    autotune.measure(lambda: saxpy(cl_queue, global_size, local_size, A, x_buf, y_buf, z_buf))
    result = np.empty(N, dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, z_buf)
    check(result, x, y)
