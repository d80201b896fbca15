"""The power-of-two feature: which parameters get it, its values, and that models can use it."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_autotune.space import Categorical, Interval, Pow2, Real, Set, build_space
from pytest_autotune.strategies.bo.model.encoding import Encoding
from pytest_autotune.strategies.bo.model.surrogate import GPSurrogate


def test_only_integer_lists_mixing_powers_of_two_get_the_feature() -> None:
    space = build_space(
        {
            "w": Set(*range(16, 129, 16)),  # 16, 32, 48, ... 128: mixed
            "p": Pow2(1, 64),  # powers of two only: nothing to tell apart
            "t": Set(1, 2, 3, 4),  # 3 is the odd one out
            "o": Set(3, 5, 7),  # no power of two at all
            "f": Set(0.5, 1.0, 2.0),  # not integers
            "i": Interval(1, 100),  # a range, not an explicit list
            "c": Categorical("x", "y"),
            "r": Real(0.0, 1.0),
        }
    )
    plain = Encoding.of(space, power_of_two=False)
    encoding = Encoding.of(space, power_of_two=True)
    derived = encoding.blocks[plain.dimension :]
    assert [b.name for b in derived] == ["w", "t"]
    assert all(b.kind == "categorical" and b.n_categories == 2 for b in derived)
    assert encoding.dimension == plain.dimension + 2
    assert encoding.parameter_count == plain.dimension


def test_feature_values_and_the_model_columns_around_them() -> None:
    space = build_space({"w": Set(*range(16, 129, 16)), "t": Set(1, 2, 3, 4), "c": Categorical("x", "y")})
    encoding = Encoding.of(space, power_of_two=True)
    configs = [{"w": 48, "t": 4, "c": "y"}, {"w": 64, "t": 3, "c": "x"}, {"w": 128, "t": 1, "c": "x"}]
    features = encoding.features(space.to_points(configs))
    plain = Encoding.of(space).features(space.to_points(configs))
    assert features.shape == (3, plain.shape[1] + 2)
    # The space's own columns are unchanged (ordinal positions); the flags follow them.
    assert np.array_equal(features[:, : plain.shape[1]], plain)
    assert features[:, plain.shape[1] :].tolist() == [[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]
    # Flags are discrete blocks (the additive kernel gets an effect for each) without a grid.
    assert len(encoding.discrete_blocks()) == 5
    assert encoding.grid_spacing()[3:].tolist() == [0.0, 0.0]


def test_model_generalises_the_power_of_two_rule_to_unseen_values() -> None:
    # Widths 16..256: non-powers of two are ten times slower. Trained on half the widths, the model
    # with the flag ranks the unseen widths right; one effect per value cannot know them.
    widths = list(range(16, 257, 16))
    space = build_space({"w": Set(*widths), "t": Interval(1, 8)})

    def cost(config: dict) -> float:  # type: ignore[type-arg]
        w, t = int(config["w"]), int(config["t"])
        return (1.0 if w & (w - 1) == 0 else 10.0) * (1.0 + 0.1 * t)

    seen = [16, 32, 48, 64, 80, 112, 176, 240]
    unseen = [w for w in widths if w not in seen]  # 96, 128, 144, ..., 256: 128 and 256 are fast
    train = space.to_points([{"w": w, "t": t} for w in seen for t in (1, 4, 8)])
    test = space.to_points([{"w": w, "t": 2} for w in unseen])
    fast = np.array([w & (w - 1) == 0 for w in unseen])
    gaps = {}
    for flag in (False, True):
        encoding = Encoding.of(space, power_of_two=flag)
        surrogate = GPSurrogate(
            encoding,
            priors="gamma",
            log_transform=True,
            rng=np.random.default_rng(0),
            additive_kernel=True,
            fit_restarts=3,
        )
        surrogate.fit(encoding.features(train), np.array([cost(c) for c in space.configs(train)]))
        mean, _ = surrogate.predict(encoding.features(test))
        predicted = mean.numpy()
        gaps[flag] = float(predicted[~fast].min() - predicted[fast].max())
    # With the flag every unseen fast width is predicted faster than every unseen slow one.
    assert gaps[True] > 0.5
    assert gaps[True] > gaps[False] + 0.5


@pytest.mark.parametrize("flag", [False, True])
def test_strategy_option_reaches_the_encoding(flag: bool) -> None:
    from pytest_autotune.strategies.bo import BayesianOptimization

    space = build_space({"w": Set(*range(16, 129, 16)), "t": Interval(1, 4)})
    strategy = BayesianOptimization(space, rng=np.random.default_rng(0), power_of_two=flag)
    assert strategy.encoding.dimension == (3 if flag else 2)
