"""CLTune's 2D convolution sample (``samples/conv``), ported: a 7 x 7 filter over a 512 x 512 image.

The kernel file ``cltune_conv.cl`` is CLTune's ``conv.opencl``, unchanged (Apache-2.0; source,
commit and changes: ``README.md`` in this folder). Its parameters, as CLTune's ``conv.cc`` declares
them: TBX x TBY work-items per work-group, WPTX x WPTY outputs per work-item, LOCAL (0: read the
input from global memory; 1: stage the work-group's tile and its halo in local memory, the halo
loaded by the tile's own work-items; 2: stage it with extra work-items that only load the halo),
VECTOR (width of the stores), UNROLL_FACTOR (of the filter loops) and PADDING (one extra float per
local-memory row). The default is the shape of CLTune's reference kernel: 8 x 8 work-groups, one
output per work-item, input from global memory.

What the port changes, and what today's API made it write by hand:

* CLTune's helper parameters TBX_XL/TBY_XL (the work-group size including the halo work-items of
  LOCAL == 2, tied to TBX/WPTX by a constraint) are not parameters here: :func:`group_extent`
  derives them and the test passes them as extra defines.
* The launch geometry is computed by hand from CLTune's ``MulLocalSize``/``MulGlobalSize``/
  ``DivGlobalSize`` calls (see the test body).
* CLTune prunes configurations beyond the device's work-group size and local memory (its
  ``SetLocalMemoryUsage``) before tuning. Nothing here can: on PoCL (at most 4096 work-items per
  group) the 88 of the 4000 configurations with LOCAL == 2 and 64 x 64 work-groups need 70 x 70
  work-items and fail at launch, a trial each (on a GPU allowing 1024, 1014 configurations would).
* CLTune's constraint ``WPTX * WPTY < 32``, commented out in ``conv.cc``, is enabled: PoCL takes
  25-30 s to compile one 8 x 8-outputs variant, 5 s at most under the constraint.
* The data are small integers (CLTune: random floats and a Gaussian filter), so that every sum is
  exact and the result is compared exactly (see :func:`make_problem`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pyopencl as cl
from numpy.lib.stride_tricks import sliding_window_view

from pytest_autotune import Set, tunable

SOURCE = (Path(__file__).parent / "cltune_conv.cl").read_text()
HFS = int(re.search(r"#define HFS \((\d+)\)", SOURCE).group(1))  # half filter size, fixed in the kernel
FS = 2 * HFS + 1  # filter size
SIZE_X = SIZE_Y = 512  # output size (CLTune: 8192 x 4096); the input has a halo of HFS on each side


def group_extent(tb: int, wpt: int, local: int) -> int:
    """Work-items along one dimension of a work-group: CLTune's TBX_XL (TBY_XL) for TBX (TBY).

    With LOCAL == 2 the group has ceil(2 * HFS / WPT) extra work-items that only load the halo.
    """
    return tb + -(-2 * HFS // wpt) if local == 2 else tb


@functools.cache
def make_problem() -> dict[str, np.ndarray]:
    """Padded input, filter and the exact result.

    Inputs are integers in [-8, 8] and filter weights integers in [1, 8]: every partial sum of an
    output is an integer of magnitude at most 49 * 64 < 2^24, exact in float32 whatever the order
    of the additions or the use of fused multiply-adds. So the kernel's result must equal the
    integer reference exactly; a misplaced read (a weight >= 1 times a wrong input) shows.
    CLTune's Gaussian weights fall to 1e-6 in the corners, where a float tolerance would hide it.
    """
    rng = np.random.default_rng(7)
    image = rng.integers(-8, 9, size=(SIZE_Y + 2 * HFS, SIZE_X + 2 * HFS))
    coeff = rng.integers(1, 9, size=(FS, FS))
    reference = np.einsum("yxij,ij->yx", sliding_window_view(image, (FS, FS)), coeff)
    return {
        "image": image.astype(np.float32),
        "coeff": coeff.astype(np.float32),
        "reference": reference.astype(np.float32),
    }


@tunable(
    # CLTune's values; its lambdas over positional lists become where= lambdas over names.
    TBX=Set(8, 16, 32, 64, default=8),
    TBY=Set(8, 16, 32, 64, default=8),
    LOCAL=Set(0, 1, 2, default=0),
    WPTX=Set(1, 2, 4, 8, default=1),
    WPTY=Set(1, 2, 4, 8, where=lambda WPTX, WPTY: WPTX * WPTY < 32, default=1),
    VECTOR=Set(
        1,
        2,
        4,
        where=lambda LOCAL, WPTX, VECTOR: WPTX % VECTOR == 0 and (LOCAL != 2 or (2 * HFS) % VECTOR == 0),
        default=1,
    ),
    UNROLL_FACTOR=Set(1, FS, default=1),
    PADDING=Set(0, 1, where=lambda LOCAL, PADDING: PADDING == 0 or LOCAL != 0, default=0),
)
def test_cltune_conv(autotune, cl_queue):
    problem = make_problem()
    cfg = autotune.config
    ctx = cl_queue.context
    tbx_xl = group_extent(cfg["TBX"], cfg["WPTX"], cfg["LOCAL"])
    tby_xl = group_extent(cfg["TBY"], cfg["WPTY"], cfg["LOCAL"])
    conv = autotune.build(ctx, SOURCE, defines={**cfg, "TBX_XL": tbx_xl, "TBY_XL": tby_xl})
    mf = cl.mem_flags
    src = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["image"])
    coeff = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=problem["coeff"])
    dest = cl.Buffer(ctx, mf.READ_WRITE, SIZE_X * SIZE_Y * 4)
    cl.enqueue_fill_buffer(cl_queue, dest, np.float32(np.nan), 0, SIZE_X * SIZE_Y * 4)  # no stale result
    # By hand, as CLTune's conv.cc declares it: base global size (SIZE_X, SIZE_Y) and local size
    # (1, 1); both multiplied by (TBX_XL, TBY_XL); the global one divided by (TBX, TBY) and (WPTX, WPTY).
    global_size = (
        SIZE_X * tbx_xl // cfg["TBX"] // cfg["WPTX"],
        SIZE_Y * tby_xl // cfg["TBY"] // cfg["WPTY"],
    )
    local_size = (tbx_xl, tby_xl)
    sizes = np.int32(SIZE_X), np.int32(SIZE_Y)
    autotune.measure(lambda: conv(cl_queue, global_size, local_size, *sizes, src, coeff, dest))
    result = np.empty((SIZE_Y, SIZE_X), dtype=np.float32)
    cl.enqueue_copy(cl_queue, result, dest)
    assert np.array_equal(result, problem["reference"])
