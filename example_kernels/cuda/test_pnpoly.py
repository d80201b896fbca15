"""Tunable point-in-polygon (crossing number) over 2^22 points and a 600-vertex polygon, in CUDA.

A port of Kernel Tuner's CUDA example "pnpoly" (README.md beside this file: provenance, licence,
differences): its tuning parameters and values, its input (normally distributed points around a
polygon inscribed in the unit circle), a kernel written anew. Checked against a float32 numpy
crossing number on a sample of points; a point within rounding of an edge may come out either
way, so a few disagreements in ten thousand are allowed. Skipped without a CUDA GPU.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from pytest_autotune import Geometry, Set, tunable

SOURCE = (Path(__file__).parent / "pnpoly.cu").read_text()
POINTS = int(os.environ.get("AUTOTUNE_CUDA_PNPOLY_POINTS", str(1 << 22)))
VERTICES = 600
SAMPLE = 10_000


@functools.cache
def make_problem() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    points = rng.standard_normal((POINTS, 2)).astype(np.float32)
    angles = np.sort(rng.random(VERTICES) * 2 * np.pi)[::-1]
    vertices = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(np.float32)
    previous = np.roll(vertices, 1, axis=0)  # vertex k = j - 1 of edge j
    with np.errstate(divide="ignore"):
        slopes = ((previous[:, 0] - vertices[:, 0]) / (previous[:, 1] - vertices[:, 1])).astype(np.float32)
    sample = rng.choice(POINTS, size=min(SAMPLE, POINTS), replace=False)
    return {"points": points, "vertices": vertices, "slopes": slopes, "sample": sample}


def crossing_number(points: np.ndarray, vertices: np.ndarray) -> np.ndarray:
    """1 where a point is inside the polygon (float32 arithmetic, as the kernel's method 0)."""
    x, y = points[:, 0:1], points[:, 1:2]
    vj, vk = vertices, np.roll(vertices, 1, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (vk[:, 0] - vj[:, 0]) / (vk[:, 1] - vj[:, 1])
        crosses = ((vj[:, 1] > y) != (vk[:, 1] > y)) & (x < slope * (y - vj[:, 1]) + vj[:, 0])
    return (np.count_nonzero(crosses, axis=1) & 1).astype(np.int32)


@tunable(
    block_size_x=Set(*range(32, 1024, 32), default=256),
    tile_size=Set(1, *range(2, 22, 2), default=1),
    between_method=Set(0, 1, 2, 3, default=0),
    use_precomputed_slopes=Set(0, 1, default=0),
    use_method=Set(0, 1, default=0),
    geometry=Geometry(problem_size=POINTS, grid_div_x=["block_size_x", "tile_size"]),
)
def test_pnpoly(autotune, cuda_device):
    problem = make_problem()
    defines = {**autotune.config, "VERTICES": VERTICES}
    module = autotune.build(cuda_device, SOURCE, defines=defines)
    points = cuda_device.to_device(problem["points"])
    vertices = cuda_device.to_device(problem["vertices"])
    slopes = cuda_device.to_device(problem["slopes"])
    inside = cuda_device.empty(POINTS, np.int32)
    autotune.measure(
        lambda: module.pnpoly(autotune.launch, inside, points, vertices, slopes, np.int32(POINTS))
    )
    sample = problem["sample"]
    expected = crossing_number(problem["points"][sample], problem["vertices"])
    disagree = np.count_nonzero(inside.get()[sample] != expected)
    assert disagree <= 5, f"{disagree} of {sample.size} sampled points disagree with numpy"
    autotune.metric("Gpoints/s", lambda seconds: POINTS / seconds / 1e9)
