"""Every registered strategy passes the public conformance suite (``pytest_autotune.testing``)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies import available_strategies
from pytest_autotune.strategies.base import SpaceExhausted, Strategy
from pytest_autotune.strategies.classic.random_search import RandomSearch
from pytest_autotune.testing import StrategyConformance, StrategyUnderTest

#: Options that keep the expensive strategies quick on the suite's small spaces.
QUICK_OPTIONS: dict[str, dict[str, Any]] = {
    "bo": {"initial": 4, "fit_restarts": 0, "candidates": 128, "local_starts": 2},
}
#: Strategies whose order does not depend on the seed.
UNSEEDED = {"exhaustive"}


class TestRegisteredStrategies(StrategyConformance):
    """The suite over every strategy in the registry."""

    @pytest.fixture(params=available_strategies())
    def strategy_under_test(self, request: pytest.FixtureRequest) -> StrategyUnderTest:
        name: str = request.param
        return StrategyUnderTest(name, QUICK_OPTIONS.get(name, {}), seeded=name not in UNSEEDED)


class Sweep(Strategy):
    """A third-party strategy written against the protocol only: a seeded shuffle of the indices."""

    name: ClassVar[str] = "sweep"

    def __init__(self, space: Space, *, rng: np.random.Generator, stride: int = 1) -> None:
        super().__init__(space, rng=rng)
        self.order = [int(i) for i in rng.permutation(space.size)][::stride]
        self.told: set[object] = set()

    def ask(self) -> Points:
        while self.order:
            point = self.space.at_index([self.order.pop()])
            if point.keys()[0] not in self.told and point.keys()[0] not in self.under_way:
                return point
        raise SpaceExhausted("sweep: done")

    def tell(self, point: Points, outcome: object) -> None:
        self.told.add(point.keys()[0])


class TestAThirdPartyStrategy(StrategyConformance):
    """The suite as a user runs it: a class that is not registered, with an option."""

    strategy = Sweep
    options: ClassVar[dict[str, Any]] = {"stride": 1}


@pytest.mark.parametrize(
    "target", ["random", "pytest_autotune.strategies.classic.random_search:RandomSearch", RandomSearch]
)
def test_a_strategy_is_named_by_registry_name_import_path_or_class(target: Any) -> None:
    assert StrategyUnderTest(target).cls is RandomSearch


def test_a_target_that_is_not_a_strategy_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a Strategy subclass"):
        _ = StrategyUnderTest("pytest_autotune.space:Space").cls
    with pytest.raises(ValueError, match="unknown strategy 'nope'"):
        _ = StrategyUnderTest("nope").cls
