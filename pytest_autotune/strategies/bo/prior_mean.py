"""An additive (first-order) prior mean for the GP: one ridge effect per parameter value.

Tuning spaces are often rugged along one parameter in a way no stationary
kernel over its position captures: on AMD GPUs a work-group width of 64 or
128 is fast while 48 or 80 next to it is ten times slower. A sum of one
effect per (feature column, value) learns such a pattern from a handful of
trials, whatever the order of the values, and the GP then models only what
the sum leaves over (interactions and smooth trends). The effects are fitted
by ridge regression on one-hot columns of the standardised targets, so a
value seen once or never moves the prediction little or not at all, the same
model as :class:`pytest_autotune.strategies.additive.AdditiveModel` but on
the GP's encoded features and targets. Columns with more distinct values
than ``max_levels`` (continuous parameters) get a linear term instead.
It is a dozen lines of numpy because the model is a single regularised
least-squares solve.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["AdditivePrior"]


class AdditivePrior:
    """``m(x) = c + sum_j effect_j(x_j)``, fitted by ridge regression (penalty ``ridge`` per effect)."""

    def __init__(self, *, ridge: float = 1.0, max_levels: int = 64) -> None:
        self.ridge = ridge
        self.max_levels = max_levels
        self._levels: list[NDArray[np.float64] | None] = []  # per column: sorted values (None: linear)
        self._offsets: list[int] = []
        self._weights: NDArray[np.float64] = np.zeros(0)
        self._intercept = 0.0

    def _design(self, features: NDArray[np.float64]) -> NDArray[np.float64]:
        n = len(features)
        width = self._offsets[-1] if self._offsets else 0
        design = np.zeros((n, width), dtype=np.float64)
        rows = np.arange(n)
        for column, levels in enumerate(self._levels):
            start = self._offsets[column]
            values = features[:, column]
            if levels is None:
                design[:, start] = values
                continue
            index = np.searchsorted(levels, values).clip(0, len(levels) - 1)
            known = np.isclose(levels[index], values, rtol=0.0, atol=1e-9)
            design[rows[known], start + index[known]] = 1.0
        return design

    def fit(self, features: NDArray[np.float64], targets: NDArray[np.float64]) -> AdditivePrior:
        """Fit the effects to ``targets`` (one per row of ``features``); returns ``self``."""
        self._levels = []
        self._offsets = [0]
        for column in range(features.shape[1]):
            levels = np.unique(features[:, column])
            linear = len(levels) > self.max_levels
            self._levels.append(None if linear else levels)
            self._offsets.append(self._offsets[-1] + (1 if linear else len(levels)))
        self._intercept = float(np.mean(targets))
        design = self._design(features)
        gram = design @ design.T + self.ridge * np.eye(len(features))
        self._weights = design.T @ np.linalg.solve(gram, targets - self._intercept)
        return self

    def __call__(self, features: NDArray[np.float64]) -> NDArray[np.float64]:
        """Prior mean of each row of ``features`` (an unseen value contributes nothing)."""
        if not self._levels:
            return np.zeros(len(features), dtype=np.float64)
        result: NDArray[np.float64] = self._intercept + self._design(features) @ self._weights
        return result
