"""SAXPY at several problem sizes: the kernel module that the test and the application both import.

``test_saxpy_sizes.py`` tunes it once per size (``@tunable(..., kernel="saxpy", key=("N",))``, one
entry per ``N`` in ``autotune.json``); ``apps/saxpy_app.py`` launches it for any ``N`` with the
stored configuration of the nearest size (:mod:`pytest_autotune.runtime`). What must be the same in
both places lives here: the source, the parameters, and how a configuration and ``N`` give the
launch sizes (Kernel Tuner's semantics: ``N`` elements, work-groups of ``LS`` work-items, each
doing ``WPT`` of them). The defines are written into the source the same way on both sides:
``autotune.build`` in the test, ``runtime.build`` in the application.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pytest_autotune import Bool, Geometry, Pow2, Set
from pytest_autotune.backends.geometry import LaunchSizes
from pytest_autotune.runtime import launch_sizes

KERNEL = Path(__file__).parent / "saxpy.cl"
#: The sizes the test tunes (the application may ask for any other).
SIZES = (1 << 16, 1 << 18, 1 << 20)
A = np.float32(2.5)
#: The tuned parameters (for any N that is a multiple of 2^12: every WPT * LS divides it).
PARAMS: dict[str, Any] = {
    "WPT": Pow2(1, 16, default=1),
    "LS": Pow2(1, 256, default=64),
    "VW": Set(1, 2, 4, where=lambda WPT, VW: WPT % VW == 0, default=1),
    "STRIDED": Bool(default=False),
}
DEFAULT = {"WPT": 1, "LS": 64, "VW": 1, "STRIDED": False}


def launch(n: int, config: Mapping[str, Any]) -> LaunchSizes:
    """Global and local sizes of ``config`` over ``n`` elements: ``(n / WPT,), (LS,)``."""
    return launch_sizes(Geometry(problem_size=n, block_size_names=["LS"], grid_div_x=["WPT", "LS"]), config)


def inputs(n: int, seed: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y``: ``n`` standard normal floats each."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)


def check(result: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
    """Raise unless ``result`` is ``A * x + y`` within float32 rounding (2u of |a x| + |y|)."""
    ax = np.float64(A) * x.astype(np.float64)
    bound = 2 * 2.0**-24 * (np.abs(ax) + np.abs(y))
    wrong = int(np.sum(np.abs(result - (ax + y)) > bound))
    if wrong:
        raise AssertionError(f"{wrong} of {result.size} elements are wrong")
