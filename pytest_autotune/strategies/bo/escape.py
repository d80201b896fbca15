"""Escape steps: leave a basin where the search has stopped making progress.

A run that finds a good basin early keeps spending its global suggestions there:
expected improvement is largest next to the best configurations, even when the
improvements it finds are a percent or two. After ``escape_after`` trials
without a gain of at least ``escape_gain`` over the best value, each global
(non trust-region) suggestion of the strategy maximises the acquisition only
over configurations that differ from every incumbent in at least
``escape_radius`` parameters: the model's best guess *outside* the current
basin. A gain resets the count, so a run that keeps improving never escapes.

Written by hand: it is a filter on the acquisition, a few lines over the
space's feature blocks, which no library provides for a constrained mixed space.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import FeatureBlock

__all__ = ["changed_parameters", "trials_since_gain"]


def trials_since_gain(values: Sequence[float | None], gain: float) -> int:
    """Trials told after the last one that beat the best before it by at least ``gain`` (relative).

    ``values`` are the objective values in the order told (``None``: failed); the first
    feasible trial counts as a gain. With no feasible trial, every trial counts.
    """
    best = np.inf
    last = -1
    for i, value in enumerate(values):
        if value is None:
            continue
        if not np.isfinite(best) or value < best - gain * abs(best):
            last = i
        best = min(best, value)
    return len(values) - 1 - last


def changed_parameters(
    blocks: Sequence[FeatureBlock], features: NDArray[np.float64], references: NDArray[np.float64]
) -> NDArray[np.int64]:
    """Number of parameters in which each row of ``features`` differs from each row of ``references``.

    Both are :meth:`Space.features` matrices laid out by ``blocks`` (the space's
    :attr:`Space.feature_blocks`); the result has shape (n, m).
    """
    changed = np.zeros((len(features), len(references)), dtype=np.int64)
    for block in blocks:
        cols = block.columns
        differs = np.abs(features[:, None, cols] - references[None, :, cols]) > 1e-12
        changed += differs.any(axis=2)
    return changed
