"""Transfer in the bo strategy: a good source speeds tuning up, a misleading one costs little."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pytest_autotune.outcome import Outcome
from pytest_autotune.space import Categorical, Interval, build_space
from pytest_autotune.space.base import Space
from pytest_autotune.strategies.bo.model.transfer import ranking_weights
from pytest_autotune.strategies.sources import SourceTrial, TransferSource, map_to_space
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.tuner import Tuner

FAST = {"candidates": 256, "local_starts": 4}
MODES = {"a": 0.3, "b": 0.0, "c": 0.6}


def space() -> Space:
    return build_space({"x": Interval(0, 63), "y": Interval(0, 63), "mode": Categorical("a", "b", "c")})


def bowl(x0: int, y0: int, best_mode: str, scale: float = 1.0):  # type: ignore[no-untyped-def]
    """A bowl with its optimum at (x0, y0, best_mode); configurations with x > 47 and y < 30 fail."""
    offsets = {m: abs(MODES[m] - MODES[best_mode]) for m in MODES}

    def objective(config: dict) -> Outcome:  # type: ignore[type-arg]
        x, y = config["x"], config["y"]
        if x > 47 and y < 30:
            return Outcome.failed("runtime", "out of resources")
        return Outcome.ok(scale * (1.0 + ((x - x0) / 8) ** 2 + ((y - y0) / 8) ** 2 + offsets[config["mode"]]))

    return objective


TARGET = bowl(45, 12, "b")
OPTIMUM = {"x": 45, "y": 12, "mode": "b"}


def history(objective, name: str, keep: int = 64) -> TransferSource:  # type: ignore[no-untyped-def]
    """What the store would keep of a source device: its best trials, relative, and failures seen."""
    configs = [{"x": x, "y": y, "mode": m} for x, y, m in itertools.product(range(64), range(64), MODES)]
    outcomes = [objective(c) for c in configs]
    measured = sorted((o.value, i) for i, o in enumerate(outcomes) if o.value is not None)[:keep]
    trials = [SourceTrial(configs[i], "ok", value / measured[0][0]) for value, i in measured]
    failing = [i for i, o in enumerate(outcomes) if o.value is None][::40]  # a few, as a run meets them
    trials += [SourceTrial(configs[i], "runtime") for i in failing]
    return TransferSource(name, trials, kind="device")


def evaluations_to_optimum(seed: int, budget: int, sources: list[TransferSource]) -> tuple[int, int]:
    """(evaluations until the optimum was measured, or budget + 1; failed evaluations)."""
    tuner = Tuner(space(), "bo", abort=Evaluations(budget), seed=seed, strategy_options=FAST, sources=sources)
    result = tuner.run(TARGET)
    found = next((n for n, r in enumerate(result.history, start=1) if r.config == OPTIMUM), budget + 1)
    return found, sum(not r.outcome.feasible for r in result.history)


def test_ranking_weights_trust_the_model_that_orders_the_target_trials() -> None:
    rng = np.random.default_rng(0)
    observed = rng.normal(size=12)
    right = observed + 0.01 * rng.normal(size=12)  # orders the trials as they are
    wrong = -observed  # orders them backwards
    noise = rng.normal(size=12)  # the target model's leave-one-out predictions, no better than chance
    weights = ranking_weights(np.stack([right, wrong, noise]), observed, rng)
    assert weights.sum() == pytest.approx(1.0)
    assert weights[0] > 0.9
    assert weights[1] == 0.0
    # with a target model as good as the source, the source no longer gets everything
    shared = ranking_weights(np.stack([right, observed]), observed, rng)
    assert 0.2 < shared[0] < 0.8


def test_a_good_source_finds_the_optimum_sooner_and_avoids_known_failures() -> None:
    # The source device's optimum is two steps away from the target's and its times are 3x.
    good = history(bowl(43, 14, "b", scale=3.0), "device 'good'")
    seeds, budget = (0, 1, 2), 25
    plain = [evaluations_to_optimum(s, budget, []) for s in seeds]
    warm = [evaluations_to_optimum(s, budget, [good]) for s in seeds]
    assert max(found for found, _ in warm) <= 20, warm
    assert np.mean([f for f, _ in warm]) + 5 <= np.mean([f for f, _ in plain]), (warm, plain)
    # the source's failures (the same resource limit) teach the feasibility model too
    assert sum(failed for _, failed in warm) < sum(failed for _, failed in plain), (warm, plain)


def test_a_misleading_source_costs_little() -> None:
    # The source device's best configurations are at the opposite corner, in another mode.
    misleading = history(bowl(5, 55, "c"), "device 'misleading'")
    seeds, budget = (0, 1, 2), 40
    plain = [evaluations_to_optimum(s, budget, [])[0] for s in seeds]
    misled = [evaluations_to_optimum(s, budget, [misleading])[0] for s in seeds]
    assert all(found <= budget for found in misled), misled
    assert np.mean(misled) <= np.mean(plain) + 6, (misled, plain)


def test_the_target_soon_outweighs_a_misleading_source() -> None:
    misleading = history(bowl(5, 55, "c"), "device 'misleading'")
    tuner = Tuner(space(), "bo", abort=Evaluations(20), seed=0, strategy_options=FAST, sources=[misleading])
    tuner.run(TARGET)
    weights = tuner.strategy.transfer.weights  # type: ignore[attr-defined]
    assert weights[-1] > 0.8, weights


def test_feasibility_rows_join_while_the_source_agrees_with_the_target() -> None:
    from pytest_autotune.strategies.bo import BayesianOptimization

    source = history(bowl(45, 12, "b"), "device 'same limits'")
    rng = np.random.default_rng(0)
    bo = BayesianOptimization(space(), rng=rng, sources=[source], **FAST)
    transfer = bo.transfer
    assert transfer is not None
    probe = space().to_points([{"x": 50, "y": 5, "mode": "a"}, {"x": 10, "y": 40, "mode": "a"}])
    features = bo.encoding.features(probe)[:, bo.encoding.active_columns()]
    mapped = map_to_space(source, space())
    assert mapped is not None
    agreeing = transfer.feasibility_rows(features, ["runtime", "ok"])
    assert agreeing is not None
    assert len(agreeing[1]) == 2 + len(mapped.labels)
    assert agreeing[2][:2].tolist() == [1.0, 1.0]
    assert agreeing[2][2:].max() < 1.0
    # the target measured a configuration in the source's failing region: the source is left out
    assert transfer.feasibility_rows(features, ["ok", "ok"]) is None


def test_a_flat_source_ranks_nothing_but_a_steep_one_does() -> None:
    from pytest_autotune.strategies.bo import BayesianOptimization

    configs = [{"x": x, "y": 3, "mode": "a"} for x in range(10)]
    flat = TransferSource("flat", [SourceTrial(c, "ok", 1.0 + 0.001 * i) for i, c in enumerate(configs)])
    steep = TransferSource("steep", [SourceTrial(c, "ok", 1.0 + 0.5 * i) for i, c in enumerate(configs)])
    bo = BayesianOptimization(space(), rng=np.random.default_rng(0), sources=[flat, steep], **FAST)
    transfer = bo.transfer
    assert transfer is not None
    assert transfer.models[0].surrogate is None
    assert transfer.models[1].surrogate is not None
    picks = transfer.design(4, set())
    assert [space().configs(p)[0]["x"] for p in picks] == [0, 1, 2, 3]  # the steep source's best, in order
