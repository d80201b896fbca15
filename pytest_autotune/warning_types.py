"""Warning categories of the plugin (filter them with ``-W`` or ``filterwarnings`` as usual).

:func:`warn` is how the plugin emits them during a test: under ``-W error`` (or
``PYTHONWARNINGS=error``, or a ``filterwarnings = error`` ini line) ``warnings.warn`` raises the
warning, which would unwind through the plugin's internals and lose the test's result. :func:`warn`
catches the escalated warning instead and keeps its text; the test's conclusion
(``plugin/modes/run_mode.py``) then fails the test with it, after its result is recorded, so the
filter's intent holds (the warning fails the test) and the summaries still count the test.
"""

from __future__ import annotations

import warnings

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
    "take_escalated",
    "warn",
]

#: Texts of the plugin's warnings that the filters turned into errors since :func:`take_escalated`.
_ESCALATED: list[str] = []


def warn(warning: Warning, *, stacklevel: int = 2, site: tuple[str, int] | None = None) -> None:
    """``warnings.warn(warning)`` as seen from ``stacklevel`` frames up (as ``warnings.warn`` counts
    them), or at ``site`` (a file and line: the user's test) when given; when the filters make it
    an error, its text is kept for :func:`take_escalated`."""
    try:
        if site is None:
            warnings.warn(warning, stacklevel=stacklevel + 1)
        else:
            warnings.warn_explicit(warning, None, *site)
    except Warning:
        _ESCALATED.append(
            f"{type(warning).__name__} (an error under the warning filters, e.g. -W error): {warning}"
        )


def take_escalated() -> list[str]:
    """The texts :func:`warn` kept since the last call, oldest first (the list is emptied)."""
    taken = list(_ESCALATED)
    _ESCALATED.clear()
    return taken


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
