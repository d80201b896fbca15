"""A numpy CPU kernel for ``benchmarks/gate/bench.py``: a blocked 3-point stencil on the host.

``y[i] = (x[i-1] + 2 x[i] + x[i+1]) / 4`` over 2^23 floats (32 MiB in, 32 MiB out: memory-bound),
computed block by block. ``BLOCK`` trades Python overhead per block (small blocks) against
temporaries that fall out of cache (large blocks); ``FUSED`` writes through ``out=`` buffers
instead of allocating temporaries. No backend fixture, so the plugin keys it by the host CPU
and times it by the wall clock. The benchmark injects a slowdown by computing
``gate_slowdown.extra_blocks`` blocks once more, into a scratch array.
"""

from __future__ import annotations

import functools

import gate_slowdown
import numpy as np

from pytest_autotune import Bool, Pow2, tunable

N = 1 << 23


@functools.cache
def make_problem() -> dict[str, np.ndarray]:
    """Input and the float64 reference of the interior."""
    x = np.random.default_rng(5).standard_normal(N).astype(np.float32)
    wide = x.astype(np.float64)
    return {"x": x, "reference": (wide[:-2] + 2 * wide[1:-1] + wide[2:]) / 4}


def stencil_block(x: np.ndarray, y: np.ndarray, start: int, stop: int, fused: bool, tmp: np.ndarray) -> None:
    """``y[start:stop]`` of the stencil (``1 <= start < stop <= N - 1``)."""
    if not fused:
        y[start:stop] = (x[start - 1 : stop - 1] + 2 * x[start:stop] + x[start + 1 : stop + 1]) * 0.25
        return
    out, part = y[start:stop], tmp[: stop - start]
    np.add(x[start - 1 : stop - 1], x[start + 1 : stop + 1], out=out)
    np.multiply(x[start:stop], 2, out=part)
    np.add(out, part, out=out)
    np.multiply(out, 0.25, out=out)


@tunable(BLOCK=Pow2(1 << 10, 1 << 22, default=1 << 12), FUSED=Bool(default=False))
def test_gate_numpy(autotune):
    problem = make_problem()
    x, block, fused = problem["x"], autotune.config["BLOCK"], autotune.config["FUSED"]
    y, scratch = np.zeros_like(x), np.zeros_like(x)
    tmp = np.empty(block, dtype=np.float32)
    starts = range(1, N - 1, block)
    extra = gate_slowdown.extra_blocks(len(starts))

    def run() -> None:
        for start in starts:
            stencil_block(x, y, start, min(start + block, N - 1), fused, tmp)
        for start in starts[:extra]:
            stencil_block(x, scratch, start, min(start + block, N - 1), fused, tmp)

    autotune.measure(run)
    assert np.allclose(y[1:-1], problem["reference"], rtol=1e-5, atol=1e-6)
