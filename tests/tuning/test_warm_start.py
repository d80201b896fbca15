"""Transfer sources in the library: mapping configurations between spaces, the initial design, the Tuner."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

from pytest_autotune import strategies
from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Bool, Interval, Pow2, build_space
from pytest_autotune.space.base import Space
from pytest_autotune.strategies import register_strategy
from pytest_autotune.strategies.classic.random_search import RandomSearch
from pytest_autotune.strategies.sources import SourceTrial, TransferSource
from pytest_autotune.tuning.tuner import Tuner
from pytest_autotune.tuning.warm_start import map_config, overlap, source_design


@pytest.fixture
def space() -> Space:
    return build_space(
        {
            "BS": Pow2(1, 64, default=8),
            "WPT": Interval(1, 8, default=1),
            "VEC": Bool(default=False),
        },
        ["BS * WPT <= 128"],
    )


def _source(name: str, rows: list[tuple[dict[str, Any], float | str]]) -> TransferSource:
    trials = [
        SourceTrial(config, "ok", value) if isinstance(value, float) else SourceTrial(config, value)  # type: ignore[arg-type]
        for config, value in rows
    ]
    return TransferSource(name, trials, "device")


def test_configurations_map_by_name_and_value(space: Space) -> None:
    assert map_config(space, {"BS": 16, "WPT": 4, "VEC": True}) == {"BS": 16, "WPT": 4, "VEC": True}
    # a parameter the source lacks takes the declared default; one this space lacks is dropped
    assert map_config(space, {"BS": 32, "UNROLL": 4}) == {"BS": 32, "WPT": 1, "VEC": False}
    assert map_config(space, {"BS": 128, "WPT": 1}) is None  # not in the domain
    assert map_config(space, {"BS": 64, "WPT": 4}) is None  # breaks the constraint
    assert map_config(space, {"BS": "wide", "WPT": 4}) is None  # a value of another kind
    assert map_config(space, {"X": 1}) is None  # no parameter in common


def test_the_design_interleaves_the_sources_best_without_repeats(space: Space) -> None:
    a = _source(
        "a",
        [
            ({"BS": 8, "WPT": 2}, 1.3),
            ({"BS": 16, "WPT": 4}, 1.0),
            ({"BS": 64, "WPT": 8}, 0.5),  # the best, but outside this space
            ({"BS": 4, "WPT": 1}, "compile"),
            ({"BS": 2, "WPT": 1}, 2.0),
            ({"BS": 1, "WPT": 1}, 3.0),
        ],
    )
    b = _source("b", [({"BS": 16, "WPT": 4}, 1.0), ({"BS": 32, "WPT": 2}, 1.1)])
    design = source_design(space, [a, b])
    assert design == [
        {"BS": 16, "WPT": 4, "VEC": False},
        {"BS": 8, "WPT": 2, "VEC": False},
        {"BS": 32, "WPT": 2, "VEC": False},
        {"BS": 2, "WPT": 1, "VEC": False},
    ]
    assert source_design(space, [a, b], limit=2) == design[:2]
    assert overlap(space, a) == 5
    assert overlap(space, _source("c", [({"X": 1}, 1.0)])) == 0


def _objective(config: dict[str, Any]) -> Outcome:
    return Outcome.ok(1.0 + abs(config["BS"] - 32) + abs(config["WPT"] - 2))


def test_a_tuner_evaluates_the_sources_best_first_and_resumes_the_same(space: Space, tmp_path: Any) -> None:
    source = _source("a", [({"BS": 32, "WPT": 2, "VEC": True}, 1.0), ({"BS": 8, "WPT": 8}, 1.5)])
    journal = tmp_path / "j.jsonl"
    tuner = Tuner(space, "random", abort=6, seed=5, sources=[source], journal=journal)
    first = [tuner.ask() for _ in range(2)]
    assert [t.config for t in first if t is not None] == [
        {"BS": 32, "WPT": 2, "VEC": True},
        {"BS": 8, "WPT": 8, "VEC": False},
    ]
    for trial in first:
        assert trial is not None
        tuner.tell(trial, _objective(trial.config))
    tuner.close()
    resumed = Tuner(space, "random", abort=6, seed=5, sources=[source], journal=journal)
    result = resumed.run(_objective)
    assert [r.config for r in result.history[:2]] == [t.config for t in first if t is not None]
    assert result.evaluations == 6
    assert result.diverged == 0
    assert result.best_config == {"BS": 32, "WPT": 2, "VEC": True}
    plain = Tuner(space, "random", abort=6, seed=5).run(_objective)
    assert plain.history[0].config != result.history[0].config


class _Learner(RandomSearch):
    """A random search that accepts sources (as a model-based strategy would) and keeps them."""

    name: ClassVar[str] = "learner_with_sources"
    seen: ClassVar[list[Any]] = []

    def __init__(self, space: Space, *, rng: np.random.Generator, sources: Any = ()) -> None:
        super().__init__(space, rng=rng)
        type(self).seen.append(tuple(sources))


def test_sources_go_to_a_strategy_that_accepts_them(space: Space, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(strategies.registry, "_REGISTRY", dict(strategies.registry._REGISTRY))
    register_strategy("learner_with_sources", _Learner)
    source = _source("a", [({"BS": 32, "WPT": 2}, 1.0)])
    tuner = Tuner(space, "learner_with_sources", abort=3, seed=1, sources=[source])
    assert _Learner.seen[-1] == (source,)
    assert tuner.design == []  # the strategy learns from them itself
    assert tuner.strategy_options == {}  # sources are no option of the job (journal header)
    # a strategy that does not accept them is built as usual
    other = Tuner(space, "random", abort=3, seed=1, sources=[source])
    assert other.design == [{"BS": 32, "WPT": 2, "VEC": False}]
