"""pyATF's result-check example (``examples/feature_demonstration/result_check``), ported: a sum
of 256,000 floats into one value with a float atomic add built on ``atomic_cmpxchg``.

Each work-item adds WPT elements (strided by the global size) to the result, in work-groups of LS.
The kernel file ``pyatf_atomic_sum.cl`` is the example's kernel string, unchanged (MIT; source,
commit and changes: ``README.md`` in this folder). The parameters are pyATF's, with its interval
ranges and divisibility constraints: WPT divides N, LS divides N / WPT. pyATF declares no default;
here it is one element per work-item in work-groups of 64.

What the port changes, and what today's API made it write by hand:

* N is 256,000 (pyATF: 1,000, a sum that takes 15 us here, too short to time against the noise);
  it keeps the factors 2 and 5 of pyATF's N, so that work-group sizes such as 125 or 1000 occur.
* The global size N / WPT is computed by hand (pyATF: ``global_size(lambda WPT, LS: N / WPT)``).
* LS ranges up to N, as in pyATF: the 50 of the 780 configurations whose LS exceeds PoCL's limit of
  4096 work-items fail at launch, a trial each, because the space cannot be declared against the
  device's limit.
* pyATF checks the sum of random floats with an absolute tolerance of 0.001 that float32 rounding
  alone can exceed at this size; here the data are small integers, so the sum is exact (see
  :func:`make_problem`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyopencl as cl

from pytest_autotune import Interval, tunable

SOURCE = (Path(__file__).parent / "pyatf_atomic_sum.cl").read_text()
N = 256_000  # = 2^11 * 5^3 (pyATF: 1000 = 2^3 * 5^3)


@functools.cache
def make_problem() -> dict[str, object]:
    """Integers 1..7 as floats, and their exact sum.

    Every partial sum stays below 7 * N < 2^24, so each atomic addition is exact in float32 in
    whatever order the work-items get there: the result must equal the integer sum exactly, and a
    lost or repeated element (each >= 1) always shows.
    """
    rng = np.random.default_rng(5)
    values = rng.integers(1, 8, size=N)
    return {"x": values.astype(np.float32), "sum": int(values.sum())}


@tunable(
    WPT=Interval(1, N, where=lambda WPT: N % WPT == 0, default=1),
    LS=Interval(1, N, where=lambda WPT, LS: (N // WPT) % LS == 0, default=64),
    # All additions go to one address: while the device's two threads both run them, each waits for
    # the other (the default's calls took 3.6 ms, or 11-14 ms, in one process on a loaded 2-vCPU
    # VM), so its time depends on how the OS schedules those threads.
    tolerance="30%",
)
def test_pyatf_atomic_sum(autotune, cl_queue):
    problem = make_problem()
    cfg = autotune.config
    ctx = cl_queue.context
    # Only WPT is in the source: building with LS too would compile the same program once per LS.
    total = autotune.build(ctx, SOURCE, defines={"WPT": cfg["WPT"]})
    mf = cl.mem_flags
    x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["x"])
    y = cl.Buffer(ctx, mf.READ_WRITE, 4)

    def run() -> cl.Event:
        cl.enqueue_fill_buffer(cl_queue, y, np.float32(0), 0, 4)  # the kernel adds to y: reset it
        return total(cl_queue, (N // cfg["WPT"],), (cfg["LS"],), np.int32(N), x, y)  # timed: the kernel

    autotune.measure(run)
    result = np.empty(1, dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, y)
    assert float(result[0]) == problem["sum"]
