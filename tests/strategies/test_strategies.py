"""Strategies beyond the conformance suite (test_conformance.py): search quality, options, the registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pytest_autotune import strategies
from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Interval, Permutation, Pow2, Set, Space, build_space
from pytest_autotune.strategies import (
    available_strategies,
    get_strategy,
    parse_strategy_spec,
    register_strategy,
)
from pytest_autotune.strategies.classic.random_search import RandomSearch
from pytest_autotune.tuning.tuner import Tuner

Objective = Callable[[dict[str, Any]], Outcome]
CLASSIC = ["random", "exhaustive", "anneal", "genetic", "diff_evo", "pattern", "local", "bandit"]


@pytest.mark.parametrize("name", ["anneal", "genetic", "diff_evo", "pattern", "local", "bandit"])
def test_search_beats_random_on_a_smooth_landscape(name: str) -> None:
    """On a smooth 4-parameter bowl (10k configurations) the searches find better values than random."""
    space = build_space(
        {"a": Interval(1, 10), "b": Interval(1, 10), "c": Interval(1, 10), "d": Interval(1, 10)},
    )

    def bowl(config: dict[str, Any]) -> float:
        return 1.0 + sum((config[k] - t) ** 2 for k, t in zip("abcd", (3, 8, 5, 2), strict=True))

    def mean_best(strategy: str) -> float:
        results = [Tuner(space, strategy, abort=60, seed=s).run(bowl).best_value for s in range(6)]
        return float(np.mean([r for r in results if r is not None]))

    assert mean_best(name) < 0.7 * mean_best("random")


def test_anneal_walks_permutations_and_powers() -> None:
    space = build_space({"order": Permutation("ijk"), "tile": Pow2(1, 64), "unroll": Set(1, 2, 4)})
    target = ("k", "i", "j")

    def cost(config: dict[str, Any]) -> float:
        mismatch = sum(a != b for a, b in zip(config["order"], target, strict=True))
        return 1.0 + mismatch + abs(np.log2(config["tile"]) - 3) + (config["unroll"] != 4)

    result = Tuner(space, "anneal", abort=space.size, seed=0).run(cost)
    assert result.best_config == {"order": target, "tile": 8, "unroll": 4}


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("anneal", {"t_start": 0}, r"strategy 'anneal': option t_start=0 is outside \(0.0"),
        ("anneal", {"t_end": 5.0}, "option t_end=5.0 is outside"),
        ("anneal", {"cycle": 0}, r"option cycle=0 must be at least 1"),
        ("genetic", {"population": 1}, "strategy 'genetic': option population=1"),
        ("genetic", {"mutation": "often"}, "option mutation must be a number"),
        ("diff_evo", {"population": 3}, "option population=3"),
        ("diff_evo", {"cr": 1.5}, "option cr=1.5"),
        ("pattern", {"step": 0.0}, "option step=0.0"),
        ("local", {"initial": 0}, r"strategy 'local': option initial=0 must be at least 1"),
        ("local", {"relink": 2}, "option relink=2"),
        ("local", {"order": "best"}, "option order='best' must be 'model' or 'random'"),
        ("local", {"screen": 0}, r"option screen=0 must be at least 1"),
        ("local", {"explore": -0.1}, "option explore=-0.1"),
        ("genetic", {"crossover": "one_point"}, "must be 'uniform' or 'leaders'"),
        ("bandit", {"arms": "bandit"}, "must name other strategies"),
        ("bandit", {"arms": "anneal,nope"}, "unknown strategy 'nope'"),
        (
            "anneal",
            {"temperature": 1},
            r"unknown option\(s\) temperature; accepted: cycle, jump, t_end, t_start",
        ),
    ],
)
def test_bad_options_are_clear_errors(
    name: str, options: dict[str, Any], message: str, toy_space: Space
) -> None:
    with pytest.raises(ValueError, match=message):
        Tuner(toy_space, name, strategy_options=options, seed=0)


def test_options_change_the_run(toy_space: Space, toy_objective: Objective) -> None:
    def configs(options: dict[str, Any]) -> list[dict[str, Any]]:
        tuner = Tuner(toy_space, "bandit", abort=30, seed=0, strategy_options=options)
        return [r.config for r in tuner.run(toy_objective).history]

    assert configs({"arms": "genetic+anneal"}) != configs({})
    tuner = Tuner(toy_space, "bandit", seed=0, strategy_options={"arms": ["genetic", "pattern"]})
    assert tuner.strategy.arm_names == ("genetic", "pattern")  # type: ignore[attr-defined]


def test_registry_and_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(strategies.registry, "_REGISTRY", dict(strategies.registry._REGISTRY))
    assert set(CLASSIC) | {"bo"} <= set(available_strategies())
    assert get_strategy("random") is RandomSearch
    assert parse_strategy_spec("anneal") == ("anneal", {})
    assert parse_strategy_spec(" bo:feasibility=off,initial=10,log_transform=false,x=0.5 ") == (
        "bo",
        {"feasibility": "off", "initial": 10, "log_transform": False, "x": 0.5},
    )
    assert parse_strategy_spec("bandit:arms=anneal+genetic") == ("bandit", {"arms": "anneal+genetic"})
    with pytest.raises(ValueError, match="expected key=value"):
        parse_strategy_spec("anneal:fast")
    with pytest.raises(ValueError, match="given twice"):
        parse_strategy_spec("anneal:a=1,a=2")
    with pytest.raises(ValueError, match="missing the strategy name"):
        parse_strategy_spec(":a=1")
    register_strategy("my_random", RandomSearch)
    assert get_strategy("my_random") is RandomSearch
    register_strategy("broken", "no_such_module_xyz:Thing")
    with pytest.raises(ImportError, match="strategy 'broken' cannot be loaded"):
        get_strategy("broken")


def test_registry_import_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pytest_autotune.strategies as s; s.available_strategies(); print('numpy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
