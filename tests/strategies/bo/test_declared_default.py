"""``start_at_default``: a declared default is the first trial; spaces without one are unchanged."""

from __future__ import annotations

import numpy as np

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Categorical, Pow2, build_space
from pytest_autotune.strategies.bo import BayesianOptimization

FAST = {"candidates": 128, "local_starts": 2}


def _space(**defaults: object):  # type: ignore[no-untyped-def]
    return build_space(
        {
            "block": Pow2(16, 1024, **({"default": defaults["block"]} if "block" in defaults else {})),
            "tile": Pow2(1, 16, **({"default": defaults["tile"]} if "tile" in defaults else {})),
            "mode": Categorical("a", "b", "c"),
        },
        ["block * tile <= 4096"],
    )


def _first_configs(space, n: int, seed: int = 0, **options: object) -> list[dict[str, object]]:  # type: ignore[no-untyped-def]
    strategy = BayesianOptimization(space, rng=np.random.default_rng(seed), **FAST, **options)
    asked = []
    for _ in range(n):
        point = strategy.ask()
        config = space.configs(point)[0]
        asked.append(config)
        strategy.tell(point, Outcome.ok(1.0 + config["block"] / 1024 + config["tile"] / 16))
    return asked


def test_the_declared_default_is_the_first_trial_and_only_once() -> None:
    space = _space(block=256, tile=4)
    asked = _first_configs(space, 6)
    assert asked[0] == {"block": 256, "tile": 4, "mode": "a"}  # mode completed by domain order
    assert asked.count(asked[0]) == 1
    assert all(space.contains(asked))


def test_without_a_declared_default_the_design_is_unchanged() -> None:
    space = _space()
    assert _first_configs(space, 5, seed=3) == _first_configs(space, 5, seed=3, start_at_default=False)


def test_the_option_turns_it_off() -> None:
    with_default = _space(block=256, tile=4)
    asked = _first_configs(with_default, 5, seed=3, start_at_default="off")
    # the same Latin hypercube as the space without defaults: the default is not forced in
    assert asked == _first_configs(_space(), 5, seed=3)


def test_a_default_already_told_is_not_proposed_again() -> None:
    space = _space(block=64, tile=2)
    strategy = BayesianOptimization(space, rng=np.random.default_rng(1), **FAST)
    default = space.to_points([space.default_config()])
    strategy.tell(default, Outcome.ok(2.0))
    first = space.configs(strategy.ask())[0]
    assert first != space.default_config()
