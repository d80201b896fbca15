"""The strategy benchmark's metrics against exact answers (closed form vs enumeration of subsets)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from benchmarks.strategy import metrics


def test_expected_best_of_random_matches_enumeration() -> None:
    values = np.array([3.0, 1.0, 4.0, 1.5, math.inf, 9.0, 2.6])
    expected = metrics.expected_best_of_random(values, 9)
    filled = np.where(np.isfinite(values), values, 9.0)  # a failure is worth the worst feasible value
    for k in range(1, len(values) + 1):
        subsets = list(itertools.combinations(filled, k))
        exact = sum(min(s) for s in subsets) / len(subsets)
        assert expected[k - 1] == pytest.approx(exact, rel=1e-12)
    assert expected[-1] == 1.0  # beyond the space size: the optimum


def test_expected_fraction_of_random_matches_enumeration() -> None:
    values = np.array([3.0, 1.0, 4.0, math.inf, 2.0])
    expected = metrics.expected_fraction_of_random(values, 1.0, 5)
    for k in range(1, 6):
        subsets = list(itertools.combinations(values, k))
        exact = sum(1.0 / min(s) if math.isfinite(min(s)) else 0.0 for s in subsets) / len(subsets)
        assert expected[k - 1] == pytest.approx(exact, rel=1e-12)


def test_best_so_far_and_fraction() -> None:
    best = metrics.best_so_far([math.inf, 4.0, 5.0, 2.0], 6)
    assert best.tolist() == [math.inf, 4.0, 4.0, 2.0, 2.0, 2.0]
    assert metrics.fraction_of_optimum(best, 1.0).tolist() == [0.0, 0.25, 0.25, 0.5, 0.5, 0.5]


def test_methodology_score_scale() -> None:
    values = np.linspace(1.0, 10.0, 50)
    expected = metrics.expected_best_of_random(values, 20)
    optimal = np.full(20, 1.0)
    assert metrics.methodology_score(optimal, expected, 1.0, 10.0) == pytest.approx(1.0)
    assert metrics.methodology_score(expected.copy(), expected, 1.0, 10.0) == pytest.approx(0.0)
    worst = np.full(20, math.inf)
    assert metrics.methodology_score(worst, expected, 1.0, 10.0) < 0.0


def test_paired_difference_cancels_the_shared_seed_effect() -> None:
    # Three seeds x two budgets; seed luck (+0.2, 0, -0.2) is shared, the strategies differ by +0.01 / +0.03.
    base = np.array([[0.7, 0.9], [0.5, 0.7], [0.3, 0.5]])
    other = base + np.array([[0.00, 0.03], [0.01, 0.03], [0.02, 0.03]])
    mean, error = metrics.paired_difference(base, other)
    assert mean == pytest.approx([0.01, 0.03])
    # Standard error of the differences (0, 0.01, 0.02): std 0.01 over sqrt(3) seeds; none at all for +0.03.
    assert error == pytest.approx([0.01 / math.sqrt(3), 0.0], abs=1e-12)
    one_mean, one_error = metrics.paired_difference(base[:1], other[:1])
    assert one_mean == pytest.approx([0.0, 0.03])
    assert np.all(np.isnan(one_error))
