"""The warning given when a baseline is written whose tolerance makes the check nearly blind.

A baseline stores the noise between the fresh processes that measured it, and the regression rule
derives its tolerance from that noise (:meth:`pytest_autotune.timing.regression.Rule.tolerance_for`).
On a busy machine the noise, and so the tolerance, can reach 100% and more: a real slowdown of 30%
then passes every plain run. Nothing in a passing run shows it, so the user is told when the
baseline is written (after tuning, and ``--autotune-update-baseline``), with the command that
measures it again. The warning points at the user's test (its file and line), not at this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from pytest_autotune.plugin.modes.user_warnings import warn_at_test
from pytest_autotune.warning_types import AutotuneBusyBaselineWarning, warn

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.entry import Baseline
    from pytest_autotune.timing.regression import Rule

__all__ = ["BUSY_TOLERANCE", "busy_message", "warn_if_busy"]

#: A tolerance derived from the noise above this is worth a warning.
BUSY_TOLERANCE: Final = 0.30


def busy_message(nodeid: str, device: str, baseline: Baseline, rule: Rule) -> str | None:
    """The warning's text when ``baseline``'s noise gives it a tolerance above
    :data:`BUSY_TOLERANCE`; None otherwise, and when the tolerance was set (not derived)."""
    if rule.noise_scale is None or baseline.noise is None:
        return None
    tolerance = rule.tolerance_for(baseline)
    if tolerance <= BUSY_TOLERANCE:
        return None
    return (
        f"{nodeid}: the baseline on {device} varied by {baseline.noise:.0%} between the processes that "
        f"measured it: this machine was busy; the check will only catch slowdowns beyond "
        f"{tolerance:.0%}; re-measure on a quiet machine with "
        f"pytest --autotune-update-baseline '{nodeid}'"
    )


def warn_if_busy(
    nodeid: str, device: str, baseline: Baseline, rule: Rule, *, item: pytest.Item | None = None
) -> float:
    """Warn (:class:`AutotuneBusyBaselineWarning`) when :func:`busy_message` has a text, at the
    definition of ``item`` (the test) when given; returns the tolerance the new baseline will be
    judged with."""
    message = busy_message(nodeid, device, baseline, rule)
    if message is not None:
        if item is None:
            warn(AutotuneBusyBaselineWarning(message), stacklevel=2)
        else:
            warn_at_test(item, AutotuneBusyBaselineWarning(message))
    return rule.tolerance_for(baseline)
