"""Judging blocks measured by several pairs of worker processes: the pair, not the block, is the unit.

Two processes running the same code can differ for their whole life: where a buffer landed in
memory, which clock or power state a device settled in, the address-space layout. On a GPU the
paired log-ratios of one pair of workers come in plateaus that sit several percent apart from
another pair's, so blocks of one pair are not independent draws of the change, and an interval
that treats them as such (:func:`~pytest_autotune.timing.paired.judge`) is far too narrow: it can
pass a real slowdown whose workers happened to sit in a faster state than REF's. The model is the
hierarchical one of Kalibera and Jones ("Rigorous benchmarking in reasonable time", 2013): a block's
log-ratio is the change, plus an effect of its pair of processes, plus the block's own noise.

:func:`judge_pairs` therefore summarises each pair by the Hodges-Lehmann estimate of its own
blocks, and reads the interval of the change from how those summaries spread, with Student's t
on ``pairs - 1`` degrees of freedom: the variance of the pairs' mean holds the between-pair variance
and whatever dependence the blocks of a pair have. The reported interval is the hull of that one
and of the signed-rank interval of all blocks pooled, so it is never narrower than either: pairs that
agree by chance cannot make it narrower than the blocks' own noise allows. With one pair nothing
says how pairs differ, so the interval is unbounded and the verdict inconclusive: a gate that
cannot see a change says so.

The decision is :func:`~pytest_autotune.timing.paired.judge`'s: regression when the interval lies
above ``1 + tolerance``, pass when below, otherwise inconclusive. ``--autotune-compare`` reads this
interval from a few pairs on and, with fewer, decides only a change beyond the tolerance by more
than a bound on the per-process bias (the sequential verdict, :mod:`pytest_autotune.timing.stopping`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pytest_autotune.timing.paired import PairedVerdict, State, all_positive, hodges_lehmann, log_ratios

__all__ = ["judge_pairs", "pair_effects", "t_quantile"]


def _t_two_sided(t: float, df: int) -> float:
    """``P(|T| < t)`` for Student's t with ``df`` degrees of freedom (``t >= 0``), in closed form
    (Abramowitz and Stegun 26.7.3-4: a finite series in ``cos(theta)``, ``theta = atan(t / sqrt(df))``)."""
    theta = math.atan(t / math.sqrt(df))
    c2, sin = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 0:
        term = total = 1.0
        for k in range(2, df, 2):  # 1 + 1/2 c^2 + 1*3/(2*4) c^4 + ...
            term *= c2 * (k - 1) / k
            total += term
        return sin * total
    if df == 1:
        return 2 * theta / math.pi
    term = total = math.cos(theta)
    for k in range(3, df, 2):  # c + 2/3 c^3 + 2*4/(3*5) c^5 + ...
        term *= c2 * (k - 1) / k
        total += term
    return 2 / math.pi * (theta + sin * total)


def t_quantile(p: float, df: int) -> float:
    """The ``p``-quantile of Student's t with ``df`` (a positive integer) degrees of freedom.

    Bisection on the closed-form distribution function: exact to about 1e-12, and no scipy, so
    judging a comparison imports nothing beyond numpy.
    """
    if not (0 < p < 1) or df < 1:
        raise ValueError(f"p must be in (0, 1) and df a positive integer, got p={p!r}, df={df!r}")
    if p == 0.5:
        return 0.0
    target = abs(2 * p - 1)  # P(|T| < q) for the quantile's magnitude q
    low, high = 0.0, 1.0
    while _t_two_sided(high, df) < target:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if _t_two_sided(middle, df) < target:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * max(1.0, high):
            break
    return math.copysign((low + high) / 2, p - 0.5)


def _as_ratios(groups: Sequence[tuple[Sequence[float], Sequence[float]]], scale: float | None) -> bool:
    """Whether the ratios are judged: no ``scale`` given, or every value positive."""
    return scale is None or all_positive([x for a, _ in groups for x in a], [x for _, b in groups for x in b])


def pair_effects(
    groups: Sequence[tuple[Sequence[float], Sequence[float]]], scale: float | None = None
) -> list[np.ndarray]:
    """Each pair's per-block effects: ``log(b / a)``, or ``(b - a) / scale`` when a value is not positive.

    ``groups[i]`` holds pair ``i``'s base times and changed times. Without a ``scale`` every value
    must be positive (the ratios are judged).
    """
    if scale is None or _as_ratios(groups, scale):
        return [log_ratios(a, b) for a, b in groups]
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    effects = []
    for a, b in groups:
        if len(a) != len(b) or not a:
            raise ValueError(
                f"a and b must pair up in every pair: {len(a)} base times, {len(b)} changed times"
            )
        effects.append((np.asarray(b, dtype=float) - np.asarray(a, dtype=float)) / scale)
    return effects


def judge_pairs(
    groups: Sequence[tuple[Sequence[float], Sequence[float]]],
    *,
    tolerance: float,
    confidence: float = 0.95,
    scale: float | None = None,
) -> PairedVerdict:
    """Whether B is confidently slower than A beyond ``1 + tolerance``, with the pairs as the unit.

    ``groups[i]`` is pair ``i``'s ``(a, b)``: the times (costs) of its blocks. The interval is the
    hull of the between-pair t interval and the pooled signed-rank interval (module docstring), at
    ``confidence`` two-sided; ``scale`` is :func:`~pytest_autotune.timing.paired.judge`'s, for
    values that are not all positive.
    """
    if not groups:
        raise ValueError("at least one pair of workers is needed")
    if not (0 <= tolerance < 1):
        raise ValueError(f"tolerance must be in [0, 1), e.g. 0.1 for 10%, got {tolerance!r}")
    effects = pair_effects(groups, scale)
    ratios = _as_ratios(groups, scale)
    pooled = hodges_lehmann(np.concatenate(effects), confidence)
    summaries = np.array([hodges_lehmann(d, confidence).estimate for d in effects])
    pairs = len(summaries)
    if pairs >= 2:
        estimate = float(summaries.mean())
        spread = float(summaries.std(ddof=1))
        half = t_quantile(1 - (1 - confidence) / 2, pairs - 1) * spread / math.sqrt(pairs)
        low, high = min(pooled.low, estimate - half), max(pooled.high, estimate + half)
    else:
        estimate, spread, low, high = pooled.estimate, math.nan, -math.inf, math.inf
    if ratios:
        ratio, low, high, used = math.exp(estimate), math.exp(low), math.exp(high), None
    else:
        ratio, low, high, used = 1 + estimate, 1 + low, 1 + high, scale
    limit = 1 + tolerance
    state: State = "regression" if low > limit else "pass" if high < limit else "inconclusive"
    faster = state == "pass" and high < 1 - tolerance
    return PairedVerdict(
        state, ratio, low, high, pooled.n, tolerance, confidence, faster, used, pairs=pairs, spread=spread
    )
