"""What every run mode is (:class:`RunMode`), and the step every mode's outcome ends in (:func:`conclude`).

A pytest process runs in one mode, chosen once when the plugin is configured
(:func:`pytest_autotune.plugin.pytest_configure`, from the settings, the worker spec a parent gave
this process and the commit ``--autotune-compare`` names), never again per test:

* ``tune`` (``--autotune``) and ``tune-missing`` (``--autotune=missing``: the tests without an
  up-to-date entry; the others are checked):
  :class:`~pytest_autotune.plugin.modes.execution.TuneMode`;
* ``check`` (a plain run: each test once with its committed configuration, its time judged):
  :class:`~pytest_autotune.plugin.modes.execution.CheckMode`;
* ``update-baseline`` (``--autotune-update-baseline``: check, and measure the baseline afresh):
  :class:`~pytest_autotune.plugin.modes.execution.UpdateBaselineMode`;
* ``compare`` (``--autotune-compare=REF``: the test at REF against the working tree):
  :class:`~pytest_autotune.plugin.compare.mode.CompareMode`;
* ``trial-worker`` and ``baseline-worker`` (a worker the plugin started: serve one test's trials,
  or a baseline's measurements, to its parent): :class:`~pytest_autotune.plugin.workers.main.WorkerMode`;
* ``compare-worker`` (one side of a comparison):
  :class:`~pytest_autotune.plugin.compare.worker.CompareWorkerMode`.

Each mode's :meth:`RunMode.plan` makes a test's plan at setup (the hooks hand every mode
:func:`~pytest_autotune.plugin.modes.planning.plan_item`, which gives a worker its role's plan), and
its :meth:`RunMode.run` is the test's call: it gets that plan and the test's ``autotune``
fixture, and returns an :class:`~pytest_autotune.plugin.report.results.ItemOutcome` (a worker
returns None: its parent reports). The modes implement this protocol without importing it, and the
hooks, not this module, construct them: a module above every mode would add a floor to the import
graph, which ``tests/test_architecture.py`` holds at ten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import pytest

from pytest_autotune.plugin.report.results import PROPERTY
from pytest_autotune.warning_types import take_escalated

if TYPE_CHECKING:
    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin.modes.item_plan import ItemPlan
    from pytest_autotune.plugin.report.results import ItemOutcome

__all__ = ["RunMode", "conclude"]


class RunMode(Protocol):
    """The mode of this pytest process (see the module docstring for the modes)."""

    @property
    def name(self) -> str:
        """The mode's name (``tune``, ``check``, ``compare``, ``trial-worker``, ...)."""

    def plan(self, item: pytest.Item) -> ItemPlan | None:
        """``item``'s plan in this mode, made at setup (None: not a tunable test); raises
        ``planning.PlanError`` on misuse and ``planning.DeviceMissing`` when its device is absent."""

    def run(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> ItemOutcome | None:
        """The call of the tunable test ``item`` in this mode: its outcome (None in a worker)."""


def conclude(item: pytest.Item, outcome: ItemOutcome) -> None:
    """Attach the outcome's result to the test's report, then skip the test or fail it (its failure,
    and the plugin's warnings that the filters made errors: :func:`~pytest_autotune.warning_types.warn`)."""
    item.user_properties.append((PROPERTY, outcome.result.to_json()))
    failure = outcome.failure
    escalated = take_escalated()
    if escalated:
        failure = "\n".join([*([failure] if failure is not None else []), *escalated])
    if outcome.skip is not None and not escalated:
        pytest.skip(outcome.skip)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
