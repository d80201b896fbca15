"""The plan of one tunable test in this run (:class:`ItemPlan`), made by ``plugin.planning``.

The modes (tune, check, compare) read a plan; it sits in this module of its own,
below the planning that makes it, so that they are siblings of the planning rather than above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pytest_autotune.timing.clock import Clock

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.backends.launch_limits import Pruned
    from pytest_autotune.plugin.modes.committed import Committed
    from pytest_autotune.plugin.modes.warm_start import WarmStart
    from pytest_autotune.policy import Policy
    from pytest_autotune.space.base import Space
    from pytest_autotune.tuning.spec import TunableSpec

__all__ = ["ItemPlan", "Planner"]


@dataclass(frozen=True)
class ItemPlan:
    """What the plugin does with one tunable test in this run.

    ``limited`` is the space to tune when the device's limits pruned the declared one, and
    ``pruned`` says what they removed (both None otherwise).
    """

    spec: TunableSpec
    policy: Policy
    device: str
    committed: Committed
    tune: bool
    shared_by: int
    limited: Space | None = None
    pruned: Pruned | None = None

    @property
    def space(self) -> Space:
        """The space this run searches: the declared one, within the device's limits when tuning."""
        return self.spec.space if self.limited is None else self.limited

    warm: WarmStart | None = None
    #: The clock this test's regression verdicts judge (:func:`pytest_autotune.timing.clock.resolve_clock`).
    clock: Clock = "wall"

    def for_trial_worker(self, role: str = "trial") -> ItemPlan:
        """The plan in a worker: the body runs tuning trials (role ``trial``: ``autotune.tuning`` is
        True), measures a baseline as a plain run would (role ``baseline``), or runs one side of a
        comparison (role ``compare``: a check); ``autotune.tuning`` is False in the last two."""
        return replace(self, tune=role == "trial", shared_by=1, warm=None)


#: How a run mode plans a test: its plan, or None when it is not a tunable test (raises the
#: planner's ``PlanError``). The hooks hand each mode ``planning.plan_item`` bound to the session.
Planner = Callable[["pytest.Item"], "ItemPlan | None"]
