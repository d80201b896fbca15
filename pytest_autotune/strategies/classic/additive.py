"""A first-order (additive) ridge model of log-fitness over parameter values, to rank moves.

A local search that scans a large neighbourhood in random order spends most
of its budget on moves that a glance at the history would rule out (a work
group size that was slow everywhere it was tried). :class:`AdditiveModel`
fits log-fitness as a sum of one effect per (parameter, value) by ridge
regression on one-hot features of every evaluated configuration; the
predicted gain of a move is the sum of the effect differences of the
parameters it changes. Ridge (rather than per-value means) separates the
effects of parameters that the search moved together, and shrinks the
effect of a value seen rarely (or never) towards zero. Failures count as
slightly worse than the worst success, so values that fail often sink. It
is hand-written because the whole model is one small regularised
least-squares solve with numpy; a regression library would add a
dependency and conversions for no gain.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import Any

import numpy as np

__all__ = ["AdditiveModel"]

#: Ridge penalty on each effect (in units of squared log-fitness per evaluation).
_RIDGE = 1.0
#: Log-fitness margin by which a failure is worse than the worst success.
_FAILURE_MARGIN = 0.5


class AdditiveModel:
    """Ridge effects of every (parameter, value) on log-fitness, refitted lazily as outcomes arrive."""

    def __init__(self) -> None:
        self._rows: list[list[int]] = []
        self._values: list[float] = []
        self._columns: dict[tuple[str, Hashable], int] = {}
        self._effects: np.ndarray[Any, np.dtype[np.float64]] | None = None

    def add(self, config: Mapping[str, Any], value: float) -> None:
        """Record one evaluated configuration and its fitness (``inf`` for a failure)."""
        row = [self._columns.setdefault(item, len(self._columns)) for item in _items(config)]
        self._rows.append(row)
        self._values.append(math.log(value) if math.isfinite(value) and value > 0.0 else value)
        self._effects = None

    def __len__(self) -> int:
        return len(self._rows)

    def _fit(self) -> np.ndarray[Any, np.dtype[np.float64]]:
        values = np.asarray(self._values, dtype=np.float64)
        finite = np.isfinite(values)
        if not finite.any():
            return np.zeros(len(self._columns))
        target = np.where(finite, values, values[finite].max() + _FAILURE_MARGIN)
        target = target - target.mean()
        design = np.zeros((len(self._rows), len(self._columns)))
        for i, row in enumerate(self._rows):
            design[i, row] = 1.0
        # Dual form: the number of evaluations is usually smaller than the number of effects.
        gram = design @ design.T + _RIDGE * np.eye(len(self._rows))
        result: np.ndarray[Any, np.dtype[np.float64]] = design.T @ np.linalg.solve(gram, target)
        return result

    def gain(self, base: Mapping[str, Any], moved: Mapping[str, Any]) -> float:
        """Predicted change of log-fitness from ``base`` to ``moved`` (negative: expected better).

        A value never seen has effect zero (the ridge prior); with nothing recorded every move predicts 0.
        """
        if not self._rows:
            return 0.0
        if self._effects is None:
            self._effects = self._fit()
        effects, columns = self._effects, self._columns
        total = 0.0
        for name, new in moved.items():
            old = base[name]
            if new == old:
                continue
            for item, sign in (((name, _hashable(new)), 1.0), ((name, _hashable(old)), -1.0)):
                column = columns.get(item)
                if column is not None:
                    total += sign * float(effects[column])
        return total


def _items(config: Mapping[str, Any]) -> list[tuple[str, Hashable]]:
    return [(name, _hashable(value)) for name, value in config.items()]


def _hashable(value: Any) -> Hashable:
    return tuple(value) if isinstance(value, list) else value
