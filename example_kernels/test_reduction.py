"""Tunable sum reduction of 2^24 floats: per-work-group partial sums on the device, added on the host.

The default is the classic GPU reduction: work-groups of 256, one element per work-item, a
local-memory tree.

The input (64 MiB) is larger than the CPU's last-level cache, so the kernel reads from memory as a
real reduction does. At 2^22 floats (16 MiB) it stayed in a 32 MiB L3 between runs and took 0.3 ms,
and its time then depended more on how the process's pages happened to fall in the cache than on
the configuration: the same configuration took 0.3 ms in one process and 0.6 ms in the next, so
the measured landscape was mostly noise (tuning it, Bayesian optimization did no better than random
search). At 2^24 a configuration's time repeats within a few percent, and a run takes 2 ms or more.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyopencl as cl

from pytest_autotune import Bool, Geometry, Pow2, Set, tunable

KERNEL = Path(__file__).parent / "reduction.cl"  # a path: build errors name this file and its lines
N = 1 << 24
# Work-groups of WG work-items, each summing EPT elements; the tree uses WG floats of local memory.
GEOMETRY = Geometry(
    problem_size=N, block_size_names=["WG"], grid_div_x=["WG", "EPT"], local_memory=lambda p: 4 * p["WG"]
)


@functools.cache
def make_problem() -> dict[str, object]:
    """Small positive integers as floats, and their exact sum."""
    rng = np.random.default_rng(3)
    values = rng.integers(1, 8, size=N)
    # float32 holds integers exactly up to 2^24. A work-group sums WG * EPT <= 2^21 values (the
    # largest WG times the largest EPT) of at most 7, so every partial sum stays below 2^24:
    # each addition is exact in any order, the host adds the partials in int64, and the result
    # must equal the integer sum exactly. A lost or duplicated element (each >= 1) always shows.
    return {"x": values.astype(np.float32), "sum": int(values.sum())}


@tunable(
    # Work-group size: 8192 exceeds the device's maximum (4096 here) and is left out before tuning.
    WG=Pow2(1, 8192, default=256),
    EPT=Pow2(1, 256, where=lambda WG, EPT: (N // 2) % (WG * EPT) == 0, default=1),  # elements per item
    VW=Set(1, 2, 4, 8, where=lambda EPT, VW: EPT % VW == 0, default=1),  # vector width of the loads
    UNROLL=Set(1, 2, 4, 8, where=lambda EPT, VW, UNROLL: (EPT // VW) % UNROLL == 0, default=1),
    STRIDED=Bool(default=True),  # interleaved (GPU-style) or contiguous chunks per work-item
    # Memory-bound: on a shared 2-vCPU VM its time moves by up to ~25% between processes (page
    # placement, the host's other tenants in the shared L3), beyond what one process's spread shows;
    # a 30% tolerance keeps the regression gate from failing unchanged code.
    tolerance="30%",
    geometry=GEOMETRY,
)
def test_reduction(autotune, cl_queue):
    problem = make_problem()
    ctx = cl_queue.context
    reduce = autotune.build(ctx, KERNEL)
    global_size, local_size = autotune.launch  # (groups * WG,), (WG,)
    groups = autotune.launch.grid[0]  # N // (WG * EPT)
    mf = cl.mem_flags
    x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["x"])
    partial = cl.Buffer(ctx, mf.WRITE_ONLY, groups * 4)
    autotune.measure(lambda: reduce(cl_queue, global_size, local_size, x, partial))
    sums = np.empty(groups, dtype=np.float32)
    cl.enqueue_copy(cl_queue, sums, partial)
    assert int(sums.astype(np.int64).sum()) == problem["sum"]
