"""CLTune's multiple-kernels sample (``samples/multiple_kernels``), ported: y = A x, A 1024 x 2048.

Two candidate kernels compute the same matrix-vector product (A stored transposed): one whose loop
over A's 2048 columns is unrolled by UNROLL in 128-work-item groups, and one that stages tiles of x
of TS floats in local memory, with TS work-items per group. The kernel files are CLTune's,
unchanged (Apache-2.0; source, commit and changes: ``README.md`` in this folder). The default is
CLTune's reference kernel: the first one, not unrolled.

CLTune tunes each kernel separately and compares them; here the kernel is a parameter, KERNEL, and
the two kernels' own parameters are pinned where they do not apply (UNROLL to 1 for the tiled
kernel, TS to the unrolled kernel's fixed 128), so that no configuration is tried twice: today's
API has no conditional parameters. The launch sizes are written by hand from CLTune's ``AddKernel``
and ``MulLocalSize`` calls.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyopencl as cl

from pytest_autotune import Categorical, Set, tunable

HERE = Path(__file__).parent
SOURCES = {name: (HERE / f"cltune_matvec_{name}.cl").read_text() for name in ("unroll", "tiled")}
SIZE_M, SIZE_N = 1024, 2048  # y has SIZE_M elements, x SIZE_N (CLTune: 2048 and 4096)


@functools.cache
def make_problem() -> dict[str, np.ndarray]:
    """A (stored transposed: SIZE_N x SIZE_M), x and the exact y.

    Entries are integers in {-3, ..., 3} without 0: every partial sum is an integer of magnitude at
    most 9 * 2048 < 2^24, exact in float32 in any order, so y must equal the integer product
    exactly; a lost, repeated or misplaced term changes it by at least 1.
    """
    rng = np.random.default_rng(11)
    values = np.array([-3, -2, -1, 1, 2, 3])
    a_t = rng.choice(values, size=(SIZE_N, SIZE_M))
    x = rng.choice(values, size=SIZE_N)
    return {
        "A_T": a_t.astype(np.float32),
        "x": x.astype(np.float32),
        "reference": (a_t.T @ x).astype(np.float32),
    }


@tunable(
    KERNEL=Categorical("unroll", "tiled", default="unroll"),
    UNROLL=Set(1, 2, 4, where=lambda KERNEL, UNROLL: KERNEL == "unroll" or UNROLL == 1, default=1),
    TS=Set(32, 64, 128, 256, 512, where=lambda KERNEL, TS: KERNEL == "tiled" or TS == 128, default=128),
    # Memory-bound (8 MiB of A per call), like the saxpy and reduction examples: on a loaded 2-vCPU
    # VM the tuned configuration's median was 1.51-1.87 ms in five processes.
    tolerance="30%",
)
def test_cltune_multiple_kernels(autotune, cl_queue):
    problem = make_problem()
    cfg = autotune.config
    ctx = cl_queue.context
    kernel = cfg["KERNEL"]
    # Each kernel gets only its own parameter, as in CLTune.
    defines = {"UNROLL": cfg["UNROLL"]} if kernel == "unroll" else {"TS": cfg["TS"]}
    program = autotune.build(ctx, SOURCES[kernel], defines=defines)
    matvec = getattr(program, f"matvec_{kernel}")
    mf = cl.mem_flags
    a_t = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["A_T"])
    x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["x"])
    y = cl.Buffer(ctx, mf.READ_WRITE, SIZE_M * 4)
    cl.enqueue_fill_buffer(cl_queue, y, np.float32(np.nan), 0, SIZE_M * 4)  # no stale result
    # By hand, from CLTune: global size SIZE_M for both; local size 128 (unroll) or 1 x TS (tiled).
    local_size = (128,) if kernel == "unroll" else (cfg["TS"],)
    sizes = np.int32(SIZE_M), np.int32(SIZE_N)
    autotune.measure(lambda: matvec(cl_queue, (SIZE_M,), local_size, *sizes, a_t, x, y))
    result = np.empty(SIZE_M, dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, y)
    assert np.array_equal(result, problem["reference"])
