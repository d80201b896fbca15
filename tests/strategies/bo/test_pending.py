"""``bo`` with trials under way on other devices: the kriging believer and batch suggestions.

With four trials outstanding, ``bo`` once re-proposed the best pending configuration over and over
(722 ``ask`` calls for 40 trials, 22 of them the tuner's random fallbacks). Told what is under way,
it proposes a new configuration at every ask.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_autotune import testing
from pytest_autotune.space.base import Points
from pytest_autotune.strategies.bo.model.encoding import Encoding
from pytest_autotune.strategies.bo.model.surrogate import GPSurrogate
from pytest_autotune.tuning.abort import Evaluations
from pytest_autotune.tuning.trials import Trial
from pytest_autotune.tuning.tuner import Tuner

QUICK = {"initial": 4, "fit_restarts": 0, "candidates": 128, "local_starts": 2}


def test_believing_a_configuration_collapses_its_uncertainty_only() -> None:
    space = testing.toy_space()
    rng = np.random.default_rng(3)
    encoding = Encoding.of(space)
    points = space.sample(40, rng).unique()
    told, pending, elsewhere = points[:20], points[20:23], points[23:]
    values = np.array([testing.toy_objective(c).value or 50.0 for c in space.configs(told)])
    surrogate = GPSurrogate(encoding, priors="gamma", log_transform=True, rng=rng, fit_restarts=0)
    surrogate.fit(encoding.features(told), values)
    best = surrogate.best_target
    mean_before, std_before = surrogate.predict(encoding.features(pending))
    surrogate.believe(encoding.features(pending))
    mean_after, std_after = surrogate.predict(encoding.features(pending))
    assert np.allclose(mean_after.numpy(), mean_before.numpy(), atol=1e-3)  # believed at its own mean
    assert bool((std_after < 0.2 * std_before).all())
    assert surrogate.best_target == best  # the incumbent is a real trial
    _, std_elsewhere = surrogate.predict(encoding.features(elsewhere))
    assert bool((std_elsewhere > 0).all())


def test_four_trials_under_way_cost_one_ask_each_and_no_fallback() -> None:
    space = testing.toy_space()
    tuner = Tuner(space, "bo", abort=Evaluations(16), seed=2, strategy_options=QUICK)
    asks = 0
    original = tuner.strategy.ask

    def counting() -> Points:
        nonlocal asks
        asks += 1
        return original()

    tuner.strategy.ask = counting  # type: ignore[method-assign]
    under_way: list[Trial] = []
    while True:
        while len(under_way) < 4 and (trial := tuner.ask()) is not None:
            under_way.append(trial)
        if not under_way:
            break
        finished = under_way.pop(1 if len(under_way) > 1 else 0)  # not in the order asked
        tuner.tell(finished, testing.toy_objective(finished.config))
    assert tuner.result.evaluations == 16
    assert asks == 16


@pytest.mark.parametrize("pending", [0, 3])
def test_a_suggestion_never_proposes_what_is_under_way(pending: int) -> None:
    space = testing.toy_space()
    from pytest_autotune.strategies import make_strategy

    rng = np.random.default_rng(5)
    strategy = make_strategy("bo", space, rng, QUICK)
    points = space.sample(30, rng).unique()
    for point in points[:12]:
        strategy.tell(point, testing.toy_objective(space.configs(point)[0]))
    under_way = list(points[12 : 12 + pending])
    strategy.pending(under_way)
    taken = {p.keys()[0] for p in [*points[:12], *under_way]}
    for _ in range(5):
        proposal = strategy.ask()
        assert proposal.keys()[0] not in taken
        under_way.append(proposal)
        taken.add(proposal.keys()[0])
        strategy.pending(under_way)
