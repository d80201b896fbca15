"""Random-forest feasibility: learns a region, one forest per frequent failure label."""

from __future__ import annotations

import numpy as np

from pytest_autotune.outcome import Label
from pytest_autotune.strategies.bo.model.feasibility import FeasibilityModel


def labelled(n: int, seed: int) -> tuple[np.ndarray, list[Label]]:
    rng = np.random.default_rng(seed)
    x = rng.random((n, 2))
    labels: list[Label] = []
    for a, b in x:
        if a > 0.7:
            labels.append("compile")
        elif b > 0.8:
            labels.append("runtime")
        else:
            labels.append("ok")
    return x, labels


def test_no_failure_means_everything_feasible() -> None:
    model = FeasibilityModel(rng=np.random.default_rng(0))
    model.fit(np.random.default_rng(1).random((10, 2)), ["ok"] * 10)
    assert not model.active
    assert np.all(model.probability(np.random.default_rng(2).random((5, 2))) == 1.0)


def test_learns_both_failure_regions_with_one_forest_each() -> None:
    x, labels = labelled(200, seed=0)
    model = FeasibilityModel(rng=np.random.default_rng(0))
    model.fit(x, labels)
    assert len(model._forests) == 2
    probe = np.array([[0.2, 0.2], [0.9, 0.2], [0.2, 0.95], [0.5, 0.5]])
    p = model.probability(probe)
    assert p[0] > 0.8
    assert p[3] > 0.8
    assert p[1] < 0.2
    assert p[2] < 0.2


def test_rare_labels_share_one_forest() -> None:
    x, labels = labelled(200, seed=1)
    rare = ["timeout" if label == "runtime" else label for label in labels]
    rare[0] = "correctness"
    model = FeasibilityModel(rng=np.random.default_rng(0), min_per_label=1000)
    model.fit(x, rare)
    assert len(model._forests) == 1
    assert model.probability(np.array([[0.9, 0.1]]))[0] < 0.2
