"""The GP surrogate fits known functions and transforms targets as documented."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Categorical, Interval, Permutation, Set, build_space
from pytest_autotune.space.base import Points, Space
from pytest_autotune.strategies.bo import BayesianOptimization
from pytest_autotune.strategies.bo.model.encoding import Encoding
from pytest_autotune.strategies.bo.model.surrogate import GPSurrogate, TargetTransform


def test_target_transform_log_of_magnitude() -> None:
    positive = TargetTransform.fit(np.array([1.0, 10.0, 100.0]), log=True)
    z = positive(np.array([1.0, 10.0, 100.0]))
    assert z == pytest.approx([-1.224744871, 0.0, 1.224744871])  # log is linear in decades
    negative = TargetTransform.fit(np.array([-100.0, -10.0, -1.0]), log=True)  # negated maximised objective
    zn = negative(np.array([-100.0, -10.0, -1.0]))
    assert list(np.argsort(zn)) == [0, 1, 2]  # order preserved: minimising z minimises the value
    mixed = TargetTransform.fit(np.array([-1.0, 0.0, 3.0]), log=True)
    assert mixed.sign == 0
    off = TargetTransform.fit(np.array([1.0, 10.0, 100.0]), log=False)
    assert off(np.array([1.0, 10.0, 100.0])) == pytest.approx(
        (np.array([1, 10, 100]) - 37) / np.std([1, 10, 100])
    )


def test_constant_targets_do_not_divide_by_zero() -> None:
    transform = TargetTransform.fit(np.array([2.0, 2.0, 2.0]), log=True)
    assert np.all(np.isfinite(transform(np.array([2.0, 3.0]))))


def make_space():  # type: ignore[no-untyped-def]
    return build_space(
        {
            "a": Interval(1, 64),
            "b": Categorical("x", "y", "z"),
            "p": Permutation(["i", "j", "k"]),
        }
    )


def objective(config: dict) -> float:  # type: ignore[type-arg]
    perm_cost = {("i", "j", "k"): 0.0, ("j", "i", "k"): 0.5}.get(config["p"], 1.0)
    return (
        1.0 + (np.log(config["a"]) - np.log(8)) ** 2 + {"x": 0.0, "y": 2.0, "z": 1.0}[config["b"]] + perm_cost
    )


@pytest.mark.parametrize("priors", ["gamma", "dim", "off"])
def test_gp_interpolates_and_generalises(priors: str) -> None:
    space = make_space()
    rng = np.random.default_rng(0)
    encoding = Encoding.of(space)
    train = space.sample(80, rng).unique()
    test = space.sample(200, rng)
    values = np.array([objective(c) for c in space.configs(train)])
    surrogate = GPSurrogate(encoding, priors=priors, log_transform=True, rng=rng)  # type: ignore[arg-type]
    surrogate.fit(encoding.features(train), values)
    assert surrogate.transform is not None
    mean, std = surrogate.predict(encoding.features(train))
    z = surrogate.transform(values)
    assert np.corrcoef(mean.numpy(), z)[0, 1] > 0.99
    assert float(std.max()) < 0.2  # near-noise-free at the data
    test_mean, test_std = surrogate.predict(encoding.features(test))
    truth = surrogate.transform(np.array([objective(c) for c in space.configs(test)]))
    assert np.corrcoef(test_mean.numpy(), truth)[0, 1] > 0.9
    assert bool((test_std > 0).all())
    assert surrogate.best_target == pytest.approx(float(z.min()))


def test_warm_start_reuses_hyperparameters() -> None:
    space = make_space()
    rng = np.random.default_rng(1)
    encoding = Encoding.of(space)
    points = space.sample(40, rng).unique()
    values = np.array([objective(c) for c in space.configs(points)])
    surrogate = GPSurrogate(encoding, priors="gamma", log_transform=True, rng=rng, fit_restarts=0)
    surrogate.fit(encoding.features(points[:30]), values[:30])
    first = surrogate.hyperparameters()
    surrogate.fit(encoding.features(points[:31]), values[:31])
    second = surrogate.hyperparameters()
    assert len(first["lengthscale"]) == 3
    # one more point barely moves the optimum found from the previous one
    assert np.allclose(np.log(first["lengthscale"]), np.log(second["lengthscale"]), atol=0.7)


def test_constant_parameters_are_not_modelled() -> None:
    space = build_space({"a": Interval(1, 8), "fixed": Categorical("only"), "c": Interval(0, 3)})
    encoding = Encoding.of(space)
    assert [b.name for b in encoding.blocks] == ["a", "c"]
    assert encoding.dimension == 2


def held_out_error(
    space: Space,
    cost: Callable[[dict], float],  # type: ignore[type-arg]
    train: Points,
    test: Points,
    seed: int,
    **options: Any,
) -> float:
    """Root mean squared error of a GP fitted on ``train`` at ``test``, in standardised log units."""
    encoding = Encoding.of(space)
    surrogate = GPSurrogate(
        encoding,
        priors="gamma",
        log_transform=True,
        rng=np.random.default_rng(seed),
        fit_restarts=3,
        **options,
    )
    surrogate.fit(encoding.features(train), np.array([cost(c) for c in space.configs(train)]))
    assert surrogate.transform is not None
    mean, _ = surrogate.predict(encoding.features(test))
    truth = surrogate.transform(np.array([cost(c) for c in space.configs(test)]))
    return float(np.sqrt(np.mean((mean.numpy() - truth) ** 2)))


def test_additive_kernel_learns_values_that_are_good_apart() -> None:
    # Work-group widths 16..256: only 64, 128 and 256 are fast, their neighbours are slow. A
    # stationary kernel over the position cannot express that; one effect per value can.
    space = build_space({"w": Set(*range(16, 257, 16)), "t": Interval(1, 8), "c": Categorical("x", "y")})
    fast = {64, 128, 256}

    def cost(config: dict) -> float:  # type: ignore[type-arg]
        scale = 1.0 if config["w"] in fast else 10.0
        return scale * (1.0 + 0.1 * config["t"]) * (1.3 if config["c"] == "y" else 1.0)

    test = space.sample(300, np.random.default_rng(4))
    for seed in range(3):
        draw = np.random.default_rng(100 + seed)
        # Every width three times, with random other parameters.
        configs = [
            {"w": w, "t": int(draw.integers(1, 9)), "c": str(draw.choice(["x", "y"]))}
            for w in range(16, 257, 16)
            for _ in range(3)
        ]
        train = space.to_points(configs).unique()
        errors = {
            additive: held_out_error(space, cost, train, test, seed, additive_kernel=additive)
            for additive in (False, True)
        }
        assert errors[True] < 0.01, errors  # log cost is exactly additive: learnt from the data
        assert errors[True] < 0.2 * errors[False], errors


def test_interaction_kernel_learns_a_sum_of_pair_effects() -> None:
    # Six three-valued parameters; the log cost is a sum of three pair effects, (a, b), (c, d) and
    # (e, f), each an arbitrary 3x3 table. Every parameter matters, so the Matern kernel cannot
    # ignore any of them, and value effects alone cannot express a pair; one effect per pair of
    # values is exactly this function.
    names = "abcdef"
    space = build_space({n: Categorical("p", "q", "r") for n in names})
    tables = np.random.default_rng(99).normal(0.0, 0.7, size=(3, 3, 3))

    def cost(config: dict) -> float:  # type: ignore[type-arg]
        k = ["pqr".index(config[n]) for n in names]
        return float(np.exp(sum(tables[i, k[2 * i], k[2 * i + 1]] for i in range(3))))

    every = space.at_index(range(space.size))
    for seed in range(2):
        rows = np.random.default_rng(seed).choice(space.size, 90, replace=False)
        train, test = every[rows], every[np.setdiff1d(np.arange(space.size), rows)]
        errors = {
            scale: held_out_error(
                space, cost, train, test, seed, additive_kernel=True, interaction_scale=scale
            )
            for scale in (0.0, 1.0)
        }
        assert errors[1.0] < 0.02, errors
        assert errors[0.0] > 0.2, errors  # without it the model cannot (the test is not trivial)


@pytest.mark.parametrize("kernel", ["matern", "matern+additive"])
def test_interaction_option_reaches_the_model(kernel: str) -> None:
    space = build_space({"a": Interval(1, 8), "b": Categorical("x", "y", "z")})
    strategy = BayesianOptimization(
        space, rng=np.random.default_rng(0), kernel=kernel, interaction_scale=1.0, initial=3
    )
    for _ in range(6):
        point = strategy.ask()
        config = space.configs(point)[0]
        strategy.tell(point, Outcome.ok(config["a"] * (2.0 if config["b"] == "y" else 1.0)))
    scale = strategy.surrogate.hyperparameters()["interaction_outputscale"]
    # Pair effects come with the value effects of matern+additive, and only with them.
    assert (scale > 0.0) == (kernel == "matern+additive")
