"""The sequential verdict over pairs of workers: look after each doubling, stop when the evidence is clear.

``--autotune-compare`` measures pair of workers after pair of workers
(:mod:`pytest_autotune.timing.pairs` says why the pair is the unit) and must decide as soon as the
interval lies clearly beyond or within the tolerance, and no later: a 2x slowdown whose first
pairs agree is a regression, not "inconclusive, too few pairs".

**Two intervals per look.** The true change ``c`` (a log-ratio) is seen by pair ``j``'s blocks as
``c + u_j + noise``, with ``u_j`` that pair's lifelong effect (memory placement, a device's
performance state):

* *Between pairs* (:func:`~pytest_autotune.timing.pairs.judge_pairs`, Kalibera and Jones): the
  Student t interval over the pairs' own estimates, hulled with the pooled blocks' interval. It
  assumes nothing about ``u_j``, but its spread is read from the pairs themselves, and from two or
  three pairs that spread is too unreliable (two pairs that agree by chance make it narrow): it is
  read from :data:`MIN_PAIRS` pairs on.
* *Margin* (:func:`margin_interval`): the blocks pooled (Student t over all blocks, hulled with
  their signed-rank interval once there are enough of them) cover ``c + mean(u_j)``; widened on
  each side by a bound on ``|u_j|`` (:data:`PROCESS_BIAS`), it covers ``c`` from any number of
  pairs, one included. It decides only a change that clears the tolerance by more than two
  processes may differ, e.g. a 2x slowdown, which no count of pairs should hold back.

**Looks and error.** The pairs are judged after 1, 2, 4, 8, ... pairs up to the plan's cap
(:class:`~pytest_autotune.timing.paired.SequentialPlan` from one pair; the time cap ends the
schedule early with one last look, never adds one). The error budget ``1 - confidence`` is split
(Bonferroni): :data:`MARGIN_SHARE` of it across every look's margin interval, the rest across the
looks that also read the between-pairs interval. So over the whole run a false regression (and a
false pass) each stay below ``(1 - confidence) / 2``, whatever the looks decide. Each look reports
the intersection of the intervals it read (both cover ``c``, so it covers ``c`` at the look's summed
confidence); a look decides regression when it lies above ``1 + tolerance``, pass when below.

**The bound.** :data:`PROCESS_BIAS` (20%) is above the largest per-pair offset in the H200 data
(about 13%: ``benchmarks/data/gpu/2026-11-27-h200/gate-blocks.md``, pairs of four blocks sitting on
plateaus up to 0.12 in log-ratio from the change) and at the largest difference seen between
wall-time pairs of the example kernels on a loaded 2-vCPU machine. A bound too small could pass a
change the pairs hide, or fail an unchanged test whose one pair sat far off; too large, it only
leaves more to the between-pairs interval (a +100% change at a 30% tolerance needs the blocks'
lower bound above ``1.3 x 1.2 = 1.56``; at the default 5%, above 1.26).

**Likely regression.** When the cap ends measuring with the verdict inconclusive but the estimate
beyond the tolerance and the whole interval above 1 (:func:`likely_regression`), the change is
slower, probably beyond the tolerance, and not confirmed: the report says so loudly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

import numpy as np

from pytest_autotune.timing.paired import PairedVerdict, SequentialPlan, State, hodges_lehmann
from pytest_autotune.timing.pairs import judge_pairs, pair_effects, t_quantile

__all__ = [
    "MARGIN_SHARE",
    "MIN_PAIRS",
    "PROCESS_BIAS",
    "PairLooks",
    "judge_look",
    "likely_regression",
    "margin_interval",
]

#: The most one pair of workers' lifelong effect is taken to move its estimate (a ratio: 20%).
PROCESS_BIAS: Final = 0.20
#: From this many pairs the between-pairs interval (their spread) is read as well.
MIN_PAIRS: Final = 4
#: The share of the error budget spent on the margin intervals (the rest: between pairs).
MARGIN_SHARE: Final = 0.2

Groups = Sequence[tuple[Sequence[float], Sequence[float]]]


@dataclass(frozen=True)
class PairLooks:
    """When pairs are judged (after 1, 2, 4, ... ``max_pairs`` pairs) and at what confidence each
    interval is read so that the whole run keeps ``confidence`` (module docstring)."""

    max_pairs: int
    confidence: float = 0.95
    min_pairs: int = MIN_PAIRS
    process_bias: float = PROCESS_BIAS

    def __post_init__(self) -> None:
        if not (isinstance(self.min_pairs, int) and self.min_pairs >= 2):
            raise ValueError(f"min_pairs must be an integer >= 2, got {self.min_pairs!r}")
        if not (0 < self.confidence < 1):
            raise ValueError(f"confidence must be in (0, 1), e.g. 0.95, got {self.confidence!r}")
        if not (0 <= self.process_bias < 1):
            raise ValueError(f"process_bias must be in [0, 1), e.g. 0.2, got {self.process_bias!r}")

    def looks(self) -> tuple[int, ...]:
        """The pair counts judged: ``1, 2, 4, ..., max_pairs``."""
        return SequentialPlan(1, max(1, self.max_pairs), 1.0).looks()

    def margin_confidence(self) -> float:
        """The level of each look's margin interval."""
        return 1 - MARGIN_SHARE * (1 - self.confidence) / len(self.looks())

    def between_confidence(self) -> float:
        """The level of each between-pairs interval (read at the looks from ``min_pairs`` pairs on)."""
        reading = max(1, sum(look >= self.min_pairs for look in self.looks()))
        return 1 - (1 - MARGIN_SHARE) * (1 - self.confidence) / reading


def margin_interval(effects: np.ndarray, confidence: float, bias: float) -> tuple[float, float, float]:
    """``(estimate, low, high)`` of the change from pooled block ``effects`` (log-ratios or relative
    differences), widened by the per-process ``bias`` bound (module docstring).

    The blocks' interval is Student's t over them (two blocks give a bound), hulled with their
    signed-rank interval when there are blocks enough for one; the margin is ``log(1 + bias)``
    on each side (on the difference scale the same number: a bias of that share of the magnitude).
    """
    x = np.asarray(effects, dtype=float)
    hl = hodges_lehmann(x, confidence)
    if x.size < 2:
        return hl.estimate, -math.inf, math.inf
    half = t_quantile(1 - (1 - confidence) / 2, x.size - 1) * float(x.std(ddof=1)) / math.sqrt(x.size)
    mean = float(x.mean())
    low, high = mean - half, mean + half
    if math.isfinite(hl.low) and math.isfinite(hl.high):
        low, high = min(low, hl.low), max(high, hl.high)
    margin = math.log1p(bias)
    return hl.estimate, low - margin, high + margin


def judge_look(
    groups: Groups, *, tolerance: float, looks: PairLooks, scale: float | None = None
) -> PairedVerdict:
    """The verdict of one look at ``groups`` (pair ``i``'s base and changed times), as the module
    docstring sets out: the margin interval always, the between-pairs one from ``min_pairs`` pairs."""
    between = judge_pairs(groups, tolerance=tolerance, confidence=looks.between_confidence(), scale=scale)
    effects = pair_effects(groups, scale)
    level = looks.margin_confidence()
    _, low, high = margin_interval(np.concatenate(effects), level, looks.process_bias)
    if between.scale is None:
        low, high = math.exp(low), math.exp(high)
    else:
        low, high = 1 + low, 1 + high
    if between.pairs >= looks.min_pairs:
        level = 1 - (1 - level) - (1 - between.confidence)
        if max(low, between.low) <= min(high, between.high):
            low, high = max(low, between.low), min(high, between.high)
        else:  # the two intervals disagree: neither is believed
            low, high = min(low, between.low), max(high, between.high)
    limit = 1 + tolerance
    state: State = "regression" if low > limit else "pass" if high < limit else "inconclusive"
    faster = state == "pass" and high < 1 - tolerance
    return replace(between, state=state, low=low, high=high, confidence=level, faster=faster)


def likely_regression(verdict: PairedVerdict) -> bool:
    """Whether an inconclusive ``verdict`` is probably a regression: the estimate beyond the
    tolerance and the whole interval above no change (slower, for sure; by how much, not yet)."""
    return (
        verdict.state == "inconclusive"
        and verdict.blocks > 0
        and verdict.ratio > 1 + verdict.tolerance
        and verdict.low > 1
    )
