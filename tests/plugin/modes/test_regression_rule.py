"""The regression rule on hand-computed numbers: judge, floor, maximised objectives, keep-or-replace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_autotune.entry import Baseline
from pytest_autotune.plugin.modes.tune import _pick_winner
from pytest_autotune.policy import DEFAULT_POLICY, merge_policy
from pytest_autotune.timing.measure import Stats
from pytest_autotune.timing.regression import (
    BASELINE_RUNS,
    CONFIRMATIONS,
    DEFAULT_RULE,
    NOISE_TOLERANCE_K,
    Rule,
    between_process_noise,
    robust_spread,
)

US = 1e-6


@dataclass(frozen=True)
class Measurement:
    """Only what the rule reads of a measurement."""

    median: float
    q1: float
    q3: float


def test_a_20_percent_slower_median_against_a_baseline_with_quartiles() -> None:
    # baseline spread 2 x (100 - 98) = 4us, the measurement's 2 x (120 - 119) = 2us: band 1.5 x 4 = 6us
    baseline = Baseline(100 * US, q1=98 * US, q3=103 * US)
    verdict = DEFAULT_RULE.judge(Measurement(120 * US, 119 * US, 121 * US), baseline)
    assert verdict.state == "regression"
    assert not verdict.settled  # a regression is confirmed by measuring again
    assert verdict.noise_band == pytest.approx(6 * US)
    assert verdict.limit == pytest.approx(116 * US)  # 100 x 1.1 + 6
    assert verdict.delta == pytest.approx(0.2)
    # within the band but beyond the tolerance: passes, yet is measured again
    borderline = DEFAULT_RULE.judge(Measurement(115 * US, 114 * US, 116 * US), baseline)
    assert (borderline.state, borderline.settled) == ("passed", False)
    # within the tolerance: settled at once
    assert DEFAULT_RULE.judge(Measurement(109 * US, 108 * US, 110 * US), baseline).settled
    # faster beyond tolerance and band: 100 x 0.9 - 6 = 84us
    faster = DEFAULT_RULE.judge(Measurement(80 * US, 79 * US, 81 * US), baseline)
    assert (faster.state, faster.limit) == ("faster", pytest.approx(84 * US))


def test_an_older_baseline_without_quartiles_uses_its_iqr() -> None:
    baseline = Baseline(100 * US, iqr=10 * US)
    assert DEFAULT_RULE.baseline_spread(baseline) == pytest.approx(10 * US)
    assert DEFAULT_RULE.baseline_spread(Baseline(100 * US)) == 0.0
    verdict = DEFAULT_RULE.judge(Measurement(120 * US, 120 * US, 120 * US), baseline)
    assert (verdict.state, verdict.limit) == ("passed", pytest.approx(125 * US))  # 110 + 1.5 x 10


def test_the_floor_hides_small_absolute_differences() -> None:
    tiny = Baseline(1 * US, q1=1 * US, q3=1 * US)
    slower = Measurement(1.5 * US, 1.5 * US, 1.5 * US)  # +50%, but only 0.5us
    verdict = DEFAULT_RULE.judge(slower, tiny)
    assert (verdict.state, verdict.settled) == ("passed", True)
    assert Rule(floor=0.0).judge(slower, tiny).state == "regression"
    assert Rule(floor=0.4 * US).judge(slower, tiny).state == "regression"


def test_a_maximised_objective_mirrors_the_rule() -> None:
    rule = Rule(floor=0.0, maximize=True, unit="GFLOP/s")
    # the spread of a maximised objective is 2 x (q3 - median) = 8: band 12, limit 100 x 0.9 - 12 = 78
    baseline = Baseline(100.0, q1=95.0, q3=104.0, unit="GFLOP/s")
    assert rule.baseline_spread(baseline) == pytest.approx(8.0)
    verdict = rule.judge(Measurement(75.0, 75.0, 75.0), baseline)
    assert (verdict.state, verdict.limit, verdict.noise_band) == ("regression", 78.0, 12.0)
    assert rule.judge(Measurement(80.0, 80.0, 80.0), baseline).state == "passed"
    assert rule.judge(Measurement(120.0, 120.0, 120.0), baseline).settled  # better, within tolerance
    assert rule.judge(Measurement(130.0, 130.0, 130.0), baseline).state == "faster"  # beyond 122


def test_the_policy_gives_its_rule() -> None:
    assert DEFAULT_POLICY.rule == DEFAULT_RULE == Rule(0.10, 1.5, 2e-6, False, "s", NOISE_TOLERANCE_K)
    custom = merge_policy([{"tolerance": 0.05, "noise_k": 2.0, "objective": "GFLOP/s", "maximize": True}])
    # a tolerance set by any layer is used as it is: no tolerance derived from the noise
    assert custom.rule == Rule(0.05, 2.0, 0.0, True, "GFLOP/s", noise_scale=None)
    assert merge_policy([{"noise_k": 2.0}]).rule.noise_scale == NOISE_TOLERANCE_K


def test_the_tolerance_grows_with_the_baselines_noise() -> None:
    steady = Baseline(100 * US, q1=100 * US, q3=100 * US, noise=0.02, processes=5)
    noisy = Baseline(100 * US, q1=100 * US, q3=100 * US, noise=0.2, processes=5)
    rule = Rule(noise_scale=2.0)
    assert rule.tolerance_for(steady) == 0.10  # at least the tolerance
    assert rule.tolerance_for(noisy) == pytest.approx(0.40)  # 2 x 20%
    assert rule.tolerance_for(Baseline(100 * US)) == 0.10  # an older entry: no noise, as before
    assert Rule(noise_scale=None).tolerance_for(noisy) == 0.10  # a tolerance set explicitly wins
    # +30%: a regression against the steady baseline, within the noisy one's 40%
    slower = Measurement(130 * US, 130 * US, 130 * US)
    assert rule.judge(slower, steady).state == "regression"
    within = rule.judge(slower, noisy)
    assert (within.state, within.settled, within.tolerance, within.noise) == ("passed", True, 0.4, 0.2)
    assert within.limit == pytest.approx(140 * US)
    beyond = rule.judge(Measurement(145 * US, 145 * US, 145 * US), noisy)
    assert (beyond.state, beyond.limit) == ("regression", pytest.approx(140 * US))
    # faster beyond the noise-derived tolerance only
    assert rule.judge(Measurement(65 * US, 65 * US, 65 * US), noisy).state == "passed"
    assert rule.judge(Measurement(55 * US, 55 * US, 55 * US), noisy).state == "faster"


def test_the_tolerance_says_where_it_came_from() -> None:
    noisy = Baseline(100 * US, q1=100 * US, q3=100 * US, noise=0.2, processes=5)
    slower = Measurement(150 * US, 150 * US, 150 * US)
    rule = Rule(noise_scale=2.0)
    assert rule.describe_tolerance(rule.judge(slower, noisy)) == (
        "tolerance 40% (2 x the baseline's noise 20%, the spread between its fresh processes)"
    )
    steady = Baseline(100 * US, noise=0.03)
    assert rule.describe_tolerance(rule.judge(slower, steady)) == (
        "tolerance 10% (at least 10%; the baseline's noise 3%, the spread between its fresh processes)"
    )
    assert rule.describe_tolerance(rule.judge(slower, Baseline(100 * US))) == (
        "tolerance 10% (the baseline has no noise measured)"
    )
    explicit = Rule(0.3, noise_scale=None)
    assert explicit.describe_tolerance(explicit.judge(slower, noisy)) == "tolerance 30% (set explicitly)"


def test_noise_between_processes_is_their_relative_range() -> None:
    assert between_process_noise([1.0, 1.1, 1.2, 0.9, 1.0]) == pytest.approx(0.3)
    assert between_process_noise([2.0]) == 0.0
    with pytest.raises(ValueError, match="no medians"):
        between_process_noise([])


def test_keep_or_replace_the_committed_configuration() -> None:
    rule = DEFAULT_RULE
    committed = Measurement(100 * US, 100 * US, 100 * US)
    # no noise: the band is the 2us floor
    assert rule.beats(Measurement(97 * US, 97 * US, 97 * US), committed)
    assert not rule.beats(Measurement(99 * US, 99 * US, 99 * US), committed)
    # the committed one's spread 2 x (100 - 99) = 2us widens the band to 1.5 x 2 + 2 = 5us
    noisy = Measurement(100 * US, 99 * US, 101 * US)
    assert not rule.beats(Measurement(97 * US, 97 * US, 97 * US), noisy)
    assert rule.beats(Measurement(94 * US, 94 * US, 94 * US), noisy)
    # tune mode applies it to the finalists' statistics
    stats = {0: Stats.of([97 * US] * 5), 1: Stats.of([100 * US] * 5)}
    assert _pick_winner(stats, 1, DEFAULT_POLICY) == (0, False)
    slower_floor = merge_policy([{"floor": 5 * US}])
    assert _pick_winner(stats, 1, slower_floor) == (1, True)
    assert _pick_winner(stats, None, slower_floor) == (0, False)


def test_robust_spread_uses_the_undisturbed_half() -> None:
    assert robust_spread(10.0, 9.0, 30.0) == 2.0
    assert robust_spread(10.0, 1.0, 11.0, maximize=True) == 2.0
    assert robust_spread(10.0, 11.0, 12.0) == 0.0  # never negative
    assert Stats.of([1.0, 2.0, 3.0, 4.0, 100.0]).spread() == robust_spread(3.0, 2.0, 4.0)


def test_describe_states_the_rule_with_its_numbers() -> None:
    assert DEFAULT_RULE.describe() == (
        f"median > baseline x (1 + max(10%, {NOISE_TOLERANCE_K:g} x noise)) + 1.5 x spread (spread = 2 x "
        "(median - q1), the larger of the baseline's and the measurement's) and more than 2us slower"
    )
    assert Rule(noise_scale=None).describe() == (
        "median > baseline x (1 + 10%) + 1.5 x spread (spread = 2 x (median - q1), the larger of the "
        "baseline's and the measurement's) and more than 2us slower"
    )
    assert Rule(0.05, 2.0, 0.0, True, "GFLOP/s", noise_scale=None).describe() == (
        "median < baseline x (1 - 5%) - 2 x spread (spread = 2 x (q3 - median), the larger of the "
        "baseline's and the measurement's) and more than 0 GFLOP/s lower"
    )


def test_the_documentation_states_the_rule_of_the_module() -> None:
    page = Path(__file__).resolve().parents[3] / "docs" / "reference" / "commands.md"
    text = page.read_text(encoding="utf-8")
    assert DEFAULT_RULE.describe() in text
    assert f"up to {CONFIRMATIONS + 1} measurements" in text
    assert (CONFIRMATIONS, BASELINE_RUNS) == (5, 5)
