"""The paired A/B comparison: is the change (B) slower than the base (A), beyond a tolerance?

The relative regression gate (``--autotune-compare=REF``, issue 25) runs a test as it is at a
reference commit (A) and as it is in the working tree (B) on the same device. This module is its
statistical core; it measures nothing itself (the caller times the kernels).

**Blocks.** The unit of measurement is a *block*: one time of A and one of B taken back to back,
their order alternating between blocks (:func:`block_order`: AB, BA, AB, ... i.e. ABBA...), so
that drift of the machine (clocks, temperature, other load) hits both sides alike and cancels in
the pair. Each block gives one paired log-ratio ``log(B / A)``; a slowdown of B is a positive one.

**Estimate and interval.** The ratio is the Hodges-Lehmann estimate: the median of the Walsh
averages ``(d_i + d_j) / 2, i <= j`` of the log-ratios, reported as ``exp(.)``. Its confidence
interval is distribution-free: with the ``M = n(n+1)/2`` Walsh averages sorted, the interval from
the ``k``-th smallest to the ``k``-th largest covers the true median log-ratio with probability
``1 - 2 P(T <= k - 1)`` where ``T`` is the Wilcoxon signed-rank statistic under the null
hypothesis; ``k`` is the largest index that keeps this at least the asked confidence. The only
assumption is that the log-ratios are independent and symmetric about their median (a paired
difference of two equally noisy measurements is); no normality is assumed, and a few blocks hit by
interference move the estimate little. For ``n <= EXACT_MAX_N`` blocks the null distribution of
``T`` is exact, computed by dynamic programming over the ranks (:func:`signed_rank_null`; no
tables); above it the normal approximation with continuity correction is used, where it is
accurate. With too few blocks (fewer than 6 at 95% two-sided) no order statistic reaches the
confidence and the interval is unbounded, which :func:`judge` reports as inconclusive.

Why hand-written: scipy has the signed-rank *test* (``scipy.stats.wilcoxon``) but neither the
Hodges-Lehmann estimate nor its interval, and inverting the test by search would be slower and
less exact than reading the interval off the sorted Walsh averages. The normal quantile comes from
the standard library (:class:`statistics.NormalDist`), so the module needs only numpy.

**Decision.** :func:`judge` takes the two-sided interval at ``confidence``: ``regression`` when
its lower bound exceeds ``1 + tolerance``, ``pass`` when its upper bound is below it, otherwise
``inconclusive``. Each of the two one-sided decisions is then wrong with probability at most
``(1 - confidence) / 2``: at the default 95%, a change that is truly within the tolerance is
called a regression at most 2.5% of the time. ``faster`` (a flag on a pass) says the upper bound
is below ``1 - tolerance``: confidently faster beyond the tolerance.

**Values that are not all positive.** A metric or a recorded objective may be zero or negative,
where a ratio means nothing. When any value of either side is not positive, :func:`judge` reads
the paired differences ``(b_i - a_i) / scale`` instead of the log-ratios, with the same
Hodges-Lehmann estimate and signed-rank interval (they need only independent, symmetric
differences), and reports ``1 + difference`` as the ratio: the change relative to ``scale``,
so the tolerance keeps its meaning ("10% of the base's magnitude"). The caller fixes ``scale``
before the judged blocks (:mod:`~pytest_autotune.plugin.compare_pair` takes the magnitude of the
base's dropped warm-up measurement), so it is a constant for the test: the interval keeps its
coverage. The switch depends on the signs of the values only, never on which side is worse.

**Sequential measuring.** :func:`measure_until_decided` measures blocks until the verdict is not
inconclusive or a cap (blocks or seconds) is hit. Looking at the data again and again and
stopping at the first decisive look inflates the error rate, so it looks only at a fixed, small
schedule (``min_blocks``, then doubling, up to ``max_blocks``: :meth:`SequentialPlan.looks`) and
spends the error across those looks (Bonferroni): each look uses the confidence
``1 - (1 - confidence) / looks``. Whatever the data, at most that many looks happen (the time cap
only ends the schedule early, with one last look at the blocks measured, even before the first
scheduled look: fewer blocks then decide nothing), so the probability of
*any* false regression (or of any false pass) over the whole run is at most
``(1 - confidence) / 2``. The price is a wider interval at each look; doubling keeps the number
of looks, and with it the price, logarithmic in the block cap.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from statistics import NormalDist
from typing import Final, Literal

import numpy as np

__all__ = [
    "EXACT_MAX_N",
    "HLInterval",
    "PairedVerdict",
    "SequentialPlan",
    "all_positive",
    "block_order",
    "blocks_to_decide",
    "hodges_lehmann",
    "judge",
    "log_ratios",
    "measure_until_decided",
    "signed_rank_null",
]

#: Up to this many blocks the signed-rank null distribution is exact; above, the normal approximation.
EXACT_MAX_N: Final = 50

State = Literal["regression", "pass", "inconclusive"]
Alternative = Literal["two-sided", "less", "greater"]


def block_order(index: int) -> tuple[str, str]:
    """The order of the two measurements of block ``index`` (from 0): AB, BA, AB, BA, ..."""
    if index < 0:
        raise ValueError(f"block index must be >= 0, got {index}")
    return ("A", "B") if index % 2 == 0 else ("B", "A")


def _times(name: str, values: Sequence[float], *, positive: bool = True) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}: times must be numbers ({error})") from None
    if array.ndim != 1:
        raise ValueError(f"{name}: times must be a flat sequence, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array) | ((array <= 0) if positive else False))
    if bad.size:
        what = "positive finite numbers" if positive else "finite numbers"
        raise ValueError(f"{name}: times must be {what}, got {array[bad[0]]!r} at index {bad[0]}")
    return array


def _paired(a: Sequence[float], b: Sequence[float], *, positive: bool) -> tuple[np.ndarray, np.ndarray]:
    base, change = _times("a (base)", a, positive=positive), _times("b (change)", b, positive=positive)
    if base.size != change.size:
        raise ValueError(f"a and b must pair up: {base.size} base times, {change.size} changed times")
    if base.size == 0:
        raise ValueError("at least one block (a pair of times) is needed")
    return base, change


def all_positive(*values: Sequence[float]) -> bool:
    """Whether every value is a positive finite number (then the ratios are judged)."""
    return all(math.isfinite(v) and v > 0 for side in values for v in side)


def log_ratios(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """The paired log-ratios ``log(b_i / a_i)`` of base times ``a`` and changed times ``b``."""
    base, change = _paired(a, b, positive=True)
    ratios: np.ndarray = np.log(change) - np.log(base)
    return ratios


@cache
def _null_counts(n: int) -> tuple[int, ...]:
    counts = [1]  # sign patterns of ranks 1..r by their positive-rank sum
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for total, count in enumerate(counts):
            grown[total + rank] += count
        counts = grown
    return tuple(counts)


def signed_rank_null(n: int) -> np.ndarray:
    """``P(T = t)`` for ``t = 0 .. n(n+1)/2``: the exact null distribution of the signed-rank sum.

    Under the null each of the ``2**n`` sign patterns of the ranks 1..n is equally likely; the
    counts per sum come from adding one rank at a time (a subset-sum recursion), in exact integers.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    counts = _null_counts(n)
    return np.array([count / 2**n for count in counts])


def _rank_index(n: int, alpha: float) -> int:
    """The largest ``k >= 0`` with ``P(T <= k - 1) <= alpha`` (0: no order statistic is enough)."""
    if n <= EXACT_MAX_N:
        counts = _null_counts(n)
        limit = alpha * 2**n * (1 + 1e-12)
        k, below = 0, 0
        while k < len(counts) and below + counts[k] <= limit:
            below += counts[k]
            k += 1
        return k
    mean = n * (n + 1) / 4
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    # P(T <= k - 1) ~ Phi((k - 1 + 0.5 - mean) / sd) <= alpha
    return max(0, math.floor(mean - 0.5 + NormalDist().inv_cdf(alpha) * sd) + 1)


@dataclass(frozen=True)
class HLInterval:
    """The Hodges-Lehmann estimate of the median log-ratio and its interval (log scale).

    ``low`` is ``-inf`` and/or ``high`` ``+inf`` when the blocks are too few for the confidence
    (or on the side a one-sided interval leaves open).
    """

    estimate: float
    low: float
    high: float
    n: int
    confidence: float


def _check_confidence(confidence: float) -> None:
    if not (isinstance(confidence, (int, float)) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), e.g. 0.95, got {confidence!r}")


def hodges_lehmann(
    d: Sequence[float] | np.ndarray, confidence: float = 0.95, alternative: Alternative = "two-sided"
) -> HLInterval:
    """The median of the Walsh averages of ``d`` and its distribution-free interval.

    ``alternative="two-sided"`` gives ``[W_(k), W_(M+1-k)]`` with ``P(T <= k-1) <= (1-c)/2``;
    ``"greater"`` the one-sided lower bound ``[W_(k), inf)`` and ``"less"`` the upper bound
    ``(-inf, W_(M+1-k)]``, each with ``P(T <= k-1) <= 1-c``.
    """
    _check_confidence(confidence)
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"alternative must be 'two-sided', 'less' or 'greater', got {alternative!r}")
    x = np.asarray(d, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("d must be a non-empty flat sequence of differences")
    if not np.all(np.isfinite(x)):
        raise ValueError("d must hold finite numbers")
    n = x.size
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2)
    m = walsh.size
    alpha = 1 - confidence
    k = _rank_index(n, alpha / 2 if alternative == "two-sided" else alpha)
    low = float(walsh[k - 1]) if k >= 1 and alternative != "less" else -math.inf
    high = float(walsh[m - k]) if k >= 1 and alternative != "greater" else math.inf
    return HLInterval(float(np.median(walsh)), low, high, n, confidence)


def _percent(ratio: float) -> str:
    if math.isnan(ratio):
        return "?"
    if math.isinf(ratio):
        return "+inf%" if ratio > 0 else "-inf%"
    return f"{(ratio - 1) * 100:+.1f}%"


@dataclass(frozen=True)
class PairedVerdict:
    """The ratio B/A (time of the change over time of the base), its interval, and the decision.

    ``confidence`` is the level of the reported two-sided interval (after the split across looks
    when it comes from :func:`measure_until_decided`). ``faster`` is set only on a pass whose
    upper bound is below ``1 - tolerance``. ``scale`` is None when the ratios were judged, else the
    magnitude the differences were divided by (module docstring): the "ratio" is then
    ``1 + difference / scale``. ``pairs`` and ``spread`` are set when several pairs of workers
    measured the blocks (:func:`pytest_autotune.timing.pairs.judge_pairs`).
    """

    state: State
    ratio: float
    low: float
    high: float
    blocks: int
    tolerance: float
    confidence: float
    faster: bool = False
    scale: float | None = None
    #: How many pairs of worker processes measured the blocks (:mod:`pytest_autotune.timing.pairs`).
    pairs: int = 1
    #: The standard deviation of the pairs' own estimates (log-ratio or relative difference; None:
    #: not judged by pairs, nan: one pair).
    spread: float | None = None

    @classmethod
    def unmeasured(cls, tolerance: float, confidence: float) -> PairedVerdict:
        """The verdict of no judged block at all (the time cap ran out first): inconclusive."""
        return cls("inconclusive", math.nan, -math.inf, math.inf, 0, tolerance, confidence)

    @property
    def bounded(self) -> bool:
        """Whether the interval is finite on both sides (too few blocks leave it unbounded)."""
        finite = all(math.isfinite(x) for x in (self.low, self.high, self.ratio)) and self.blocks > 0
        return finite and (self.scale is not None or (self.low > 0 and self.ratio > 0))

    def describe(self) -> str:
        """E.g. ``+12.3% [+8.1%, +16.9%] over 24 blocks (tolerance 10%): regression``."""
        state = "pass (faster)" if self.faster else self.state
        relative = "" if self.scale is None else f" (difference relative to {self.scale:.4g})"
        workers = (
            ""
            if self.spread is None
            else f" from {self.pairs} pair{'s' if self.pairs != 1 else ''} of workers"
        )
        return (
            f"{_percent(self.ratio)} [{_percent(self.low)}, {_percent(self.high)}]{relative} over "
            f"{self.blocks} blocks{workers} (tolerance {self.tolerance * 100:g}%): {state}"
        )


def blocks_to_decide(verdict: PairedVerdict) -> int | None:
    """About how many blocks would have decided an inconclusive ``verdict``, at the noise it measured.

    The interval's half-width (in log-ratio) shrinks as one over the square root of the blocks,
    so the interval around the same estimate would clear ``1 + tolerance`` after
    ``blocks * (half-width / distance to the limit)^2`` blocks. None when that cannot be read: an
    unbounded interval (too few blocks), or an estimate within 0.1% of the limit, which no
    number of blocks would settle. An estimate, not a promise: the estimate moves as blocks come.
    """
    if not verdict.bounded:
        return None

    def scale(x: float) -> float:  # the scale the interval was computed on
        return x if verdict.scale is not None else math.log(x)

    half = (scale(verdict.high) - scale(verdict.low)) / 2
    gap = abs(scale(verdict.ratio) - scale(1 + verdict.tolerance))
    if gap < 1e-3:
        return None
    return max(verdict.blocks, math.ceil(verdict.blocks * (half / gap) ** 2))


def _check_tolerance(tolerance: float) -> None:
    if not (isinstance(tolerance, (int, float)) and 0 <= tolerance < 1):
        raise ValueError(f"tolerance must be in [0, 1), e.g. 0.1 for 10%, got {tolerance!r}")


def judge(
    a: Sequence[float],
    b: Sequence[float],
    *,
    tolerance: float,
    confidence: float = 0.95,
    scale: float | None = None,
) -> PairedVerdict:
    """Whether B is confidently slower than A beyond ``1 + tolerance``, confidently within, or unknown.

    ``a[i]`` and ``b[i]`` are the two times (costs) of block ``i``. The decisions read the two-sided
    interval at ``confidence``, so each errs with probability at most ``(1 - confidence) / 2``.
    When a value is not positive, the differences divided by ``scale`` are judged (module
    docstring); without a ``scale`` that is a :class:`ValueError`.
    """
    _check_tolerance(tolerance)
    _check_confidence(confidence)
    if scale is None or all_positive(a, b):
        hl = hodges_lehmann(log_ratios(a, b), confidence)
        ratio, low, high = math.exp(hl.estimate), math.exp(hl.low), math.exp(hl.high)
        used = None
    else:
        if not (math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be a positive finite number, got {scale!r}")
        base, change = _paired(a, b, positive=False)
        hl = hodges_lehmann((change - base) / scale, confidence)
        ratio, low, high, used = 1 + hl.estimate, 1 + hl.low, 1 + hl.high, scale
    limit = 1 + tolerance
    state: State = "regression" if low > limit else "pass" if high < limit else "inconclusive"
    faster = state == "pass" and high < 1 - tolerance
    return PairedVerdict(state, ratio, low, high, hl.n, tolerance, confidence, faster, used)


@dataclass(frozen=True)
class SequentialPlan:
    """When :func:`measure_until_decided` looks at the blocks, and when it stops measuring.

    Looks happen after ``min_blocks``, then each time the count doubles, and at ``max_blocks``;
    measuring stops at the first decisive look, at ``max_blocks``, or when ``max_seconds`` have
    passed (then with one last look at the blocks measured so far, however few: the cap is a
    promise to the user, and too few blocks only make the verdict inconclusive).
    """

    min_blocks: int = 8
    max_blocks: int = 64
    max_seconds: float = 60.0

    def __post_init__(self) -> None:
        if not (isinstance(self.min_blocks, int) and self.min_blocks >= 1):
            raise ValueError(f"min_blocks must be an integer >= 1, got {self.min_blocks!r}")
        if not (isinstance(self.max_blocks, int) and self.max_blocks >= self.min_blocks):
            raise ValueError(
                f"max_blocks must be an integer >= min_blocks ({self.min_blocks}), got {self.max_blocks!r}"
            )
        if not (isinstance(self.max_seconds, (int, float)) and self.max_seconds > 0):
            raise ValueError(f"max_seconds must be a positive number, got {self.max_seconds!r}")
        if math.isnan(self.max_seconds):
            raise ValueError("max_seconds must be a positive number, got nan")

    def looks(self) -> tuple[int, ...]:
        """The block counts at which the data is judged: ``min, 2 min, 4 min, ..., max``."""
        counts = [self.min_blocks]
        while counts[-1] < self.max_blocks:
            counts.append(min(2 * counts[-1], self.max_blocks))
        return tuple(counts)

    def look_confidence(self, confidence: float) -> float:
        """The confidence of each look, so that all looks together keep ``confidence``."""
        _check_confidence(confidence)
        return 1 - (1 - confidence) / len(self.looks())


def measure_until_decided(
    measure_block: Callable[[int], tuple[float, float]],
    plan: SequentialPlan,
    *,
    tolerance: float,
    confidence: float = 0.95,
    clock: Callable[[], float] = time.monotonic,
    scale: float | None = None,
) -> PairedVerdict:
    """Measure blocks (``measure_block(i) -> (a_i, b_i)``, timed in :func:`block_order` ``(i)``)
    until the verdict is decided or the plan's caps are hit; the last verdict is returned.

    Each look reads the interval at :meth:`SequentialPlan.look_confidence`: over the whole run a
    false regression (and a false pass) each happen with probability at most ``(1 - confidence) / 2``.
    ``scale`` is :func:`judge`'s, for values that are not all positive.
    """
    _check_tolerance(tolerance)
    level = plan.look_confidence(confidence)
    looks = set(plan.looks())
    start = clock()
    a: list[float] = []
    b: list[float] = []
    while True:
        index = len(a)
        time_a, time_b = measure_block(index)
        a.append(time_a)
        b.append(time_b)
        out_of_time = clock() - start >= plan.max_seconds
        if len(a) in looks or out_of_time:
            verdict = judge(a, b, tolerance=tolerance, confidence=level, scale=scale)
            if verdict.state != "inconclusive" or out_of_time or len(a) >= plan.max_blocks:
                return verdict
