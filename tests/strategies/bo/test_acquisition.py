"""log-EI agrees with closed-form EI where both are stable and stays finite where EI underflows."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from pytest_autotune.strategies.bo.acquisition import (
    draw_feasibility_threshold,
    expected_improvement,
    log_expected_improvement,
    log_h,
)


def test_log_ei_matches_closed_form_where_stable() -> None:
    mean = torch.linspace(-3.0, 3.5, 301, dtype=torch.float64)  # u = (0.5 - mean) / 0.8 >= -3.75
    std = torch.full_like(mean, 0.8)
    ei = expected_improvement(mean, std, best=0.5)
    assert bool((ei > 1e-5).all())
    assert torch.allclose(log_expected_improvement(mean, std, 0.5), torch.log(ei), rtol=1e-9, atol=1e-9)


def test_log_h_against_known_values() -> None:
    # h(0) = phi(0) = 1/sqrt(2 pi); h(u) -> u for large u; h(-1) = phi(1) - Phi(-1)
    assert float(log_h(torch.tensor(0.0))) == pytest.approx(-0.5 * math.log(2 * math.pi))
    assert float(log_h(torch.tensor(30.0))) == pytest.approx(math.log(30.0), rel=1e-12)
    h_minus_one = math.exp(-0.5) / math.sqrt(2 * math.pi) - 0.5 * math.erfc(1 / math.sqrt(2))
    assert float(log_h(torch.tensor(-1.0))) == pytest.approx(math.log(h_minus_one), rel=1e-10)


@pytest.mark.parametrize("u", [-1.5, -5.0, -12.0, -25.0])
def test_log_h_tail_matches_high_precision(u: float) -> None:
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    x = mpmath.mpf(u)
    h = mpmath.npdf(x) + x * mpmath.ncdf(x)
    assert float(log_h(torch.tensor(u, dtype=torch.float64))) == pytest.approx(float(mpmath.log(h)), rel=1e-8)


def test_log_h_is_finite_and_increasing_far_in_the_tail() -> None:
    u = -torch.logspace(-2, 12, 400, dtype=torch.float64).flip(0)  # from -1e12 up to -0.01
    values = log_h(u)
    assert bool(torch.isfinite(values).all())
    assert bool((values[1:] > values[:-1]).all())
    # plain EI has long underflowed there, yet log-EI still ranks candidates
    assert float(expected_improvement(torch.tensor(50.0), torch.tensor(1.0), 0.0)) == 0.0


def test_log_ei_grows_with_uncertainty_at_equal_mean() -> None:
    mean = torch.full((3,), 2.0, dtype=torch.float64)
    std = torch.tensor([0.1, 0.5, 2.0], dtype=torch.float64)
    values = log_expected_improvement(mean, std, best=0.0)
    assert bool((values[1:] > values[:-1]).all())


def test_feasibility_threshold_levels_include_zero() -> None:
    rng = np.random.default_rng(0)
    draws = [draw_feasibility_threshold(rng) for _ in range(2000)]
    assert min(draws) == 0.0
    assert max(draws) == pytest.approx(0.9)
    assert 0.05 < draws.count(0.0) / len(draws) < 0.14  # 1/11 expected
