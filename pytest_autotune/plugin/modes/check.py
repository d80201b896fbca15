"""Normal mode: run the committed configuration as the test, measure it, confirm and report.

The rule that judges the measurement against the stored baseline, its confirmation schedule and
the tolerance derived from the baseline's noise are those of :mod:`pytest_autotune.timing.regression`.
This module runs the body (:func:`check`): it measures once, measures again (after the timer's
growing pause) while the rule's verdict is not settled, up to
:data:`~pytest_autotune.timing.regression.CONFIRMATIONS` more times, judges the least disturbed
measurement, and reports a confirmed regression as a failure or a warning, naming the tolerance
applied and where it came from. ``--autotune-update-baseline`` measures a new baseline with the
meter it is given (:mod:`pytest_autotune.plugin.modes.baseline`: fresh processes when trials are isolated);
:func:`select_config` picks the configuration a normal run uses.

The verdict is taken on the test's clock (``--autotune-clock``; :mod:`pytest_autotune.timing.clock`):
the measurement and the baseline on that clock. A baseline without CPU times (written before the
CPU clock was read) is judged on ``wall``, and the report says so. On the ``cpu`` clock a kept
verdict is followed by the parallelism guard (:mod:`pytest_autotune.timing.parallelism`), whose
drop is a regression too and whose "not judged" is reported beside the verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_autotune.entry import Baseline, StoreEntry
from pytest_autotune.fixture import MEASURE_REPEAT, Autotune
from pytest_autotune.plugin.modes.baseline import (
    BaselineFailed,
    BaselineMeter,
    MeasuredBaseline,
    measure_again,
)
from pytest_autotune.plugin.modes.committed import Committed
from pytest_autotune.plugin.modes.user_warnings import warn_at_test
from pytest_autotune.plugin.workers.runner import run_final
from pytest_autotune.policy import Policy
from pytest_autotune.timing.clock import CPU, WALL, Clock, on_clock
from pytest_autotune.timing.measure import Stats, least_disturbed_both
from pytest_autotune.timing.parallelism import ParallelismVerdict, judge_parallelism
from pytest_autotune.timing.regression import CONFIRMATIONS, Verdict
from pytest_autotune.warning_types import (
    AutotuneNoMeasurementWarning,
    AutotuneRegressionWarning,
    AutotuneStaleWarning,
    warn,
)

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.space.base import Space

__all__ = ["CheckReport", "Committed", "check", "regression_message", "select_config", "stale_message"]


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
    new_baseline: MeasuredBaseline | None = None
    failure: str | None = None
    #: The clock that judged (:mod:`pytest_autotune.timing.clock`) and why not the one asked for.
    clock: Clock = WALL
    clock_note: str = ""
    parallelism: ParallelismVerdict | None = None


def regression_message(
    nodeid: str, device: str, verdict: Verdict, policy: Policy, config: Any, clock: Clock = WALL
) -> str:
    """The failure text of a confirmed regression, with the commands that resolve it."""
    rule = policy.rule
    return (
        f"performance regression on {device} ({_CLOCK_NAMES[clock]}): median {rule.format(verdict.current)} "
        f"vs baseline {rule.format(verdict.baseline)} ({verdict.delta:+.1%}); "
        f"limit {rule.format(verdict.limit)} ({rule.describe_tolerance(verdict)}; "
        f"noise band {rule.format(verdict.noise_band)}; "
        f"rule: {rule.describe()}); the least disturbed of {CONFIRMATIONS + 1} measurements; "
        f"config {config}.\n"
        f"  expected? refresh the baseline: pytest --autotune-update-baseline '{nodeid}'\n"
        f"  re-tune:                        pytest --autotune '{nodeid}'"
    )


#: How a report names the clock that judged.
_CLOCK_NAMES = {WALL: "wall/device time", CPU: "CPU time"}


def judging_clock(clock: Clock, baseline: Baseline, stats: Stats) -> tuple[Clock, str]:
    """The clock a check judges on: ``clock``, unless the measurement has no CPU times (values that
    are not times of ``autotune.measure``, a timer that reads none: ``wall``, silently) or the
    baseline has none (``wall``, with the reason)."""
    if clock != CPU or stats.cpu is None:  # values that are no times of measure(), a timer without CPU
        return WALL, ""
    if baseline.cpu is None:
        return WALL, (
            "judged on wall time: the baseline has no CPU time (measured before pytest-autotune read "
            "the CPU clock); re-measure it to judge on CPU time: pytest --autotune-update-baseline"
        )
    return clock, ""


def check(
    item: pytest.Function,
    autotune: Autotune,
    committed: Committed,
    *,
    policy: Policy,
    timing_shared_by: int,
    update_baseline: BaselineMeter | None = None,
    clock: Clock = WALL,
) -> CheckReport:
    """Run the test with the committed configuration (the real test) and judge it (module docstring).

    With ``update_baseline`` (``--autotune-update-baseline``) it measures a new baseline with that
    meter instead of judging. Exceptions of the body propagate (they are the test's outcome); a
    confirmed regression under ``check="fail"`` and the other policy failures come back as
    :attr:`CheckReport.failure`.
    """
    config = committed.config
    first = run_final(item, autotune, config, repeat=MEASURE_REPEAT)
    stats = first.stats
    if stats is None:
        warn(
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
    if committed.state == "stale":
        return _stale(item, autotune.device, committed, stats, policy)
    if committed.state != "committed":
        return CheckReport(committed.state, config, stats, message=committed.reason)
    if update_baseline is not None:
        try:
            new_baseline = update_baseline(config, stats)
        except BaselineFailed as exc:
            return CheckReport("unchecked", config, stats, message=str(exc), failure=str(exc))
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
    clock, note = judging_clock(clock, baseline, stats)
    measurements = [stats]
    judge = _Judge(policy, baseline, clock)
    verdict, parallel = judge(stats)
    while not (verdict.settled and parallel.state != "dropped") and len(measurements) <= CONFIRMATIONS:
        again = measure_again(item, autotune, config, len(measurements))
        if again is None:
            break
        measurements.append(again)
        stats = least_disturbed_both(measurements, policy.maximize)
        verdict, parallel = judge(stats)
    judged = _judged_report(clock, note, parallel)
    if verdict.state != "regression" and parallel.state != "dropped":
        return judged(CheckReport(verdict.state, config, stats, verdict))
    message = regression_message(item.nodeid, autotune.device, verdict, policy, config, clock)
    if verdict.state != "regression":
        message = f"performance regression on {autotune.device}: {parallel.message}; config {config}"
    if policy.check == "fail":
        return judged(CheckReport("regression", config, stats, verdict, message, failure=message))
    warn(AutotuneRegressionWarning(f"{item.nodeid}: {message}"), stacklevel=2)
    return judged(CheckReport("regression", config, stats, verdict, message))


def _judged_report(
    clock: Clock, note: str, parallel: ParallelismVerdict
) -> Callable[[CheckReport], CheckReport]:
    """Adds to a report the clock that judged, why, and the parallelism guard (on the CPU clock)."""

    def add(report: CheckReport) -> CheckReport:
        guard = parallel if clock == CPU else None
        return replace(report, clock=clock, clock_note=note, parallelism=guard)

    return add


@dataclass(frozen=True)
class _Judge:
    """The regression rule on one clock, and on the CPU clock the parallelism guard after it."""

    policy: Policy
    baseline: Baseline
    clock: Clock

    def __call__(self, stats: Stats) -> tuple[Verdict, ParallelismVerdict]:
        judged, reference = stats.on(self.clock), on_clock(self.baseline, self.clock)
        if judged is None or reference is None:  # not read on this clock: judging_clock said so
            judged, reference = stats, self.baseline
        verdict = self.policy.rule.judge(judged, reference)
        if self.clock != CPU or verdict.state == "regression" or self.baseline.cpu is None:
            return verdict, ParallelismVerdict("unjudged", "")
        cpu = self.baseline.cpu
        return verdict, judge_parallelism(stats.parallelism, cpu.parallelism, cpu.parallelism_noise)


def stale_message(nodeid: str, device: str, committed: Committed, stats: Stats, policy: Policy) -> str:
    """What a plain run on a stale entry ran, how its time compares with the stored baseline (not a
    verdict: that baseline may be another configuration's, of another declaration), and the fix;
    under ``missing="fail"`` it is a failure's text."""
    rule, entry = policy.rule, committed.entry
    same = entry is not None and dict(entry.config) == committed.config
    which = "the committed configuration" if same else "the declared defaults"
    ran = rule.format(stats.median)
    text = f"stale entry on {device}: {committed.reason}; ran {which} {committed.config} at {ran}"
    baseline = entry.baseline if entry is not None else None
    if baseline is not None and baseline.median:
        of = "" if same else f" of {dict(entry.config) if entry else '?'}"
        change = f"{stats.median / baseline.median - 1:+.1%}"
        text += f", {change} against the stored baseline {rule.format(baseline.median)}{of}"
    option = (
        "--autotune-missing=fail" if policy.missing == "fail" else "--autotune-missing=fail makes it fail"
    )
    retune = f"pytest --autotune=missing '{nodeid}'"
    return f"{text}; its time is not checked until it is re-tuned: {retune} ({option})"


def _stale(item: pytest.Item, device: str, committed: Committed, stats: Stats, policy: Policy) -> CheckReport:
    """A stale entry: a warning on the test, or a failure under ``--autotune-missing=fail`` (or when
    warnings are errors)."""
    message = stale_message(item.nodeid, device, committed, stats, policy)
    report = CheckReport("stale", committed.config, stats, message=committed.reason)
    if policy.missing == "fail":
        return replace(report, failure=message)
    # under -W error the warning is kept and fails the test once its result is recorded
    warn_at_test(item, AutotuneStaleWarning(f"{item.nodeid}: {message}"))
    return report
