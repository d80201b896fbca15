"""Acquisition: noise-free expected improvement in log space, gated by feasibility.

``log EI`` follows Ament et al. ("Unexpected Improvements to Expected
Improvement", NeurIPS 2023): for minimisation with incumbent ``best``,
``EI = sigma * h(u)``, ``u = (best - mu) / sigma``, ``h(u) = phi(u) + u Phi(u)``,
and ``log h`` is evaluated in three regimes so that it stays finite and
accurate when the improvement is astronomically small (where plain EI
underflows to 0 and stops ranking candidates):

* ``u > -1``: directly;
* ``-1/sqrt(eps) < u <= -1``:
  ``-u^2/2 - log sqrt(2 pi) + log1mexp(log(|u| erfcx(-u/sqrt 2)) + log sqrt(pi/2))``;
* below: the asymptote ``-u^2/2 - log sqrt(2 pi) - 2 log |u|``.

The feasibility gate is BaCO's: the acquisition is multiplied by the
probability of feasibility (added in log space), and candidates whose
probability is below a threshold drawn at random per suggestion (0 with
positive probability) are excluded.

Improvement floor: expected improvements below :data:`IMPROVEMENT_FLOOR`
(in standard deviations of the modelled target, about 0.1 % of the
objective) are below what a measurement resolves, so ``log(EI + floor)`` is
used. Once the model sees no real improvement left, candidates then differ
mainly by their probability of feasibility instead of by astronomically
small EI differences in unexplored corners, which is where hidden
constraints (resource limits) usually fail. It is small and hand-written because no
installed library offers log EI on plain tensors (BoTorch is not a dependency).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numpy.typing import NDArray

__all__ = [
    "IMPROVEMENT_FLOOR",
    "draw_feasibility_threshold",
    "expected_improvement",
    "feasible_acquisition",
    "log_expected_improvement",
    "log_h",
]

#: Expected improvement (standardised target units) below which candidates are equally worthless.
IMPROVEMENT_FLOOR = 1e-3

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_SQRT_PI_OVER_2 = 0.5 * math.log(math.pi / 2.0)
_INV_SQRT_EPS = 1.0 / math.sqrt(float(torch.finfo(torch.float64).eps))


def _pdf(u: torch.Tensor) -> torch.Tensor:
    """Standard normal density."""
    return torch.exp(-0.5 * u * u - _LOG_SQRT_2PI)


def _log1mexp(x: torch.Tensor) -> torch.Tensor:
    """``log(1 - exp(x))`` for ``x < 0``, accurate on both sides of ``-log 2``."""
    return torch.where(x > -math.log(2.0), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def log_h(u: torch.Tensor) -> torch.Tensor:
    """``log(phi(u) + u Phi(u))``, finite for every finite ``u``."""
    u = u.to(torch.float64)
    safe_mid = u.clamp(min=-1.0)
    direct = torch.log(_pdf(safe_mid) + safe_mid * torch.special.ndtr(safe_mid))
    tail_u = u.clamp(max=-1.0)
    scaled = torch.log(torch.special.erfcx(-tail_u / math.sqrt(2.0)) * tail_u.abs()) + _LOG_SQRT_PI_OVER_2
    tail = -0.5 * tail_u**2 - _LOG_SQRT_2PI + _log1mexp(scaled.clamp(max=-1e-300))
    far_u = u.clamp(max=-_INV_SQRT_EPS)
    asymptote = -0.5 * far_u**2 - _LOG_SQRT_2PI - 2.0 * torch.log(far_u.abs())
    return torch.where(u > -1.0, direct, torch.where(u > -_INV_SQRT_EPS, tail, asymptote))


def log_expected_improvement(mean: torch.Tensor, std: torch.Tensor, best: float) -> torch.Tensor:
    """``log EI`` of minimising below ``best`` under independent normal predictions."""
    std = std.clamp_min(1e-12)
    return log_h((best - mean) / std) + torch.log(std)


def expected_improvement(mean: torch.Tensor, std: torch.Tensor, best: float) -> torch.Tensor:
    """Closed-form EI (reference; underflows to 0 far from the incumbent)."""
    std = std.clamp_min(1e-12)
    u = (best - mean) / std
    cdf: torch.Tensor = torch.special.ndtr(u)
    return std * (_pdf(u) + u * cdf)


def feasible_acquisition(
    mean: torch.Tensor,
    std: torch.Tensor,
    best: float,
    p_feasible: NDArray[np.float64] | None = None,
    threshold: float = 0.0,
    floor: float = IMPROVEMENT_FLOOR,
) -> NDArray[np.float64]:
    """``log(EI + floor) + log P(feasible)``; ``-inf`` where ``P(feasible) < threshold``."""
    floor_term = torch.tensor(math.log(floor), dtype=torch.float64)
    acq = torch.logaddexp(log_expected_improvement(mean, std, best), floor_term).numpy()
    if p_feasible is not None:
        with np.errstate(divide="ignore"):
            acq = acq + np.log(p_feasible)
        acq = np.where(p_feasible >= threshold, acq, -np.inf)
    return np.asarray(acq, dtype=np.float64)


def draw_feasibility_threshold(rng: np.random.Generator, *, maximum: float = 0.9, levels: int = 10) -> float:
    """BaCO's random minimum feasibility: uniform over ``{0, maximum/levels, ..., maximum}``.

    Level 0 (no exclusion) has probability ``1 / (levels + 1)``, so regions
    the classifier wrongly believes infeasible are still reachable.
    """
    return float(maximum * rng.integers(0, levels + 1) / levels)
