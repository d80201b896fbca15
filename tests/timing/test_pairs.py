"""``timing/pairs.py``: blocks from several pairs of workers, judged with the pair as the unit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_autotune.timing.paired import judge
from pytest_autotune.timing.pairs import judge_pairs, pair_effects, t_quantile


def pairs_of(
    effects: list[float], blocks: int = 4, noise: float = 0.0, seed: int = 0
) -> list[tuple[list[float], list[float]]]:
    """One ``(a, b)`` per pair: ``blocks`` blocks whose log-ratio is the pair's effect plus noise."""
    rng = np.random.default_rng(seed)
    out = []
    for effect in effects:
        a = [1e-3] * blocks
        b = [
            1e-3 * math.exp(effect + rng.normal(0.0, noise)) if noise else 1e-3 * math.exp(effect) for _ in a
        ]
        out.append((a, b))
    return out


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 1, 12.706205),
        (0.975, 2, 4.302653),
        (0.975, 3, 3.182446),
        (0.99375, 3, 5.391949),
        (0.995, 7, 3.499483),
        (0.95, 10, 1.812461),
        (0.975, 63, 1.998341),
        (0.025, 5, -2.570582),
        (0.5, 4, 0.0),
    ],
)
def test_student_t_quantiles_match_the_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=2e-6)


def test_pairs_that_agree_decide_like_the_blocks_do() -> None:
    slower = judge_pairs(pairs_of([0.2, 0.21, 0.19, 0.2], noise=0.01), tolerance=0.05)
    assert slower.state == "regression"
    assert (slower.pairs, slower.blocks) == (4, 16)
    assert slower.ratio == pytest.approx(math.exp(0.2), rel=0.02)
    same = judge_pairs(pairs_of([0.0, 0.001, -0.001, 0.0], noise=0.005), tolerance=0.05)
    assert same.state == "pass"
    assert same.low < 1 < same.high


def test_pairs_that_disagree_widen_the_interval_far_beyond_the_pooled_blocks() -> None:
    # every pair's blocks are tight, but the pairs sit in different states (one 7% faster)
    groups = pairs_of([-0.07, 0.17, 0.05, -0.01], blocks=8, noise=0.003)
    pooled = judge([x for a, _ in groups for x in a], [x for _, b in groups for x in b], tolerance=0.02)
    verdict = judge_pairs(groups, tolerance=0.02)
    assert verdict.state == "inconclusive"
    assert math.log(verdict.high / verdict.low) > 3 * math.log(pooled.high / pooled.low)
    assert verdict.spread == pytest.approx(np.std([-0.07, 0.17, 0.05, -0.01], ddof=1), rel=0.1)
    # the first pair alone (the single-pair gate) would have passed this +5% change
    assert judge(*groups[0], tolerance=0.02).state == "pass"


def test_the_interval_is_never_narrower_than_the_pooled_blocks_allow() -> None:
    # four pairs with identical summaries (spread 0), but noisy blocks: the pooled interval stands
    groups = [([1.0, 1.0, 1.0, 1.0], [4.0, 0.25, 4.0, 0.25])] * 4
    verdict = judge_pairs(groups, tolerance=0.05)
    assert verdict.spread == 0.0
    assert verdict.state == "inconclusive"
    assert verdict.low < 0.5
    assert verdict.high > 2.0


def test_one_pair_says_nothing_of_how_pairs_differ() -> None:
    verdict = judge_pairs(pairs_of([0.3], blocks=16), tolerance=0.05)
    assert verdict.state == "inconclusive"
    assert (verdict.low, verdict.high) == (0.0, math.inf)
    assert not verdict.bounded


def test_values_that_are_not_all_positive_are_judged_as_differences() -> None:
    groups = [([1.0, 0.0, 1.0, 0.0], [2.0, 1.0, 2.0, 1.0])] * 4
    verdict = judge_pairs(groups, tolerance=0.05, scale=2.0)
    assert verdict.scale == 2.0
    assert verdict.ratio == pytest.approx(1.5)  # a difference of 1 relative to 2
    assert verdict.state == "regression"
    assert [list(d) for d in pair_effects(groups[:1], 2.0)] == [[0.5] * 4]
    with pytest.raises(ValueError, match="scale"):
        judge_pairs(groups, tolerance=0.05, scale=0.0)


def test_coverage_holds_under_per_pair_effects_where_the_pooled_interval_fails() -> None:
    rng = np.random.default_rng(11)
    covered = pooled_covered = 0
    runs = 300
    for _ in range(runs):
        effects = list(0.05 + rng.normal(0.0, 0.04, 4))  # the change is +5% (log 0.05 ~ ratio 1.051)
        groups = pairs_of(effects, noise=0.005, seed=int(rng.integers(1 << 30)))
        verdict = judge_pairs(groups, tolerance=0.02)
        covered += verdict.low <= math.exp(0.05) <= verdict.high
        blocks = judge([x for a, _ in groups for x in a], [x for _, b in groups for x in b], tolerance=0.02)
        pooled_covered += blocks.low <= math.exp(0.05) <= blocks.high
    assert covered / runs >= 0.93
    assert pooled_covered / runs < 0.75  # blocks treated as independent: far too narrow (nominal 95%)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one pair"):
        judge_pairs([], tolerance=0.05)
    with pytest.raises(ValueError, match="tolerance"):
        judge_pairs(pairs_of([0.0, 0.0]), tolerance=1.5)
