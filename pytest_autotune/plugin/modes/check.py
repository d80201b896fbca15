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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_autotune.entry import StoreEntry
from pytest_autotune.fixture import MEASURE_REPEAT, Autotune
from pytest_autotune.plugin.modes.baseline import (
    BaselineFailed,
    BaselineMeter,
    MeasuredBaseline,
    measure_again,
)
from pytest_autotune.plugin.modes.committed import Committed
from pytest_autotune.plugin.workers.runner import run_final
from pytest_autotune.policy import Policy
from pytest_autotune.timing.measure import Stats, least_disturbed
from pytest_autotune.timing.regression import CONFIRMATIONS, Verdict
from pytest_autotune.warning_types import AutotuneNoMeasurementWarning, AutotuneRegressionWarning, warn

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.space.base import Space

__all__ = ["CheckReport", "Committed", "check", "regression_message", "select_config"]


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


def regression_message(nodeid: str, device: str, verdict: Verdict, policy: Policy, config: Any) -> str:
    """The failure text of a confirmed regression, with the commands that resolve it."""
    rule = policy.rule
    return (
        f"performance regression on {device}: median {rule.format(verdict.current)} vs baseline "
        f"{rule.format(verdict.baseline)} ({verdict.delta:+.1%}); limit {rule.format(verdict.limit)} "
        f"({rule.describe_tolerance(verdict)}; noise band {rule.format(verdict.noise_band)}; "
        f"rule: {rule.describe()}); the least disturbed of {CONFIRMATIONS + 1} measurements; "
        f"config {config}.\n"
        f"  expected? refresh the baseline: pytest --autotune-update-baseline '{nodeid}'\n"
        f"  re-tune:                        pytest --autotune '{nodeid}'"
    )


def check(
    item: pytest.Function,
    autotune: Autotune,
    committed: Committed,
    *,
    policy: Policy,
    timing_shared_by: int,
    update_baseline: BaselineMeter | None = None,
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
    measurements = [stats]
    rule = policy.rule
    verdict = rule.judge(stats, baseline)
    while not verdict.settled and len(measurements) <= CONFIRMATIONS:
        again = measure_again(item, autotune, config, len(measurements))
        if again is None:
            break
        measurements.append(again)
        stats = least_disturbed(measurements, policy.maximize)
        verdict = rule.judge(stats, baseline)
    if verdict.state != "regression":
        return CheckReport(verdict.state, config, stats, verdict)
    message = regression_message(item.nodeid, autotune.device, verdict, policy, config)
    if policy.check == "fail":
        return CheckReport("regression", config, stats, verdict, message, failure=message)
    warn(AutotuneRegressionWarning(f"{item.nodeid}: {message}"), stacklevel=2)
    return CheckReport("regression", config, stats, verdict, message)
