"""The Kernel Tuner spaces of the replay datasets (``benchmarks/data/replay``) rebuild to exactly their
recorded sizes."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from benchmarks.common import REPLAY_DATA
from pytest_autotune.space import Set, build_space


def _specs() -> list[dict[str, Any]]:
    specs: list[dict[str, Any]] = json.loads((REPLAY_DATA / "spaces.json").read_text())
    return specs


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s["file"])
def test_rebuilds_to_the_recorded_constrained_size(spec: dict[str, Any]) -> None:
    params = {name: Set(*values) for name, values in spec["tune_params"].items()}
    space = build_space(params, spec["restrictions"])
    assert space.size == spec["constrained_size"]
    configs = space.configs(space.sample(200, np.random.default_rng(0)))
    for config in configs:
        scope = dict(config)
        assert all(eval(r, {}, scope) for r in spec["restrictions"])  # the strings, evaluated directly
