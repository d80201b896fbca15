"""The paired A/B comparison: the exact null distribution, the Hodges-Lehmann estimate and its
interval, the decision, the sequential driver and its error rates, and the refused inputs."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from pytest_autotune.timing import paired
from pytest_autotune.timing.paired import (
    PairedVerdict,
    SequentialPlan,
    block_order,
    blocks_to_decide,
    hodges_lehmann,
    judge,
    log_ratios,
    measure_until_decided,
    signed_rank_null,
)

SIGMA = 0.1  # log-normal noise of one time; a log-ratio then has sd sigma * sqrt(2)


def sample(rng: np.random.Generator, ratio: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.exp(rng.normal(0.0, SIGMA, n))
    b = ratio * np.exp(rng.normal(0.0, SIGMA, n))
    return a, b


def test_block_order_alternates_abba() -> None:
    assert [block_order(i) for i in range(4)] == [("A", "B"), ("B", "A"), ("A", "B"), ("B", "A")]
    with pytest.raises(ValueError, match="block index"):
        block_order(-1)


@pytest.mark.parametrize("n", range(11))
def test_null_distribution_matches_enumeration(n: int) -> None:
    counts = np.zeros(n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
        counts[sum(rank for rank, positive in zip(range(1, n + 1), signs, strict=True) if positive)] += 1
    np.testing.assert_allclose(signed_rank_null(n), counts / 2**n, rtol=0, atol=1e-15)


def test_null_distribution_large_n_sums_to_one_and_is_symmetric() -> None:
    p = signed_rank_null(60)
    assert math.isclose(p.sum(), 1.0)
    np.testing.assert_allclose(p, p[::-1])


def test_hodges_lehmann_on_a_hand_made_sample() -> None:
    # Walsh averages of (1, 2, 10): 1, 1.5, 5.5, 2, 6, 10; median (2 + 5.5) / 2
    assert hodges_lehmann([1.0, 2.0, 10.0]).estimate == 3.75
    # a direct computation on a larger sample
    rng = np.random.default_rng(3)
    d = rng.standard_t(3, 15)
    walsh = [(d[i] + d[j]) / 2 for i in range(15) for j in range(i, 15)]
    assert hodges_lehmann(d).estimate == pytest.approx(float(np.median(walsh)))


def test_interval_order_statistics_for_n_10() -> None:
    # n = 10, 95% two-sided: P(T <= 8) = 25/1024 <= 0.025 < P(T <= 9) = 33/1024, so k = 9
    d = np.arange(1.0, 11.0)
    walsh = np.sort([(d[i] + d[j]) / 2 for i in range(10) for j in range(i, 10)])
    hl = hodges_lehmann(d, 0.95)
    assert (hl.low, hl.high) == (walsh[8], walsh[55 - 9])
    one_sided = hodges_lehmann(d, 0.95, "greater")  # P(T <= 10) = 43/1024 <= 0.05 < P(T <= 11)
    assert (one_sided.low, one_sided.high) == (walsh[10], math.inf)
    assert hodges_lehmann(d, 0.95, "less").high == walsh[55 - 11]


def test_too_few_blocks_give_an_unbounded_interval_and_inconclusive() -> None:
    hl = hodges_lehmann([0.5] * 5, 0.95)  # P(T = 0) = 1/32 > 0.025
    assert (hl.low, hl.high) == (-math.inf, math.inf)
    verdict = judge([1.0] * 5, [2.0] * 5, tolerance=0.1)
    assert verdict.state == "inconclusive"
    assert verdict.describe() == "+100.0% [-100.0%, +inf%] over 5 blocks (tolerance 10%): inconclusive"


@pytest.mark.parametrize(("ratio", "n"), [(1.0, 12), (1.2, 20), (1.2, 80)])
def test_interval_covers_the_true_ratio_at_the_nominal_rate(ratio: float, n: int) -> None:
    rng = np.random.default_rng(2025)
    runs = 400
    covered = 0
    for _ in range(runs):
        verdict = judge(*sample(rng, ratio, n), tolerance=0.05)
        covered += verdict.low <= ratio <= verdict.high
    assert 0.92 <= covered / runs <= 0.98, covered / runs  # n = 80: the normal approximation


def test_false_alarm_rate_at_no_change_is_within_the_level() -> None:
    rng = np.random.default_rng(7)
    runs = 400
    alarms = sum(judge(*sample(rng, 1.0, 12), tolerance=0.05).state == "regression" for _ in range(runs))
    assert alarms / runs <= 0.05
    # the hard case: a true ratio exactly at the limit (tolerance 0) errs at most (1 - 0.95) / 2
    alarms = sum(judge(*sample(rng, 1.0, 12), tolerance=0.0).state == "regression" for _ in range(runs))
    assert alarms / runs <= 0.05


def test_judge_states_and_describe() -> None:
    a = [1.0] * 24
    slow = judge(a, [1.123 * (1 + 0.01 * ((i % 5) - 2)) for i in range(24)], tolerance=0.1)
    assert slow.state == "regression"
    assert not slow.faster
    assert slow.describe().startswith("+12.3% [")
    assert slow.describe().endswith("over 24 blocks (tolerance 10%): regression")
    same = judge(a, [1.0 + 0.01 * ((i % 5) - 2) for i in range(24)], tolerance=0.1)
    assert same.state == "pass"
    assert not same.faster
    fast = judge(a, [0.7 + 0.01 * ((i % 5) - 2) for i in range(24)], tolerance=0.1)
    assert fast.state == "pass"
    assert fast.faster
    assert fast.describe().endswith(": pass (faster)")


def test_log_ratios_are_b_over_a() -> None:
    np.testing.assert_allclose(log_ratios([1.0, 2.0], [2.0, 1.0]), [math.log(2), -math.log(2)])


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def driver(ratio: float, seed: int, plan: SequentialPlan, tolerance: float = 0.05) -> PairedVerdict:
    rng = np.random.default_rng(seed)
    calls: list[int] = []

    def measure_block(index: int) -> tuple[float, float]:
        assert index == len(calls)
        calls.append(index)
        a, b = sample(rng, ratio, 1)
        return float(a[0]), float(b[0])

    verdict = measure_until_decided(measure_block, plan, tolerance=tolerance, clock=FakeClock())
    assert verdict.blocks == len(calls)
    return verdict


def test_plan_looks_double_up_to_the_cap() -> None:
    assert SequentialPlan(8, 64).looks() == (8, 16, 32, 64)
    assert SequentialPlan(10, 50).looks() == (10, 20, 40, 50)
    assert SequentialPlan(8, 8).looks() == (8,)
    assert SequentialPlan(8, 64).look_confidence(0.95) == pytest.approx(1 - 0.05 / 4)


def test_driver_stops_early_on_a_clear_regression_and_a_clear_pass() -> None:
    plan = SequentialPlan(min_blocks=16, max_blocks=128, max_seconds=60)
    slow = driver(1.5, 1, plan)
    assert (slow.state, slow.blocks) == ("regression", 16)
    assert slow.confidence == pytest.approx(1 - 0.05 / 4)
    same = driver(0.8, 2, plan, tolerance=0.05)
    assert (same.state, same.blocks) == ("pass", 16)


def test_driver_is_inconclusive_at_the_cap_on_a_ratio_at_the_tolerance() -> None:
    verdict = driver(1.05, 3, SequentialPlan(min_blocks=8, max_blocks=64, max_seconds=60))
    assert (verdict.state, verdict.blocks) == ("inconclusive", 64)


def test_driver_respects_the_time_cap() -> None:
    clock = FakeClock()

    def measure_block(index: int) -> tuple[float, float]:
        clock.now += 1.0  # each block takes a second
        return 1.0, 1.05 * (1 + 0.1 * (index % 3 - 1))  # centred on the limit

    plan = SequentialPlan(min_blocks=8, max_blocks=1000, max_seconds=20)
    verdict = measure_until_decided(measure_block, plan, tolerance=0.05, clock=clock)
    assert (verdict.state, verdict.blocks, clock.now) == ("inconclusive", 20, 20.0)


def test_the_time_cap_stops_even_before_the_first_look_as_inconclusive() -> None:
    """Slow blocks past the cap end the measuring there (the cap is a promise), undecided: too few
    blocks give no bounded interval, so nothing is called a regression on them."""
    clock = FakeClock()

    def measure_block(index: int) -> tuple[float, float]:
        clock.now += 10.0
        return 1.0, 2.0

    plan = SequentialPlan(min_blocks=8, max_blocks=64, max_seconds=5)
    verdict = measure_until_decided(measure_block, plan, tolerance=0.05, clock=clock)
    assert (verdict.state, verdict.blocks, clock.now) == ("inconclusive", 1, 10.0)
    assert not verdict.bounded


def test_values_that_are_not_all_positive_are_judged_as_differences_relative_to_the_scale() -> None:
    base = [-1.0, 0.0, 1.0, -1.0, 0.0, 1.0, -1.0, 0.0, 1.0, 0.0] * 2
    worse = [x + 0.5 for x in base]  # half the scale higher: a cost that grew by 50% of 1.0
    with pytest.raises(ValueError, match="positive finite"):
        judge(base, worse, tolerance=0.1)  # no scale: the ratio is undefined
    verdict = judge(base, worse, tolerance=0.1, scale=1.0)
    assert (verdict.state, verdict.scale) == ("regression", 1.0)
    assert verdict.ratio == pytest.approx(1.5)
    assert "difference relative to 1" in verdict.describe()
    same = judge(base, [x + 0.01 for x in base], tolerance=0.1, scale=1.0)
    assert same.state == "pass"
    assert blocks_to_decide(same) is not None or same.bounded
    # the same values judged on a larger scale: the change is 5% of it, within 10%
    assert judge(base, worse, tolerance=0.1, scale=10.0).state == "pass"
    # positive values keep the ratio even when a scale is given
    positive = judge([1.0] * 8, [2.0] * 8, tolerance=0.1, scale=5.0)
    assert (positive.scale, positive.ratio) == (None, pytest.approx(2.0))
    with pytest.raises(ValueError, match="finite"):
        judge([float("nan")] * 8, [1.0] * 8, tolerance=0.1, scale=1.0)


def test_driver_false_alarm_rate_on_unchanged_code() -> None:
    plan = SequentialPlan(min_blocks=8, max_blocks=64, max_seconds=60)
    runs = 300
    # tolerance 0: the true ratio sits on the limit, the hardest case for a false regression
    alarms = sum(driver(1.0, seed, plan, tolerance=0.0).state == "regression" for seed in range(runs))
    assert alarms / runs <= 0.05 / 2


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([1.0, 2.0], [1.0], "pair up"),
        ([], [], "at least one block"),
        ([1.0, 0.0], [1.0, 1.0], r"a \(base\): times must be positive finite.*index 1"),
        ([1.0, 1.0], [1.0, -2.0], r"b \(change\): times must be positive finite"),
        ([1.0, math.nan], [1.0, 1.0], "positive finite"),
        ([1.0, math.inf], [1.0, 1.0], "positive finite"),
        (["x"], [1.0], "must be numbers"),
        ([[1.0]], [[1.0]], "flat sequence"),
    ],
)
def test_bad_times_are_refused(a: object, b: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        judge(a, b, tolerance=0.1)  # type: ignore[arg-type]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="confidence"):
        judge([1.0], [1.0], tolerance=0.1, confidence=1.0)
    with pytest.raises(ValueError, match="tolerance"):
        judge([1.0], [1.0], tolerance=-0.1)
    with pytest.raises(ValueError, match="alternative"):
        hodges_lehmann([1.0], alternative="both")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_blocks"):
        SequentialPlan(min_blocks=0)
    with pytest.raises(ValueError, match="max_blocks"):
        SequentialPlan(min_blocks=8, max_blocks=4)
    with pytest.raises(ValueError, match="max_seconds"):
        SequentialPlan(max_seconds=0)
    with pytest.raises(ValueError, match="n must be"):
        signed_rank_null(-1)


def test_normal_approximation_meets_the_exact_index_at_the_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    exact = [paired._rank_index(50, alpha) for alpha in (0.025, 0.05)]
    monkeypatch.setattr(paired, "EXACT_MAX_N", 0)
    approximate = [paired._rank_index(50, alpha) for alpha in (0.025, 0.05)]
    assert all(abs(x - y) <= 2 for x, y in zip(exact, approximate, strict=True))  # of 1275 Walsh averages


def test_blocks_to_decide_scales_the_interval_by_the_square_root_of_the_blocks() -> None:
    # +5% estimated, interval +1%..+9% after 16 blocks, tolerance 0: half-width and gap in log units
    verdict = PairedVerdict("inconclusive", 1.05, 1.01, 1.09, 16, 0.0, 0.95)
    half = (math.log(1.09) - math.log(1.01)) / 2
    expected = math.ceil(16 * (half / math.log(1.05)) ** 2)
    assert blocks_to_decide(verdict) == max(16, expected)
    wide = PairedVerdict("inconclusive", 1.10, 0.90, 1.34, 16, 0.05, 0.95)
    gap = math.log(1.10) - math.log(1.05)
    assert blocks_to_decide(wide) == math.ceil(16 * ((math.log(1.34) - math.log(0.90)) / 2 / gap) ** 2)
    # a simulated run at twice the predicted length decides, for a seed whose first estimate lands
    # near the true +10% (one that overshoots predicts too few blocks: it is an estimate)
    rng = np.random.default_rng(57)
    a = np.exp(rng.normal(0, 0.2, 16))
    b = a * 1.10 * np.exp(rng.normal(0, 0.2, 16))
    first = judge(list(a), list(b), tolerance=0.05)
    assert first.state == "inconclusive"
    n = blocks_to_decide(first)
    assert n is not None
    assert 40 < n < 200
    a = np.exp(rng.normal(0, 0.2, 2 * n))
    b = a * 1.10 * np.exp(rng.normal(0, 0.2, 2 * n))
    assert judge(list(a), list(b), tolerance=0.05).state == "regression"


def test_blocks_to_decide_is_none_when_no_length_would_decide() -> None:
    at_limit = PairedVerdict("inconclusive", 1.05, 0.95, 1.16, 16, 0.05, 0.95)
    assert blocks_to_decide(at_limit) is None
    unbounded = PairedVerdict("inconclusive", 1.2, 0.0, math.inf, 4, 0.05, 0.95)
    assert blocks_to_decide(unbounded) is None
