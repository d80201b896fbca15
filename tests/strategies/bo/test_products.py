"""The product features (option ``products``): which blocks, their values, and what a model gains."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_autotune.space import Categorical, Interval, Pow2, Set, build_space
from pytest_autotune.space.base import Space
from pytest_autotune.strategies.bo.model.encoding import MAX_PRODUCT_PARAMS, Encoding
from pytest_autotune.strategies.bo.model.surrogate import GPSurrogate
from pytest_autotune.strategies.bo.options import ProductKind


def _space() -> Space:
    return build_space(
        {
            "bx": Set(16, 32, 48, 64),  # sized: a list of positive integers
            "by": Set(1, 2, 4, 8, 16),  # sized
            "t": Set(1, 2, 3),  # sized
            "flag": Set(0, 1),  # two values (and a zero): a switch, not a size
            "p": Pow2(1, 64),  # not an explicit list
            "o": Interval(1, 9),  # a range, not an explicit list
            "c": Categorical("x", "y"),
        }
    )


@pytest.mark.parametrize(
    ("kind", "names"),
    [
        ("off", []),
        ("pairs", ["bx*by", "bx*t", "by*t"]),
        ("all", ["bx*by*t"]),
        ("both", ["bx*by", "bx*t", "by*t", "bx*by*t"]),
    ],
)
def test_product_blocks_multiply_the_sized_parameters(kind: ProductKind, names: list[str]) -> None:
    space = _space()
    plain = Encoding.of(space, power_of_two=True)
    encoding = Encoding.of(space, power_of_two=True, products=kind)
    extra = encoding.blocks[plain.dimension :]
    assert [b.name for b in extra] == names
    assert all(b.kind == "numeric" for b in extra)
    # They follow the power-of-two flags (bx and t mix powers of two) and count as no parameter.
    assert encoding.parameter_count == plain.parameter_count
    assert [b.name for b in encoding.blocks[: plain.dimension]] == [b.name for b in plain.blocks]


def test_product_values_are_scaled_log_products() -> None:
    space = _space()
    encoding = Encoding.of(space, power_of_two=True, products="both")
    plain = Encoding.of(space, power_of_two=True)
    configs = [
        {"bx": 16, "by": 1, "t": 1, "flag": 0, "p": 1, "o": 3, "c": "x"},
        {"bx": 64, "by": 16, "t": 3, "flag": 1, "p": 2, "o": 3, "c": "y"},
        {"bx": 32, "by": 4, "t": 2, "flag": 0, "p": 4, "o": 5, "c": "x"},
    ]
    features = encoding.features(space.to_points(configs))
    width = plain.features(space.to_points(configs)).shape[1]
    assert np.array_equal(features[:, :width], plain.features(space.to_points(configs)))
    products = features[:, width:]
    # The smallest values give 0, the largest 1, on every product.
    assert products[0].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert np.allclose(products[1], 1.0)
    # bx * by = 128 on a log scale from 16 to 1024; the whole product 256 from 16 to 3072.
    assert math.isclose(products[2, 0], math.log(128 / 16) / math.log(1024 / 16))
    assert math.isclose(products[2, 3], math.log(256 / 16) / math.log(3072 / 16))
    # A product block's grid step is the smallest log step of a factor (48 to 64 for bx).
    spacing = encoding.grid_spacing()[plain.dimension :]
    assert math.isclose(spacing[0], math.log(64 / 48) / math.log(1024 / 16))


def test_wide_spaces_get_the_whole_product_instead_of_pairs() -> None:
    params = {f"p{i}": Set(1, 2, 4, 8) for i in range(MAX_PRODUCT_PARAMS + 1)}
    encoding = Encoding.of(build_space(params), products="pairs")
    assert [b.name for b in encoding.blocks[encoding.parameter_count :]] == ["*".join(params)]
    narrow = {f"p{i}": Set(1, 2, 4, 8) for i in range(MAX_PRODUCT_PARAMS)}
    encoding = Encoding.of(build_space(narrow), products="pairs")
    pairs = MAX_PRODUCT_PARAMS * (MAX_PRODUCT_PARAMS - 1) // 2
    assert encoding.dimension == MAX_PRODUCT_PARAMS + pairs


def test_restricted_keeps_only_products_of_kept_parameters() -> None:
    encoding = Encoding.of(_space(), products="pairs")
    kept = encoding.restricted(["bx", "t", "c"])
    assert [b.name for b in kept.blocks] == ["bx", "t", "c", "bx*t"]
    assert len(kept.grid_spacing()) == kept.dimension
    assert kept.grid_spacing()[-1] > 0


def test_model_with_the_product_predicts_a_ridge_it_has_not_seen() -> None:
    # Cost depends on a * b only (fast at a * b == 64). Trained away from the ridge's far end,
    # the model with the product ranks unseen configurations on the ridge first.
    powers = [2**i for i in range(8)]
    space = build_space({"a": Set(*powers), "b": Set(*powers)})

    def cost(a: int, b: int) -> float:
        return 1.0 + abs(math.log2(a * b) - 6.0)

    grid = [(a, b) for a in powers for b in powers]
    train = [(a, b) for a, b in grid if a <= 16 and b <= 64]
    test = [(a, b) for a, b in grid if a > 16]  # of these, only (32, 2) and (64, 1) are on the ridge
    to_points = space.to_points
    best = {}
    kinds: tuple[ProductKind, ...] = ("off", "pairs")
    for kind in kinds:
        encoding = Encoding.of(space, products=kind)
        surrogate = GPSurrogate(
            encoding, priors="gamma", log_transform=True, rng=np.random.default_rng(0), fit_restarts=3
        )
        x = encoding.features(to_points([{"a": a, "b": b} for a, b in train]))
        surrogate.fit(x, np.array([cost(a, b) for a, b in train]))
        mean, _ = surrogate.predict(encoding.features(to_points([{"a": a, "b": b} for a, b in test])))
        order = np.argsort(mean.numpy())
        best[kind] = {test[int(i)] for i in order[:2]}
    ridge = {(32, 2), (64, 1)}
    assert best["pairs"] == ridge
    assert best["off"] != ridge


@pytest.mark.parametrize(("kind", "extra"), [("off", 0), ("pairs", 1)])
def test_strategy_option_reaches_the_encoding(kind: ProductKind, extra: int) -> None:
    from pytest_autotune.strategies.bo import BayesianOptimization

    space = build_space({"a": Set(1, 2, 4, 8, 16), "b": Set(1, 2, 3, 4)})
    strategy = BayesianOptimization(space, rng=np.random.default_rng(0), products=kind, power_of_two=False)
    assert strategy.encoding.dimension == 2 + extra
