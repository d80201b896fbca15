"""Warning categories of the plugin (filter them with ``-W`` or ``filterwarnings`` as usual)."""

from __future__ import annotations

__all__ = [
    "AutotuneBusyBaselineWarning",
    "AutotuneClockWarning",
    "AutotuneDefineWarning",
    "AutotuneInconclusiveWarning",
    "AutotuneNoMeasurementWarning",
    "AutotuneRegressionWarning",
    "AutotuneSharedFixtureWarning",
    "AutotuneStaleWarning",
    "AutotuneTransferWarning",
    "AutotuneWarning",
]


class AutotuneWarning(UserWarning):
    """Base class of pytest-autotune warnings."""


class AutotuneNoMeasurementWarning(AutotuneWarning):
    """A tunable test ran without calling ``autotune.measure`` or ``autotune.record``."""


class AutotuneRegressionWarning(AutotuneWarning):
    """A performance regression, reported as a warning under ``--autotune-check=warn``."""


class AutotuneSharedFixtureWarning(AutotuneWarning):
    """Function-scoped fixtures are set up once and shared by every trial of a tuning run."""


class AutotuneTransferWarning(AutotuneWarning):
    """A transfer source (another device's or parametrization's history) was skipped, naming it."""


class AutotuneInconclusiveWarning(AutotuneWarning):
    """``--autotune-compare`` could not decide within its time cap whether the change is slower."""


class AutotuneDefineWarning(AutotuneWarning):
    """The kernel source ``#define``s a tuned parameter itself, overriding the configured value."""


class AutotuneBusyBaselineWarning(AutotuneWarning):
    """A baseline was written whose noise gives it a tolerance above 30%: the machine was busy."""


class AutotuneStaleWarning(AutotuneWarning):
    """A plain run used a stale entry (the declaration changed since tuning): its time was not
    judged against a baseline; ``--autotune-missing=fail`` makes it a failure."""


class AutotuneClockWarning(AutotuneWarning):
    """The clock ``--autotune-clock`` asked for cannot judge a test, or a check could not judge on
    it (``cpu`` on a GPU; a baseline without CPU times; parallelism not judged on a busy machine)."""
