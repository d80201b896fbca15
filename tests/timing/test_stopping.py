"""The sequential verdict over pairs of workers (``timing/stopping.py``), on synthetic blocks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_autotune.plugin.compare.pair import PairRun, Procedure, SideTimes, judge_runs
from pytest_autotune.timing.paired import PairedVerdict
from pytest_autotune.timing.stopping import (
    MARGIN_SHARE,
    MIN_PAIRS,
    PROCESS_BIAS,
    PairLooks,
    judge_look,
    likely_regression,
    margin_interval,
)


def pairs_of(
    ratios: list[float], *, blocks: int = 4, noise: float = 0.01, seed: int = 0
) -> list[tuple[list[float], list[float]]]:
    """One pair of workers per ratio: ``blocks`` blocks whose B/A is that ratio times ``noise``."""
    rng = np.random.default_rng(seed)
    groups = []
    for ratio in ratios:
        a = list(1e-3 * np.exp(rng.normal(0.0, noise, blocks)))
        b = list(1e-3 * ratio * np.exp(rng.normal(0.0, noise, blocks)))
        groups.append((a, b))
    return groups


LOOKS = PairLooks(30)


@pytest.mark.parametrize("ratios", [[2.0], [2.0, 2.06], [2.0, 2.06, 2.03], [1.97, 2.1]])
def test_a_2x_slowdown_is_a_regression_from_one_two_or_three_pairs(ratios: list[float]) -> None:
    verdict = judge_look(pairs_of(ratios, noise=0.02), tolerance=0.3, looks=LOOKS)
    assert verdict.state == "regression", verdict.describe()
    assert verdict.pairs == len(ratios)
    assert verdict.ratio == pytest.approx(float(np.mean(ratios)), rel=0.05)


def test_the_issues_three_agreeing_pairs_at_plus_100_percent_are_a_regression_not_too_few_pairs() -> None:
    # issue 43: +103.7% [+92.6%, +129.5%] over 3 pairs, every pair +100-106%, tolerance 30%
    groups = pairs_of([2.0, 2.06, 2.03], noise=0.05, seed=3)
    runs = [PairRun((None, None), SideTimes(a, b), Procedure(3)) for a, b in groups]  # type: ignore[arg-type]
    assert judge_runs(runs, tolerance=0.3, max_pairs=30).state == "regression"


def test_one_pair_decides_only_beyond_what_a_process_may_be_off() -> None:
    # +30% against a 10% tolerance: the blocks agree, but one process could be 20% off
    assert judge_look(pairs_of([1.3]), tolerance=0.1, looks=LOOKS).state == "inconclusive"
    assert judge_look(pairs_of([1.4]), tolerance=0.1, looks=LOOKS).state == "regression"
    # unchanged code passes from one pair only where the tolerance holds a process's bias too
    assert judge_look(pairs_of([1.0]), tolerance=0.3, looks=LOOKS).state == "pass"
    assert judge_look(pairs_of([1.0]), tolerance=0.1, looks=LOOKS).state == "inconclusive"


def test_unchanged_code_with_agreeing_pairs_passes_at_the_first_look_that_reads_their_spread() -> None:
    groups = pairs_of([1.0, 1.004, 0.997, 1.002], noise=0.005)
    assert judge_look(groups[:3], tolerance=0.1, looks=LOOKS).state == "inconclusive"
    verdict = judge_look(groups, tolerance=0.1, looks=LOOKS)
    assert verdict.state == "pass", verdict.describe()
    assert verdict.high < 1.1
    assert verdict.pairs == MIN_PAIRS


def test_a_process_biased_slowdown_never_passes_at_any_look() -> None:
    # +5% at a 2% tolerance; each process's bias up to 6% (a pair up to 12.8% off), as on an H200
    rng = np.random.default_rng(7)
    for draw in range(300):
        biases = rng.uniform(0.94, 1.06, (16, 2))
        ratios = [1.05 * b / a for a, b in biases]
        groups = pairs_of(ratios, noise=0.005, seed=draw)
        for look in LOOKS.looks():
            if look > len(groups):
                break
            verdict = judge_look(groups[:look], tolerance=0.02, looks=LOOKS)
            assert verdict.state != "pass", (draw, look, verdict.describe())


def test_unchanged_code_under_process_biases_is_not_called_a_regression_beyond_the_error_budget() -> None:
    # each pair up to the bound off, 2% block noise, 10% tolerance: the whole sequential run errs
    # (a regression at any look) at most (1 - confidence) / 2 of the time
    rng = np.random.default_rng(11)
    runs, red = 400, 0
    for draw in range(runs):
        ratios = list(np.exp(rng.uniform(-1, 1, 8) * math.log1p(PROCESS_BIAS) * 0.9))
        groups = pairs_of(ratios, noise=0.02, seed=draw)
        looks = [look for look in LOOKS.looks() if look <= len(groups)]
        states = [judge_look(groups[:look], tolerance=0.1, looks=LOOKS).state for look in looks]
        red += "regression" in states
    assert red / runs <= 0.025


def test_the_looks_spend_the_error_budget_once() -> None:
    looks = PairLooks(30, confidence=0.95)
    assert looks.looks() == (1, 2, 4, 8, 16, 30)
    reading = [look for look in looks.looks() if look >= MIN_PAIRS]
    spent = len(looks.looks()) * (1 - looks.margin_confidence()) + len(reading) * (
        1 - looks.between_confidence()
    )
    assert spent == pytest.approx(0.05)
    assert 1 - looks.margin_confidence() == pytest.approx(MARGIN_SHARE * 0.05 / 6)
    with pytest.raises(ValueError, match="min_pairs"):
        PairLooks(30, min_pairs=1)
    with pytest.raises(ValueError, match="process_bias"):
        PairLooks(30, process_bias=1.5)


def test_the_margin_interval_widens_the_blocks_by_the_bias_bound() -> None:
    effects = np.full(8, math.log(1.5))
    estimate, low, high = margin_interval(effects, 0.99, 0.2)
    assert math.exp(estimate) == pytest.approx(1.5)
    assert (math.exp(low), math.exp(high)) == (pytest.approx(1.25), pytest.approx(1.8))
    assert margin_interval(effects[:1], 0.99, 0.2)[1:] == (-math.inf, math.inf)  # one block: no spread


def test_a_noisy_pair_widens_the_interval_instead_of_deciding() -> None:
    verdict = judge_look([([1.0, 1.0, 1.0, 1.0], [4.0, 0.5, 4.0, 0.5])], tolerance=0.1, looks=LOOKS)
    assert verdict.state == "inconclusive"
    assert verdict.low < 1 < verdict.high


def verdict_of(state: str, ratio: float, low: float, high: float) -> PairedVerdict:
    return PairedVerdict(state, ratio, low, high, 12, 0.3, 0.99, pairs=3, spread=0.1)  # type: ignore[arg-type]


def test_a_likely_regression_is_slower_for_sure_and_probably_beyond_the_tolerance() -> None:
    assert likely_regression(verdict_of("inconclusive", 1.6, 1.1, 2.3))
    assert not likely_regression(verdict_of("inconclusive", 1.25, 1.1, 1.4))  # within the tolerance
    assert not likely_regression(verdict_of("inconclusive", 1.6, 0.95, 2.6))  # maybe not slower at all
    assert not likely_regression(verdict_of("regression", 1.6, 1.4, 1.8))  # confirmed: not "likely"
    assert not likely_regression(PairedVerdict.unmeasured(0.3, 0.95))
