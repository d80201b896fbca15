"""``benchmarks/ablations/failures.py``: measures by hand, a smoke run on a tiny replay, hidden limits."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.ablations import failures as ablations
from benchmarks.ablations.spaces import AblationSpace, hidden_limits_replay
from benchmarks.common import REPLAY_DATA, ROOT
from pytest_autotune.replay import Replay
from pytest_autotune.space import Set, build_space


def test_evals_to_counts_until_the_level_is_reached() -> None:
    values = [None, 2.0, 1.2, None, 1.0]
    assert ablations.evals_to(values, 1.0, 0.90) == 5
    assert ablations.evals_to(values, 1.0, 0.80) == 3  # 1 / 1.2 = 0.833
    assert ablations.evals_to(values, 1.0, 0.50) == 2
    assert ablations.evals_to([None, 3.0], 1.0, 0.90) is None


def test_fail_share_reads_the_first_window() -> None:
    labels = ["ok", "compile", "runtime", "ok", "ok", "ok"]
    assert ablations.fail_share(labels, 2) == 0.5
    assert ablations.fail_share(labels, 4) == 0.5
    assert ablations.fail_share(labels, 100) == pytest.approx(2 / 6)


def run(values: list[float | None]) -> ablations.Run:
    labels = ["ok" if v is not None else "compile" for v in values]
    return ablations.Run("s", "worst", 0, labels, values, 0.0)


def test_summary_counts_runs_that_never_reach_the_level_beyond_the_cap() -> None:
    runs = [run([2.0, 1.0]), run([None, None, 2.0]), run([None, 1.0, 1.0]), run([2.0, 2.0, 2.0])]
    cell = ablations.summarise(runs, optimum=1.0, window=2)
    # evaluations to 0.90: 2, never, 2, never -> median of (2, 2, inf, inf) is inf
    assert math.isinf(cell.to_90)
    assert cell.unreached_90 == 0.5
    cell = ablations.summarise(runs[:3], optimum=1.0, window=2)
    assert cell.to_90 == 2.0
    assert cell.unreached_90 == pytest.approx(1 / 3)
    assert cell.fail_share == pytest.approx((0 + 1 + 0.5) / 3)
    report = ablations.json_report({"s": {"worst": cell}}, ["s"])
    assert report["failure_heavy"] == ["s"]
    assert report["s"]["worst"]["evals_to_90"] == 2.0
    assert report["s"]["worst"]["fail_share"] == pytest.approx(0.5)
    never = ablations.summarise(runs[1:2], optimum=1.0)
    assert ablations.json_report({"s": {"skip": never}}, [])["s"]["skip"]["evals_to_95"] is None


def tiny_space() -> AblationSpace:
    """A 6 x 6 grid, a bowl with its minimum at (4, 1), two failing regions with different labels."""
    space = build_space({"x": Set(*range(6)), "y": Set(*range(6))})
    entries: dict[str, dict[str, Any]] = {}
    for x in range(6):
        for y in range(6):
            if x == 5 and y <= 2:
                time: Any = "RuntimeFailedConfig"
            elif y == 5:
                time = "CompilationFailedConfig"
            else:
                time = 1.0 + (x - 4) ** 2 + (y - 1) ** 2
            entries[f"{x},{y}"] = {"time": time}
    return AblationSpace("tiny", Replay(space, entries, ["x", "y"], path=Path("tiny")), True, "test")


def test_every_row_runs_on_a_tiny_space_and_stops_at_the_cap_or_the_target() -> None:
    target = tiny_space()
    assert target.failure_labels == ["compile", "runtime"]
    assert target.failing_share == pytest.approx(9 / 36)
    for row in ablations.ROWS:
        result = ablations.run_one(target, row, seed=0, cap=15, window=10)
        assert 10 <= len(result.labels) <= 15
        reached = ablations.evals_to(result.values, target.replay.optimum, 0.95)
        assert reached is None or len(result.labels) == max(10, reached)
        assert [v is None for v in result.values] == [label != "ok" for label in result.labels]
    cell = ablations.summarise([result], target.replay.optimum, window=10)
    assert ablations.table({"tiny": {"per_label": cell}}, {"tiny": target}, cap=15).count("\n") == 2


def test_hidden_limits_space_fails_exactly_beyond_the_removed_limits() -> None:
    hidden = hidden_limits_replay(REPLAY_DATA)
    recorded = Replay.from_spaces_json(REPLAY_DATA / "spaces.json", "convolution__MI250X.json.gz")
    assert hidden.space.size > recorded.space.size
    assert hidden.optimum == recorded.optimum
    configs = hidden.space.configs(hidden.space.at_index(range(0, hidden.space.size, 7)))
    for config in configs:
        threads = config["block_size_x"] * config["block_size_y"]
        tile = (config["block_size_x"] * config["tile_size_x"] + config["filter_width"] - 1) * (
            config["block_size_y"] * config["tile_size_y"] + config["filter_height"] - 1
        )
        outcome = hidden.objective(config)
        if config["use_shmem"] and tile >= 12 * 1024:
            assert outcome.label == "compile"
        elif threads > 1024:
            assert outcome.label == "runtime"
        else:
            assert outcome == recorded.objective(config)


def test_runs_through_the_benchmark_runner() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "ablations", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--seeds" in done.stdout
    assert "--json" in done.stdout


def test_per_label_equals_feasibility_until_a_label_has_five_examples_beside_another() -> None:
    assert ablations.same_as_single_model(["ok", "compile"] * 4 + ["runtime"] * 4)
    # five of one label beside one of another: the default engine splits them into two forests
    assert not ablations.same_as_single_model(["ok", "compile"] * 5 + ["runtime"])
    assert not ablations.same_as_single_model(["compile"] * 5 + ["runtime"] * 5)
    assert ablations.same_as_single_model(["compile"] * 9)
    # the claim the benchmark relies on: such a feasibility run is the per_label run of its seed
    target = tiny_space()
    single = ablations.run_one(target, "feasibility", seed=2, cap=12, window=12)
    per_label = ablations.run_one(target, "per_label", seed=2, cap=12, window=12)
    assert ablations.same_as_single_model(single.labels)
    assert per_label.values == single.values
    assert per_label.labels == single.labels
