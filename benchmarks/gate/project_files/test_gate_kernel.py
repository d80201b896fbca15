"""The kernel test the regression-gate benchmark runs in fresh pytest processes.

``GATE_WORK`` sets the multiply-adds per element (the benchmark raises it to inject a slowdown of
known size); the tunable parameters are the work-group size and the vector width.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyopencl as cl

from pytest_autotune import Pow2, Set, tunable

SOURCE = (Path(__file__).parent / "gate.cl").read_text()
N = 1 << 13
A, B = np.float32(0.5), np.float32(0.25)  # v -> a v + b converges to b / (1 - a) = 0.5


@tunable(
    LS=Pow2(1, 256, default=64),
    VW=Set(1, 2, 4, 8, default=1),
    budget=12,
    strategy="random",
)
def test_gate_kernel(autotune, cl_queue):
    cfg = autotune.config
    ctx = cl_queue.context
    work = int(os.environ.get("GATE_WORK", "400"))
    kernel = autotune.build(ctx, SOURCE, defines={**cfg, "WORK": work})
    mf = cl.mem_flags
    x = np.linspace(-1, 1, N, dtype=np.float32)
    x_buf = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    y_buf = cl.Buffer(ctx, mf.WRITE_ONLY, N * 4)
    items = N // cfg["VW"]
    autotune.measure(lambda: kernel(cl_queue, (items,), (min(cfg["LS"], items),), x_buf, y_buf, A, B))
    y = np.empty(N, dtype=np.float32)
    cl.enqueue_copy(cl_queue, y, y_buf)
    assert np.allclose(y, 2 * B / (1 - A), atol=1e-4)  # both chains reach the fixed point
