"""Model features of parameter values, vectorised (layout: :func:`feature_layout`).

* numeric kinds: one column in [0, 1], ``(v - lo) / (hi - lo)`` over the whole domain, or the
  same in log space when the parameter is log-scaled (powers of two, spans over two decades);
* categorical kinds (``Categorical``, ``Bool``, non-numeric ``Set``): the domain position;
* permutations: one column per item holding the item's position in the ordering.

The Bayesian engine encodes tens of thousands of candidates per suggestion, so every encoder
works on arrays of domain positions (or real values) without Python loops.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import FeatureBlock
from pytest_autotune.space.params import Interval, Param, Permutation, Pow2, Real

__all__ = ["ValueEncoder", "feature_layout", "numeric_bounds"]


def feature_layout(params: Mapping[str, Param]) -> tuple[FeatureBlock, ...]:
    """The feature layout every space implementation uses (see :class:`FeatureBlock`)."""
    blocks: list[FeatureBlock] = []
    col = 0
    for name, p in params.items():
        if isinstance(p, Permutation):
            width = len(p.items)
            blocks.append(FeatureBlock(name, "permutation", slice(col, col + width)))
        elif p.is_numeric:
            width = 1
            blocks.append(FeatureBlock(name, "numeric", slice(col, col + 1)))
        else:
            width = 1
            blocks.append(FeatureBlock(name, "categorical", slice(col, col + 1), n_categories=p.size))
        col += width
    return tuple(blocks)


def numeric_bounds(p: Param) -> tuple[float, float]:
    """Smallest and largest value of a numeric domain (without materialising it)."""
    if isinstance(p, Real):
        return p.lo, p.hi
    if isinstance(p, (Interval, Pow2)) and not (isinstance(p, Interval) and p.generator is not None):
        ends = p.values_at(np.array([0, p.size - 1], dtype=np.int64))
        return float(ends[0]), float(ends[1])
    values = p.values()
    return float(values.min()), float(values.max())


class ValueEncoder:
    """Turns domain positions (or real values) of one parameter into its feature columns."""

    def __init__(self, param: Param) -> None:
        self.param = param
        self.is_permutation = isinstance(param, Permutation)
        self.is_numeric = param.is_numeric and not self.is_permutation
        self.width = len(param.items) if isinstance(param, Permutation) else 1
        self.lo = self.hi = 0.0
        if self.is_numeric:
            self.lo, self.hi = numeric_bounds(param)
        self.log = self.is_numeric and param.log_scale and self.lo > 0

    def _scale(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.hi == self.lo:
            return np.zeros_like(values)
        if self.log:
            return (np.log(values) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return (values - self.lo) / (self.hi - self.lo)

    def encode_reals(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """Features of real values: shape (n, 1)."""
        return self._scale(np.asarray(values, dtype=np.float64)).reshape(-1, 1)

    def encode_positions(self, positions: NDArray[np.int64]) -> NDArray[np.float64]:
        """Features of the values at these domain positions: shape (n, width)."""
        positions = np.asarray(positions, dtype=np.int64)
        if isinstance(self.param, Permutation):
            orders = self.param.orders(positions)
            out = np.empty(orders.shape, dtype=np.float64)
            rows = np.arange(len(orders))[:, None]
            out[rows, orders] = np.arange(orders.shape[1], dtype=np.float64)[None, :]
            return out
        if not self.is_numeric:
            return positions.astype(np.float64).reshape(-1, 1)
        values = self.param.values_at(positions)
        return self._scale(np.asarray(values, dtype=np.float64)).reshape(-1, 1)
