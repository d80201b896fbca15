"""Metrics of the strategy benchmark: best-so-far trajectories, fraction of optimum, methodology score.

The methodology score follows Willemsen, van Nieuwpoort and van Werkhoven,
"A methodology for comparing optimization algorithms for auto-tuning"
(FGCS 2024): at every evaluation count ``k`` of the budget window, the
strategy's best value ``f_best(k)`` is placed between the expected best of
``k`` uniform draws without replacement ``f_rand(k)`` (score 0) and the
optimum (score 1); the score is the mean over ``k = 1..B``. Random search
scores about 0 by construction, the perfect strategy 1, and a strategy
worse than random is negative.

Failed configurations count as evaluations. For both ``f_best`` and
``f_rand`` a failure is worth the worst feasible value of the space (a run
with no feasible value yet, and a random draw of only failures, sit at the
bottom of the scale), which keeps every expectation finite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import gammaln

__all__ = [
    "RunRecord",
    "best_so_far",
    "expected_best_of_random",
    "expected_fraction_of_random",
    "expected_over_random_minimum",
    "fraction_of_optimum",
    "methodology_score",
    "paired_difference",
]

FloatArray = NDArray[np.float64]


@dataclass
class RunRecord:
    """One tuning run: the value of each evaluation in order (``inf`` for failures) and its costs."""

    space: str
    strategy: str
    seed: int
    values: list[float]
    suggest_s: float  # mean seconds per suggestion
    wall_s: float  # wall seconds of the whole run

    def to_json(self) -> dict[str, object]:
        return {
            "space": self.space,
            "strategy": self.strategy,
            "seed": self.seed,
            "values": [v if math.isfinite(v) else None for v in self.values],
            "suggest_s": self.suggest_s,
            "wall_s": self.wall_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RunRecord:
        raw = data["values"]
        assert isinstance(raw, list)
        return cls(
            space=str(data["space"]),
            strategy=str(data["strategy"]),
            seed=int(data["seed"]),  # type: ignore[call-overload]
            values=[math.inf if v is None else float(v) for v in raw],
            suggest_s=float(data["suggest_s"]),  # type: ignore[arg-type]
            wall_s=float(data["wall_s"]),  # type: ignore[arg-type]
        )


def best_so_far(values: Sequence[float], budget: int) -> FloatArray:
    """Best value after 1..budget evaluations (a run shorter than the budget keeps its last best)."""
    padded = np.full(budget, math.inf)
    head = np.asarray(values[:budget], dtype=np.float64)
    padded[: len(head)] = head
    return np.minimum.accumulate(padded)


def fraction_of_optimum(best: FloatArray, optimum: float) -> FloatArray:
    """optimum / best (0 where nothing feasible was found yet)."""
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(best), optimum / best, 0.0)


def _min_rank_probabilities(n: int, k: int) -> FloatArray:
    """P(the i-th smallest of n values is the minimum of a uniform k-subset) = C(n-i, k-1) / C(n, k)."""
    i = np.arange(1, n + 1, dtype=np.float64)
    log_p = np.full(n, -np.inf)
    valid = (n - i) >= (k - 1)
    m = n - i[valid]
    log_total = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    log_p[valid] = gammaln(m + 1) - gammaln(k) - gammaln(m - k + 2) - log_total
    return np.asarray(np.exp(log_p), dtype=np.float64)


def expected_over_random_minimum(ordered_payoff: FloatArray, budget: int) -> FloatArray:
    """E[payoff of the minimum of k uniform draws without replacement], k = 1..budget.

    ``ordered_payoff[i]`` is the payoff when the (i+1)-th smallest value is
    the minimum (values sorted ascending, failures last). Beyond the space
    size the minimum is the smallest value.
    """
    n = len(ordered_payoff)
    out = np.empty(budget)
    for k in range(1, budget + 1):
        out[k - 1] = (
            ordered_payoff[0] if k > n else float(np.sum(_min_rank_probabilities(n, k) * ordered_payoff))
        )
    return out


def expected_best_of_random(space_values: FloatArray, budget: int) -> FloatArray:
    """E[min of k uniform draws without replacement], k = 1..budget, failures worth the worst value."""
    values = np.asarray(space_values, dtype=np.float64)
    worst = float(values[np.isfinite(values)].max())
    return expected_over_random_minimum(np.sort(np.where(np.isfinite(values), values, worst)), budget)


def expected_fraction_of_random(space_values: FloatArray, optimum: float, budget: int) -> FloatArray:
    """E[fraction of optimum] of random search after k = 1..budget evaluations (0 when all k failed)."""
    ordered = np.sort(np.asarray(space_values, dtype=np.float64))
    with np.errstate(divide="ignore"):
        payoff = np.where(np.isfinite(ordered), optimum / ordered, 0.0)
    return expected_over_random_minimum(payoff, budget)


def methodology_score(best: FloatArray, expected_random: FloatArray, optimum: float, worst: float) -> float:
    """Mean over the window of (f_rand(k) - f_best(k)) / (f_rand(k) - f_opt)."""
    filled = np.where(np.isfinite(best), best, worst)
    window = len(best)
    expected = expected_random[:window]
    span = expected - optimum
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(span > 0, (expected - filled) / span, 1.0)
    return float(np.mean(scores))


def paired_difference(base: FloatArray, other: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Mean and standard error over seeds of ``other - base``, per column (budget).

    Both arrays are (seeds, budgets) for the same seeds in the same order,
    so each seed's landscape luck cancels: the standard error is that of the
    per-seed differences, several times smaller than the spread of either
    strategy's own results. With one seed the standard error is ``nan``.
    """
    seeds = min(len(base), len(other))
    difference = np.asarray(other[:seeds], dtype=np.float64) - np.asarray(base[:seeds], dtype=np.float64)
    mean = difference.mean(axis=0)
    if seeds < 2:
        return mean, np.full_like(mean, np.nan)
    return mean, difference.std(axis=0, ddof=1) / math.sqrt(seeds)
