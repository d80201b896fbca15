"""Timing statistics, the default timer, and the regression rule, against hand-computed answers."""

from __future__ import annotations

import sys
import time

import pytest

from pytest_autotune.backends.opencl.backend import events_in
from pytest_autotune.entry import Baseline
from pytest_autotune.policy import merge_policy
from pytest_autotune.timing.measure import (
    DefaultTimer,
    Stats,
    device_seconds,
    round_significant,
)


def test_stats_of_known_sample() -> None:
    stats = Stats.of([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats.median == 3.0
    assert (stats.q1, stats.q3, stats.iqr) == (2.0, 4.0, 2.0)
    assert (stats.min, stats.max, stats.rounds) == (1.0, 100.0, 5)
    assert stats.mean == pytest.approx(22.0)
    assert stats.total == pytest.approx(110.0)
    # fences 2 - 3 = -1 and 4 + 3 = 7: 100 is the only IQR outlier
    assert (stats.ld15iqr, stats.hd15iqr, stats.iqr_outliers) == (1.0, 4.0, 1)
    assert stats.stddev_outliers == 1
    assert Stats.from_dict(stats.to_dict()) == stats


def test_stats_of_one_sample_and_bad_samples() -> None:
    single = Stats.of([5e-6])
    assert (single.median, single.iqr, single.stddev, single.rounds) == (5e-6, 0.0, 0.0, 1)
    with pytest.raises(ValueError, match="no samples"):
        Stats.of([])
    with pytest.raises(ValueError, match="finite"):
        Stats.of([1.0, float("nan")])


def test_baseline_block_is_rounded_and_complete() -> None:
    stats = Stats.of([1.0000001234e-4, 1.0000002e-4, 1.2e-4])
    block = stats.baseline("s")
    assert set(block) == {"median", "iqr", "q1", "q3", "min", "rounds", "unit"}
    assert block["median"] == 1.00000e-4
    assert block["rounds"] == 3
    assert round_significant(123456789.0, 3) == 123000000.0
    assert round_significant(0.0) == 0.0


def test_default_timer_measures_wall_clock_and_syncs_inside_the_interval() -> None:
    calls: list[str] = []

    def work() -> str:
        calls.append("work")
        return "result"

    def sync() -> None:
        calls.append("sync")
        time.sleep(0.02)

    result, seconds = DefaultTimer(sync=sync)(work, None)
    assert result == "result"
    assert calls == ["work", "sync"]
    assert seconds >= 0.02


def test_opencl_events_never_imports_pyopencl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "pyopencl", raising=False)
    assert events_in(object()) is None
    assert device_seconds(object()) is None
    assert "pyopencl" not in sys.modules


def _baseline(median: float, iqr: float = 0.0) -> Baseline:
    return Baseline(median, iqr=iqr)


def test_regression_rule() -> None:
    policy = merge_policy([])  # tolerance 10%, k 1.5, floor 2us
    # 30% slower, no noise: regression; limit = 100us * 1.1
    verdict = policy.rule.judge(Stats.of([130e-6] * 5), _baseline(100e-6))
    assert verdict.state == "regression"
    assert verdict.limit == pytest.approx(110e-6)
    assert verdict.delta == pytest.approx(0.3)
    # the band widens with the larger IQR: 1.5 * 20us = 30us on top of 110us
    noisy = Stats.of([120e-6, 130e-6, 130e-6, 140e-6, 150e-6])  # q1 130, q3 140 -> IQR 10us
    verdict = policy.rule.judge(noisy, _baseline(100e-6, iqr=20e-6))
    assert verdict.state == "passed"
    assert verdict.noise_band == pytest.approx(30e-6)
    # below the 2us floor nothing is a regression, even +50%
    assert policy.rule.judge(Stats.of([1.5e-6] * 3), _baseline(1e-6)).state == "passed"
    # faster beyond the band
    assert policy.rule.judge(Stats.of([50e-6] * 3), _baseline(100e-6)).state == "faster"


def test_regression_rule_for_a_maximised_objective() -> None:
    policy = merge_policy([{"objective": "GFLOP/s", "maximize": True}])
    assert policy.rule.judge(Stats.of([70.0] * 3), _baseline(100.0)).state == "regression"
    assert policy.rule.judge(Stats.of([95.0] * 3), _baseline(100.0)).state == "passed"
    assert policy.rule.judge(Stats.of([130.0] * 3), _baseline(100.0)).state == "faster"


def test_upward_spikes_do_not_widen_the_noise_band() -> None:
    """Preemption makes a few samples much slower: the band ignores them, a real slowdown still fails."""
    policy = merge_policy([])
    clean = [100e-6, 101e-6, 99e-6, 100e-6, 102e-6, 100e-6, 99e-6, 101e-6, 100e-6, 100e-6]
    baseline = Baseline.measured(Stats.of(clean), "s")
    slowed = [120e-6, 121e-6, 119e-6, 120e-6, 122e-6, 120e-6, 119e-6]
    spiked = Stats.of([*slowed, 4000e-6, 4100e-6, 3900e-6])  # 3 of 10 samples preempted
    assert spiked.iqr > 1000e-6  # the plain IQR is dominated by the spikes
    assert spiked.spread() == pytest.approx(1e-6)  # 2 x (median 120.5 - q1 120)
    verdict = policy.rule.judge(spiked, baseline)
    assert verdict.state == "regression"
    assert verdict.noise_band == pytest.approx(1.5 * max(spiked.spread(), Stats.of(clean).spread()))
    # the same spikes on unchanged code stay within the band
    assert policy.rule.judge(Stats.of([*clean[:7], 4000e-6, 4100e-6, 3900e-6]), baseline).state == "passed"


def test_the_spread_of_a_maximised_objective_uses_the_upper_half() -> None:
    # throughput drops (downward spikes) are the interference for a maximised objective
    stats = Stats.of([100.0, 101.0, 99.0, 100.0, 20.0, 25.0])
    assert stats.spread(maximize=True) == pytest.approx(2 * (stats.q3 - stats.median))
    assert stats.spread(maximize=True) < stats.iqr


def test_only_a_measurement_within_the_tolerance_settles_the_check() -> None:
    policy = merge_policy([])  # tolerance 10%, k 1.5, floor 2us
    baseline = _baseline(100e-6)
    assert policy.rule.judge(Stats.of([105e-6] * 5), baseline).settled  # within 10%
    assert policy.rule.judge(Stats.of([50e-6] * 5), baseline).settled  # faster beyond the band
    assert policy.rule.judge(Stats.of([1.5e-6] * 3), _baseline(1e-6)).settled  # below the floor
    assert not policy.rule.judge(Stats.of([130e-6] * 5), baseline).settled  # a regression: measure again
    noisy = Stats.of([110e-6, 115e-6, 120e-6, 125e-6, 130e-6])  # passes only thanks to its spread
    verdict = policy.rule.judge(noisy, baseline)
    assert verdict.state == "passed"
    assert not verdict.settled


def test_the_least_disturbed_measurement_has_the_lowest_median() -> None:
    from pytest_autotune.timing.measure import least_disturbed

    slow, fast = Stats.of([3.0, 3.0, 9.0]), Stats.of([2.0, 2.5, 2.0])
    assert least_disturbed([slow, fast]) is fast
    assert least_disturbed([slow, fast], maximize=True) is slow
    with pytest.raises(ValueError, match="no measurements"):
        least_disturbed([])
