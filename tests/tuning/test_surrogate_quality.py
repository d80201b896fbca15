"""The measures of ``benchmarks/strategy/surrogate_quality.py``: ranks by hand, a run on a smooth replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.strategy import surrogate_quality as quality
from pytest_autotune.replay import Replay
from pytest_autotune.space import Set, build_space


def test_first_rank_counts_the_candidates_scored_above_the_best_hit() -> None:
    scores = np.array([0.9, 0.1, 0.5, 0.7, 0.3])
    hits = np.array([False, False, True, False, True])
    assert quality.first_rank(scores, hits) == 3  # 0.9 and 0.7 come before the hit scoring 0.5
    assert quality.first_rank(scores, np.array([True, False, False, False, False])) == 1
    assert quality.first_rank(scores, np.zeros(5, dtype=bool)) is None


def test_first_rank_gives_no_credit_for_ties() -> None:
    flat = np.zeros(4)
    assert quality.first_rank(flat, np.array([False, True, False, False])) == 4
    assert quality.first_rank(flat, np.array([True, True, False, False])) == 3


def test_spearman_is_zero_for_a_constant_side() -> None:
    assert quality.spearman(np.array([1.0, 2.0, 3.0]), np.array([3.0, 5.0, 9.0])) == pytest.approx(1.0)
    assert quality.spearman(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1.0)
    assert quality.spearman(np.ones(3), np.array([3.0, 2.0, 1.0])) == 0.0


def smooth_replay(tmp_path: Path) -> Replay:
    """A 9 x 9 grid (one corner failing) timed by a smooth bowl with its minimum at (5, 3)."""
    space = build_space({"x": Set(*range(9)), "y": Set(*range(9))})
    entries: dict[str, dict[str, Any]] = {}
    for x in range(9):
        for y in range(9):
            time: float | str = 1.0 + 0.3 * (x - 5) ** 2 + 0.2 * (y - 3) ** 2
            if x >= 7 and y >= 7:
                time = "RuntimeFailedConfig"
            entries[f"{x},{y}"] = {"x": x, "y": y, "time": time}
    return Replay(space, entries, ["x", "y"], path=tmp_path / "bowl.json")


def test_the_surrogate_of_a_smooth_bowl_orders_the_rest_of_it(tmp_path: Path) -> None:
    target = smooth_replay(tmp_path)
    result = quality.assess(target, "bo", seed=2, budget=12)
    feasible = int(np.isfinite(target.values).sum())
    assert result.candidates == feasible - 12 + _failures_tried(target, seed=2, budget=12)
    assert result.rho > 0.9
    assert result.forest_rho > 0.5
    # this run has not evaluated the minimum yet; the model puts it first
    assert not result.found
    assert (result.rank_by_mean, result.rank_by_acquisition, result.top_fraction) == (1, 1, 1.0)


def test_a_run_that_found_the_only_near_optimal_configuration_has_no_rank(tmp_path: Path) -> None:
    result = quality.assess(smooth_replay(tmp_path), "bo", seed=3, budget=12)
    assert result.found
    assert (result.rank_by_mean, result.rank_by_acquisition, result.forest_rank) == (None, None, None)
    assert result.top_fraction < quality.NEAR  # nothing left within 0.95: the next best is 1 / 1.2


def _failures_tried(target: Replay, *, seed: int, budget: int) -> int:
    """How many failing configurations the same seeded run evaluated (they are not candidates)."""
    from pytest_autotune.tuning.tuner import Tuner

    result = Tuner(target.space, "bo", abort=budget, seed=seed).run(target.objective)
    return sum(record.outcome.value is None for record in result.history)


def test_a_strategy_without_a_surrogate_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="not a bo strategy"):
        quality.assess(smooth_replay(tmp_path), "random", seed=0, budget=5)


def test_the_command_refuses_a_strategy_without_a_surrogate_before_tuning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        quality.main(["--strategy", "random"])
    assert exc.value.code == 2
    assert "only the bo strategy" in capsys.readouterr().err
