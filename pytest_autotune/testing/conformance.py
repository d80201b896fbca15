"""The strategy conformance suite (public as :class:`pytest_autotune.testing.StrategyConformance`).

A strategy is a small ask/tell object (see :mod:`pytest_autotune.strategies.base`); everything a
tuning run relies on beyond that interface is checked here, on small spaces with known constraints
and a known optimum, so that a third-party strategy can prove it fits the tuner before anyone tunes
a kernel with it. The checks drive the strategy directly where the property is the strategy's own
(valid proposals, no repeats, exhaustion) and through :class:`~pytest_autotune.tuning.tuner.Tuner` where it
is about the run (seeding, journal resume).

This module imports numpy and the tuner; :mod:`pytest_autotune.testing` loads it on first use.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from pytest_autotune.outcome import FAILURE_LABELS, Outcome
from pytest_autotune.space import Bool, Categorical, Interval, Permutation, Pow2, Space, build_space
from pytest_autotune.space.base import Points
from pytest_autotune.strategies import get_strategy
from pytest_autotune.strategies.base import SpaceExhausted, Strategy
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.trials import TuningResult
from pytest_autotune.tuning.tuner import MAX_KNOWN_PROPOSALS, Tuner

__all__ = ["StrategyConformance", "StrategyUnderTest", "toy_objective", "toy_space"]

Objective = Callable[[Mapping[str, Any]], Outcome]

# -- the spaces of the suite ---------------------------------------------------------------------------
_MODE_COST = {"a": 0.0, "b": 1.0, "c": 0.5}


def toy_space() -> Space:
    """108 configurations of ``x`` (1..8), ``y`` (powers of two to 16), ``mode`` (a/b/c), ``x*y <= 64``."""
    return build_space(
        {"x": Interval(1, 8), "y": Pow2(1, 16), "mode": Categorical("a", "b", "c")},
        [lambda x, y: x * y <= 64],
    )


def toy_objective(config: Mapping[str, Any]) -> Outcome:
    """Minimum 1.0 at x=5, y=4, mode='a'; x == 7 fails to compile, y == 16 with mode 'c' at run time."""
    x, y, mode = config["x"], config["y"], config["mode"]
    if x == 7:
        return Outcome.failed("compile", "x == 7 does not build")
    if y == 16 and mode == "c":
        return Outcome.failed("runtime", "out of resources")
    return Outcome.ok(1.0 + (x - 5) ** 2 + (math.log2(y) - 2) ** 2 + _MODE_COST[mode])


def _tiny_space() -> Space:
    """11 configurations: ``a`` in 1..4, ``b`` in p/q/r, without (4, r)."""
    return build_space(
        {"a": Interval(1, 4), "b": Categorical("p", "q", "r")}, [lambda a, b: a < 4 or b != "r"]
    )


def _tiny_objective(config: Mapping[str, Any]) -> Outcome:
    """Minimum 1.0 at a=1, b='q'; (3, p) fails at run time."""
    if config["a"] == 3 and config["b"] == "p":
        return Outcome.failed("runtime", "launch failure")
    return Outcome.ok(config["a"] + {"p": 0.5, "q": 0.0, "r": 1.0}[config["b"]])


def _permutation_space() -> Space:
    """48 configurations: a loop order, a tile size and an unroll flag (unrolled tiles are >= 4)."""
    return build_space(
        {"order": Permutation("ijk"), "tile": Pow2(1, 16), "unroll": Bool()},
        [lambda tile, unroll: tile >= 4 or not unroll],
    )


def _permutation_objective(config: Mapping[str, Any]) -> Outcome:
    if config["order"][0] == "k" and config["tile"] == 1:
        return Outcome.failed("correctness", "wrong result")
    mismatch = sum(a != b for a, b in zip(config["order"], "kij", strict=True))
    return Outcome.ok(1.0 + mismatch + abs(math.log2(config["tile"]) - 3) + (not config["unroll"]))


#: The spaces every proposal is checked on: (space factory, objective).
SPACES: dict[str, tuple[Callable[[], Space], Objective]] = {
    "constrained": (toy_space, toy_objective),
    "permutation": (_permutation_space, _permutation_objective),
}


# -- the strategy under test -----------------------------------------------------------------------------
@dataclass(frozen=True)
class StrategyUnderTest:
    """Which strategy the suite checks, and how to build it.

    ``target`` is a registered name (``"anneal"``), an import path (``"package.module:Class"``) or a
    :class:`~pytest_autotune.strategies.base.Strategy` subclass; ``options`` are passed to its
    constructor; ``seeded`` says that different seeds give different runs (False for a strategy
    whose order does not depend on its random generator, such as ``exhaustive``).
    """

    target: str | type[Strategy]
    options: Mapping[str, Any] = field(default_factory=dict)
    seeded: bool = True

    @property
    def cls(self) -> type[Strategy]:
        """The strategy class (imported on first use)."""
        target = self.target
        if isinstance(target, str):
            if ":" not in target:
                return get_strategy(target)
            module_name, _, qualname = target.partition(":")
            found: Any = importlib.import_module(module_name)
            for part in qualname.split("."):
                found = getattr(found, part)
            target = found
        if not (isinstance(target, type) and issubclass(target, Strategy)):
            raise TypeError(f"{self.target!r} is not a Strategy subclass")
        return target

    @property
    def name(self) -> str:
        return self.target if isinstance(self.target, str) else self.target.__name__

    def make(self, space: Space, seed: int, **extra: Any) -> Strategy:
        """A new strategy over ``space``, seeded with ``seed``, with :attr:`options` and ``extra``.

        Its stop rule (:attr:`~pytest_autotune.strategies.base.Strategy.converge`) is off: the suite
        checks the protocol over whole budgets, and a tuner that stops once converged would end some
        of its runs early.
        """
        strategy = self.cls(space, rng=np.random.default_rng(seed), **{**self.options, **extra})
        strategy.converge = 0.0
        return strategy


# -- driving a strategy by hand ----------------------------------------------------------------------------
def _check_proposal(space: Space, point: object, name: str) -> Hashable:
    """Assert that ``point`` is a one-row :class:`Points` of a valid configuration; returns its key."""
    assert isinstance(point, Points), f"{name}: ask() returned {type(point).__name__}, not Points"
    assert len(point) == 1, f"{name}: ask() returned {len(point)} rows, expected one"
    config = space.configs(point)[0]
    assert bool(space.contains([config])[0]), f"{name}: proposed {config!r}, which is not in the space"
    key = point.keys()[0]
    assert space.to_points([config]).keys()[0] == key, f"{name}: {config!r} has a non-canonical point"
    return key


def _drive(
    strategy: Strategy, space: Space, objective: Objective, asks: int, name: str
) -> list[dict[str, Any]]:
    """Ask ``asks`` new configurations and tell each its outcome, as the tuner would.

    Every proposal is checked (:func:`_check_proposal`); a known one is told its outcome again and
    asked past, but :data:`~pytest_autotune.tuning.tuner.MAX_KNOWN_PROPOSALS` known ones in a row fail.
    Returns the new configurations in order.
    """
    told: dict[Hashable, Outcome] = {}
    configs: list[dict[str, Any]] = []
    known_in_a_row = 0
    while len(configs) < asks:
        try:
            point = strategy.ask()
        except SpaceExhausted:
            pytest.fail(f"{name}: SpaceExhausted after {len(configs)} of {space.size} configurations")
        key = _check_proposal(space, point, name)
        if key in told:
            known_in_a_row += 1
            assert known_in_a_row < MAX_KNOWN_PROPOSALS, f"{name}: proposes only told configurations"
            strategy.tell(point, told[key])
            continue
        known_in_a_row = 0
        config = space.configs(point)[0]
        told[key] = objective(config)
        strategy.tell(point, told[key])
        configs.append(config)
    return configs


def _optimum(space: Space, objective: Objective) -> tuple[dict[str, Any], float]:
    configs = space.configs(space.at_index(range(space.size)))
    scored = [(value, c) for c in configs if (value := objective(c).value) is not None]
    value, config = min(scored, key=lambda vc: vc[0])
    return config, value


class _Counting:
    """An objective that records the configurations it evaluates."""

    def __init__(self, objective: Objective) -> None:
        self.objective = objective
        self.calls: list[dict[str, Any]] = []

    def __call__(self, config: Mapping[str, Any]) -> Outcome:
        self.calls.append(dict(config))
        return self.objective(config)


def _configs(result: TuningResult) -> list[dict[str, Any]]:
    return [record.config for record in result.history]


# -- the suite ---------------------------------------------------------------------------------------------
class StrategyConformance:
    """Checks that a search strategy meets the contract the tuner relies on.

    Subclass it in a test module (its name must start with ``Test``) and set :attr:`strategy`
    (a registered name, ``"package.module:Class"`` or the class) and :attr:`options`. The checks:

    * the class is a :class:`~pytest_autotune.strategies.base.Strategy` with a ``name``, and an
      unknown option is a ``TypeError`` naming it;
    * every proposal is a one-row :class:`~pytest_autotune.space.base.Points` of a valid
      configuration, on a constrained space and on one with a permutation and a boolean;
    * the same seed gives the same trajectory (and, when :attr:`seeded`, another seed another one);
    * failed trials (every failure label) do not stop it: it keeps proposing new configurations;
    * told which configurations are under way (several trials at once, finishing in any order), it
      never proposes one of them;
    * on a tiny space it proposes each configuration once, then raises
      :class:`~pytest_autotune.strategies.base.SpaceExhausted` (the tuner copes with a strategy that
      repeats itself, but it then has to draw configurations itself);
    * a tuning run with the space's size as budget ends with every configuration evaluated once and
      the optimum found;
    * a run interrupted and resumed from its journal ends as the uninterrupted run did (with
      ``resume_by_asking = False``: without evaluating any recorded trial again).

    Each check is an ordinary test method: to opt out of one, override it with a skipped method.
    To check several strategies with one class, override the :meth:`strategy_under_test` fixture
    with a parametrized one returning :class:`StrategyUnderTest`.
    """

    #: The strategy: a registered name, ``"package.module:Class"`` or a Strategy subclass.
    strategy: ClassVar[str | type[Strategy] | None] = None
    #: Options passed to the strategy's constructor (keep expensive strategies cheap here).
    options: ClassVar[Mapping[str, Any]] = {}
    #: False for a strategy whose proposals do not depend on its random generator.
    seeded: ClassVar[bool] = True
    #: Trials per run in the checks that do not exhaust a space.
    budget: ClassVar[int] = 16
    #: Seed of the runs.
    seed: ClassVar[int] = 7

    @pytest.fixture
    def strategy_under_test(self) -> StrategyUnderTest:
        """The strategy to check, from the class attributes (override to parametrize)."""
        if self.strategy is None:
            pytest.fail(f"{type(self).__name__}: set the class attribute 'strategy'")
        return StrategyUnderTest(self.strategy, dict(self.options), seeded=self.seeded)

    def _run(
        self,
        under_test: StrategyUnderTest,
        seed: int,
        *,
        budget: int | None = None,
        journal: Path | None = None,
        objective: Objective = toy_objective,
    ) -> TuningResult:
        """A tuning run over the toy space (``budget`` trials, by default :attr:`budget`)."""
        space = toy_space()
        abort = Evaluations(self.budget if budget is None else budget)
        with Tuner(space, under_test.make(space, seed), abort=abort, seed=seed, journal=journal) as tuner:
            return tuner.run(objective)

    # -- the class -----------------------------------------------------------------------------------------
    def test_is_a_strategy_with_a_name(self, strategy_under_test: StrategyUnderTest) -> None:
        cls = strategy_under_test.cls
        assert issubclass(cls, Strategy)
        assert isinstance(getattr(cls, "name", None), str), f"{cls.__name__} needs a class attribute 'name'"
        assert cls.name, f"{cls.__name__}.name is empty"
        assert isinstance(cls.resume_by_asking, bool)

    def test_unknown_options_are_a_type_error(self, strategy_under_test: StrategyUnderTest) -> None:
        with pytest.raises(TypeError, match="no_such_option"):
            strategy_under_test.make(toy_space(), self.seed, no_such_option=1)

    # -- proposals -----------------------------------------------------------------------------------------
    @pytest.mark.parametrize("space_name", sorted(SPACES))
    def test_proposals_are_valid_configurations(
        self, strategy_under_test: StrategyUnderTest, space_name: str
    ) -> None:
        factory, objective = SPACES[space_name]
        space = factory()
        strategy = strategy_under_test.make(space, self.seed)
        configs = _drive(strategy, space, objective, min(self.budget, space.size), strategy_under_test.name)
        assert all(space.contains(configs))

    def test_keeps_proposing_after_failures(self, strategy_under_test: StrategyUnderTest) -> None:
        """Every outcome a failure (each label in turn) for half the budget, then the toy objective."""
        space = toy_space()
        asks = 0
        failing = self.budget // 2

        def objective(config: Mapping[str, Any]) -> Outcome:
            nonlocal asks
            asks += 1
            if asks <= failing:
                return Outcome.failed(FAILURE_LABELS[asks % len(FAILURE_LABELS)], "injected")
            return toy_objective(config)

        strategy = strategy_under_test.make(space, self.seed)
        configs = _drive(strategy, space, objective, self.budget, strategy_under_test.name)
        assert len(configs) == self.budget

    def test_exhausts_a_tiny_space_without_repeats(self, strategy_under_test: StrategyUnderTest) -> None:
        space = _tiny_space()
        strategy = strategy_under_test.make(space, self.seed)
        name = strategy_under_test.name
        seen: set[Hashable] = set()
        for _ in range(space.size):
            try:
                point = strategy.ask()
            except SpaceExhausted:
                pytest.fail(f"{name}: SpaceExhausted after {len(seen)} of {space.size} configurations")
            key = _check_proposal(space, point, name)
            assert key not in seen, f"{name}: proposed {space.configs(point)[0]!r} again"
            seen.add(key)
            strategy.tell(point, _tiny_objective(space.configs(point)[0]))
        with pytest.raises(SpaceExhausted):
            strategy.ask()

    def test_never_proposes_a_configuration_under_way(self, strategy_under_test: StrategyUnderTest) -> None:
        """Several trials at once (one per device): a strategy told what is under way
        (:meth:`~pytest_autotune.strategies.base.Strategy.pending`) never proposes it, whether it
        proposed it itself or the tuner drew it; trials are told in another order than asked."""
        space = toy_space()
        strategy = strategy_under_test.make(space, self.seed)
        name = strategy_under_test.name
        rng = np.random.default_rng(self.seed)
        # Under way before the strategy proposed anything (the tuner's own draws): the first
        # configuration of the index order and the optimum, which a strategy is likely to propose.
        under_way = [space.at_index([0]), space.to_points([{"x": 5, "y": 4, "mode": "a"}])]
        told: dict[Hashable, Outcome] = {}
        new = known_in_a_row = 0
        while new < self.budget:
            strategy.pending(under_way)
            pending = {point.keys()[0] for point in under_way}
            point = strategy.ask()
            key = _check_proposal(space, point, name)
            assert key not in pending, f"{name}: proposed {space.configs(point)[0]!r}, which is under way"
            if key in told:
                known_in_a_row += 1
                assert known_in_a_row < MAX_KNOWN_PROPOSALS, f"{name}: proposes only told configurations"
                strategy.tell(point, told[key])
                continue
            new, known_in_a_row = new + 1, 0
            under_way.append(point)
            if len(under_way) >= 4:  # four devices busy: one of them, any, finishes first
                finished = under_way.pop(int(rng.integers(len(under_way))))
                told[finished.keys()[0]] = toy_objective(space.configs(finished)[0])
                strategy.pending(under_way)
                strategy.tell(finished, told[finished.keys()[0]])

    # -- tuning runs -----------------------------------------------------------------------------------------
    def test_same_seed_same_trajectory(self, strategy_under_test: StrategyUnderTest) -> None:
        first = _configs(self._run(strategy_under_test, self.seed))
        assert len(first) == self.budget
        assert _configs(self._run(strategy_under_test, self.seed)) == first
        if strategy_under_test.seeded:  # half a run is enough to tell the seeds apart
            half = self.budget // 2
            assert _configs(self._run(strategy_under_test, self.seed + 1, budget=half)) != first[:half]

    def test_finds_the_optimum_of_a_tiny_space_within_its_size(
        self, strategy_under_test: StrategyUnderTest
    ) -> None:
        space = _tiny_space()
        strategy = strategy_under_test.make(space, self.seed)
        with Tuner(space, strategy, abort=Evaluations(2 * space.size), seed=self.seed) as tuner:
            result = tuner.run(_tiny_objective)
            assert tuner.ask() is None
        assert result.exhausted
        assert result.evaluations == space.size
        assert len({tuple(map(repr, c.values())) for c in _configs(result)}) == space.size
        assert (result.best_config, result.best_value) == _optimum(space, _tiny_objective)

    def test_resumes_from_its_journal(self, strategy_under_test: StrategyUnderTest, tmp_path: Path) -> None:
        reference = self._run(strategy_under_test, self.seed)
        journal = tmp_path / "journal.jsonl"
        interrupted = self.budget // 2
        recorded = _configs(self._run(strategy_under_test, self.seed, budget=interrupted, journal=journal))
        counting = _Counting(toy_objective)
        resumed = self._run(strategy_under_test, self.seed, journal=journal, objective=counting)
        assert resumed.resumed == interrupted
        assert len(counting.calls) == self.budget - interrupted
        assert _configs(resumed)[:interrupted] == recorded
        assert not any(config in recorded for config in counting.calls), "a recorded trial ran again"
        if strategy_under_test.cls.resume_by_asking:
            assert resumed.diverged == 0, "re-asking after a resume gave other configurations"
            assert [(r.config, r.outcome) for r in resumed.history] == [
                (r.config, r.outcome) for r in reference.history
            ]
