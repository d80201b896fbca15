"""Normal mode: run the committed configuration as the test and judge its timing against the baseline.

Regression rule (minimised objectives; mirrored for maximised ones): a measurement (the median of
the timed calls of one body call) regressed when ``median > baseline_median * (1 + tolerance) +
noise_k * spread`` and ``|median - baseline_median|`` exceeds the floor, where ``spread`` is the
larger of the baseline's and the measurement's spread. The spread is the interquartile range
measured on the undisturbed half of the samples, ``2 x (median - q1)`` for times
(:meth:`pytest_autotune.timing.measure.Stats.spread`).

A measurement within ``baseline * (1 + tolerance)`` (or the floor) settles the check at once.
Otherwise (a regression, or a pass that needed the noise band) the body is measured again, up to
:data:`CONFIRMATIONS` more times, each after a growing pause (interference comes in bursts that
idle time ends), stopping at the first settled measurement, and the verdict is
that of the least disturbed measurement (the lowest median,
:func:`pytest_autotune.timing.measure.least_disturbed`): a test fails only when even the least disturbed
of six measurements is beyond the limit. Baselines are least disturbed measurements too, of
:data:`BASELINE_RUNS` body calls (:func:`fresh_baseline`; after tuning, the final call and more
calls, never the finalist rounds that chose the winner). The mirror condition marks the test
*faster* than its baseline (a hint to refresh the baseline).

Why not the plain IQR and "one clean measurement clears it" (the first rule): interference from
other processes only makes kernels slower, in spikes; a few spiked samples inflated the IQR and
so widened the band that on a shared machine a real 20% (even 50%) slowdown mostly passed, and a
measurement whose samples were mostly spiked passed on its huge band without being measured
again (``benchmarks/regression_gate.py`` measures both rules).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from pytest_autotune.entry import Baseline, StoreEntry
from pytest_autotune.fixture import MEASURE_REPEAT, Autotune
from pytest_autotune.plugin.runner import run_final
from pytest_autotune.policy import Policy, format_seconds
from pytest_autotune.timing.measure import Stats, least_disturbed, pause_before_remeasuring, robust_spread
from pytest_autotune.warning_types import AutotuneNoMeasurementWarning, AutotuneRegressionWarning

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.space.base import Space

__all__ = [
    "CONFIRMATIONS",
    "CheckReport",
    "Committed",
    "Verdict",
    "baseline_spread",
    "check",
    "fresh_baseline",
    "judge",
    "select_config",
]

#: Re-measurements that must confirm a regression before the test fails: fresh calls of the body,
#: each after the timer's growing pause (:meth:`DefaultTimer.confirmation_pause`; 3.1 s in all),
#: since interference comes in bursts of up to seconds. Only a failing or borderline test pays for
#: them: a measurement within the tolerance settles the check at once. Plain runs of the five tuned
#: example kernels on a 2-vCPU VM that failed unchanged code: two confirmations back to back 3 of
#: 22; five back to back 2 of 40; two after 0.1/0.2 s 2 of 40, after 0.25/1 s 4 of 40; five after
#: pauses doubling from 0.05 s 0 of 40, from 0.1 s 1 of 40. ``benchmarks/regression_gate.py``
#: with these: 1% false alarms, 98% of +20% slowdowns caught.
CONFIRMATIONS: Final = 5
#: Measurements (calls of the body) of a refreshed baseline (``--autotune-update-baseline``); the
#: least disturbed one becomes the baseline.
BASELINE_RUNS: Final = 5


@dataclass(frozen=True)
class Verdict:
    """How the current measurement compares with the baseline.

    ``settled`` is True when the measurement is within the tolerance (or the floor) of the
    baseline, or faster beyond the band: no further measurement could change the outcome.
    """

    state: Literal["passed", "regression", "faster"]
    current: float
    baseline: float
    limit: float
    noise_band: float
    settled: bool = True

    @property
    def delta(self) -> float:
        """Relative change of the median (+0.3 = 30% larger)."""
        return (self.current - self.baseline) / self.baseline if self.baseline else 0.0


def judge(current: Stats, baseline: Baseline, policy: Policy) -> Verdict:
    """Apply the regression rule of the module docstring."""
    reference = baseline.median
    noise_band = policy.noise_k * max(
        baseline_spread(baseline, policy.maximize), current.spread(policy.maximize)
    )
    significant = abs(current.median - reference) > policy.effective_floor
    sign = -1.0 if policy.maximize else 1.0
    worse_limit = reference + sign * (abs(reference) * policy.tolerance + noise_band)
    better_limit = reference - sign * (abs(reference) * policy.tolerance + noise_band)
    if significant and sign * (current.median - worse_limit) > 0:
        return Verdict("regression", current.median, reference, worse_limit, noise_band, settled=False)
    if significant and sign * (better_limit - current.median) > 0:
        return Verdict("faster", current.median, reference, better_limit, noise_band)
    within_tolerance = sign * (current.median - reference) <= abs(reference) * policy.tolerance
    settled = within_tolerance or not significant
    return Verdict("passed", current.median, reference, worse_limit, noise_band, settled=settled)


def baseline_spread(baseline: Baseline, maximize: bool) -> float:
    """The spread of a stored baseline (its quartiles; the plain IQR for entries without them)."""
    if baseline.q1 is not None and baseline.q3 is not None:
        return robust_spread(baseline.median, baseline.q1, baseline.q3, maximize)
    return baseline.iqr or 0.0


@dataclass(frozen=True)
class Committed:
    """The configuration a normal run uses and why.

    ``state``: ``committed`` (an up-to-date entry), ``missing`` (no entry for this device: the
    declared defaults) or ``stale`` (the declaration changed since tuning: the committed
    configuration when still valid, else the defaults).
    """

    state: Literal["committed", "missing", "stale"]
    config: dict[str, Any]
    entry: StoreEntry | None
    reason: str = ""


def select_config(space: Space, entry: StoreEntry | None, policy: Policy) -> Committed:
    """Decide which configuration to run from the store ``entry`` (None when absent)."""
    if entry is None:
        return Committed("missing", space.default_config(), None, "no tuned configuration for this device")
    config = dict(entry.config)
    valid = set(config) == set(space.names) and bool(space.contains([config])[0])
    if entry.space_hash != space.space_hash:
        reason = "the search space changed since it was tuned"
        return Committed("stale", config if valid else space.default_config(), entry, reason)
    if not valid:
        reason = "the committed configuration is not valid in the declared space"
        return Committed("stale", space.default_config(), entry, reason)
    unit = (entry.baseline.unit if entry.baseline else None) or policy.unit
    if unit != policy.unit:
        reason = f"the objective changed (baseline in {unit!r}, objective now {policy.unit!r})"
        return Committed("stale", config, entry, reason)
    return Committed("committed", config, entry)


@dataclass(frozen=True)
class CheckReport:
    """What a normal run found: final state, measurement, and the verdict when timing was judged."""

    state: str
    config: dict[str, Any]
    stats: Stats | None
    verdict: Verdict | None = None
    message: str = ""
    new_baseline: Stats | None = None
    failure: str | None = None


def _fmt(value: float, policy: Policy) -> str:
    return format_seconds(value) if policy.unit == "s" else f"{value:.4g} {policy.unit}"


def regression_message(nodeid: str, device: str, verdict: Verdict, policy: Policy, config: Any) -> str:
    """The failure text of a confirmed regression, with the commands that resolve it."""
    return (
        f"performance regression on {device}: median {_fmt(verdict.current, policy)} vs baseline "
        f"{_fmt(verdict.baseline, policy)} ({verdict.delta:+.1%}); limit {_fmt(verdict.limit, policy)} "
        f"(tolerance {policy.tolerance:.0%} + {policy.noise_k:g} x spread = "
        f"{_fmt(verdict.noise_band, policy)}, "
        f"floor {_fmt(policy.effective_floor, policy)}); "
        f"the least disturbed of {CONFIRMATIONS + 1} measurements; "
        f"config {config}.\n"
        f"  expected? refresh the baseline: pytest --autotune-update-baseline '{nodeid}'\n"
        f"  re-tune:                        pytest --autotune '{nodeid}'"
    )


def _measure(item: pytest.Function, autotune: Autotune, config: dict[str, Any], attempt: int) -> Stats | None:
    """Re-measurement ``attempt`` (1, 2, ...), after the timer's pause (pytest-benchmark records only
    the first call of the test)."""
    pause = pause_before_remeasuring(autotune.timer, attempt)
    if pause > 0:
        time.sleep(pause)
    return run_final(item, autotune, config, repeat=MEASURE_REPEAT, benchmark=False).stats


def _measure_again(
    item: pytest.Function, autotune: Autotune, config: dict[str, Any], times: int
) -> list[Stats]:
    measured = (_measure(item, autotune, config, attempt) for attempt in range(1, times + 1))
    return [stats for stats in measured if stats is not None]


def fresh_baseline(
    item: pytest.Function, autotune: Autotune, config: dict[str, Any], first: Stats, maximize: bool
) -> Stats:
    """A baseline: the least disturbed of ``first`` and :data:`BASELINE_RUNS` - 1 more measurements
    (spread over time by the timer's pauses, as confirmations are).

    Only measurements taken after ``config`` was chosen count: a tuner's winner is the finalist
    whose rounds happened to be fastest, so its rounds are biased low (the winner's curse) and a
    baseline made of them would fail later runs of unchanged code.
    """
    return least_disturbed([first, *_measure_again(item, autotune, config, BASELINE_RUNS - 1)], maximize)


def check(
    item: pytest.Function,
    autotune: Autotune,
    committed: Committed,
    *,
    policy: Policy,
    timing_shared_by: int,
    update_baseline: bool,
) -> CheckReport:
    """Run the test with the committed configuration (the real test) and judge it (module docstring).

    Exceptions of the body propagate (they are the test's outcome); a confirmed regression under
    ``check="fail"`` and the other policy failures come back as :attr:`CheckReport.failure`.
    """
    config = committed.config
    first = run_final(item, autotune, config, repeat=MEASURE_REPEAT)
    stats = first.stats
    if stats is None:
        warnings.warn(
            AutotuneNoMeasurementWarning(
                f"{item.nodeid}: the test never called autotune.measure() or autotune.record(); "
                "its timing is not checked"
            ),
            stacklevel=2,
        )
        return CheckReport("unmeasured", config, None, message="never measured")
    if committed.state == "missing" and policy.missing == "fail":
        missing = (
            f"no tuned configuration for device {autotune.device} (--autotune-missing=fail); "
            f"tune it: pytest --autotune=missing '{item.nodeid}'"
        )
        return CheckReport("missing", config, stats, message=committed.reason, failure=missing)
    if committed.state != "committed":
        return CheckReport(committed.state, config, stats, message=committed.reason)
    if update_baseline:
        new_baseline = fresh_baseline(item, autotune, config, stats, policy.maximize)
        return CheckReport("baseline-updated", config, stats, new_baseline=new_baseline)
    baseline = committed.entry.baseline if committed.entry else None
    if baseline is None:
        return CheckReport("unchecked", config, stats, message="the entry has no baseline")
    if policy.check == "off":
        return CheckReport("unchecked", config, stats, message="--autotune-check=off")
    if timing_shared_by > 1:
        why = f"device shared by {timing_shared_by} xdist workers: timings would interfere"
        failure = None
        if policy.check == "fail" and "check" in policy.explicit:
            failure = (
                f"--autotune-check=fail was requested but timing cannot be checked: {why}; run with one "
                "worker per device, or pass --autotune-allow-shared-device to check anyway"
            )
        return CheckReport("unchecked", config, stats, message=why, failure=failure)
    measurements = [stats]
    verdict = judge(stats, baseline, policy)
    while not verdict.settled and len(measurements) <= CONFIRMATIONS:
        again = _measure(item, autotune, config, len(measurements))
        if again is None:
            break
        measurements.append(again)
        stats = least_disturbed(measurements, policy.maximize)
        verdict = judge(stats, baseline, policy)
    if verdict.state != "regression":
        return CheckReport(verdict.state, config, stats, verdict)
    message = regression_message(item.nodeid, autotune.device, verdict, policy, config)
    if policy.check == "fail":
        return CheckReport("regression", config, stats, verdict, message, failure=message)
    warnings.warn(AutotuneRegressionWarning(f"{item.nodeid}: {message}"), stacklevel=2)
    return CheckReport("regression", config, stats, verdict, message)
