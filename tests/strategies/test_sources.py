"""Transfer sources: mapping into a target space, Replay caches as sources, the Tuner's plumbing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_autotune import Interval, Permutation, Pow2, Set, build_space
from pytest_autotune.replay import Replay
from pytest_autotune.space.base import Space
from pytest_autotune.strategies.sources import SourceTrial, TransferSource, map_to_space
from pytest_autotune.tuning.tuner import Tuner
from pytest_autotune.warning_types import AutotuneTransferWarning

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "replay"


def target_space() -> Space:
    return build_space({"BS": Pow2(1, 64, default=8), "WPT": Interval(1, 8, default=1)}, ["BS * WPT <= 128"])


def test_full_overlap_maps_every_valid_trial_and_keeps_values_and_labels() -> None:
    source = TransferSource(
        "dev A",
        [
            SourceTrial({"BS": 4, "WPT": 2}, "ok", 1.0),
            SourceTrial({"BS": 16, "WPT": 8}, "ok", 1.5),
            SourceTrial({"BS": 64, "WPT": 8}, "ok", 2.0),  # 512 > 128: not valid here
            SourceTrial({"BS": 32, "WPT": 4}, "compile"),
        ],
    )
    space = target_space()
    mapped = map_to_space(source, space)
    assert mapped is not None
    assert mapped.shared == ("BS", "WPT")
    assert space.configs(mapped.points) == [{"BS": 4, "WPT": 2}, {"BS": 16, "WPT": 8}, {"BS": 32, "WPT": 4}]
    assert mapped.labels == ("ok", "ok", "compile")
    assert mapped.values[:2].tolist() == [1.0, 1.5]
    assert np.isnan(mapped.values[2])
    assert mapped.dropped == 1
    assert space.configs(mapped.best(1)) == [{"BS": 4, "WPT": 2}]


def test_partial_overlap_completes_with_defaults_and_merges_trials_that_coincide() -> None:
    # The source has no WPT but an extra parameter VW: its trials differ here only by BS.
    source = TransferSource(
        "sibling",
        [
            SourceTrial({"BS": 4, "VW": 1}, "ok", 3.0),
            SourceTrial({"BS": 4, "VW": 2}, "ok", 2.0),
            SourceTrial({"BS": 32, "VW": 1}, "runtime"),
            SourceTrial({"BS": 32, "VW": 2}, "ok", 5.0),
            SourceTrial({"BS": 3, "VW": 1}, "ok", 1.0),  # 3 is not a power of two: dropped
        ],
    )
    space = target_space()
    mapped = map_to_space(source, space)
    assert mapped is not None
    assert mapped.shared == ("BS",)
    assert space.configs(mapped.points) == [{"BS": 4, "WPT": 1}, {"BS": 32, "WPT": 1}]
    # the best value of the merged trials wins; a failure counts only when nothing was measured
    assert mapped.labels == ("ok", "ok")
    assert mapped.values.tolist() == [2.0, 5.0]
    assert mapped.dropped == 1


@pytest.mark.parametrize(
    ("trials", "reason"),
    [
        ([SourceTrial({"TILE": 4}, "ok", 1.0)], "shares no parameter"),
        ([SourceTrial({"BS": 3}, "ok", 1.0), SourceTrial({"BS": 1000}, "ok", 1.0)], "none of its 2"),
        ([], "holds no trials"),
    ],
)
def test_a_source_that_does_not_overlap_is_skipped_with_a_warning_naming_it(
    trials: list[SourceTrial], reason: str
) -> None:
    with pytest.warns(AutotuneTransferWarning, match=f"'opencl:Other GPU' skipped: .*{reason}"):
        assert map_to_space(TransferSource("opencl:Other GPU", trials), target_space()) is None


def test_tuner_passes_sources_to_bo_and_other_strategies_ignore_them() -> None:
    space = target_space()
    source = TransferSource("dev A", [SourceTrial({"BS": 4, "WPT": 2}, "ok", 1.0)])
    bo = Tuner(space, "bo", abort=1, seed=0, sources=[source])
    assert bo.uses_sources
    assert bo.strategy.transfer is not None  # type: ignore[attr-defined]
    assert not Tuner(space, "random", abort=1, seed=0, sources=[source]).uses_sources
    with pytest.raises(TypeError, match="TransferSource"):
        Tuner(space, "bo", sources=[{"BS": 4}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="strategy given by name"):
        Tuner(space, Tuner(space, "random").strategy, sources=[source])


def test_a_source_without_overlap_does_not_stop_tuning() -> None:
    space = target_space()
    with pytest.warns(AutotuneTransferWarning, match="'elsewhere' skipped"):
        tuner = Tuner(
            space,
            "bo",
            abort=6,
            seed=0,
            sources=[TransferSource("elsewhere", [SourceTrial({"Q": 1}, "compile")])],
        )
    assert tuner.strategy.transfer is None  # type: ignore[attr-defined]
    result = tuner.run(lambda config: float(config["BS"] * config["WPT"]))
    assert result.evaluations == 6


def test_replay_as_source_keeps_the_best_relative_to_the_optimum_and_every_failure() -> None:
    replay = Replay.from_spaces_json(DATA / "spaces.json", "pnpoly__RTX_3090.json.gz")
    source = replay.as_source(best=10)
    measured = [t for t in source.trials if t.label == "ok"]
    failed = [t for t in source.trials if t.label != "ok"]
    assert source.name == "pnpoly__RTX_3090.json.gz"
    assert [t.value for t in measured] == sorted(t.value for t in measured)
    assert measured[0].value == 1.0
    assert measured[0].config == replay.optimum_config
    assert len(measured) == 10
    assert all(replay.objective(t.config).value == pytest.approx(t.value * replay.optimum) for t in measured)
    assert len(failed) == replay.space.size - replay.failure_counts["ok"]
    assert all(replay.objective(t.config).label == t.label for t in failed)
    with pytest.raises(ValueError, match="best"):
        replay.as_source(best=0)


def test_replay_as_source_warm_starts_tuning_of_the_same_landscape() -> None:
    replay = Replay.from_spaces_json(DATA / "spaces.json", "pnpoly__RTX_3090.json.gz")
    tuner = Tuner(replay.space, "bo", abort=1, seed=0, sources=[replay.as_source(best=64)])
    result = tuner.run(replay.objective)
    assert result.best_value == replay.optimum  # the source's best opens the run


def test_map_to_space_reads_json_lists_as_permutation_tuples() -> None:
    space = build_space({"order": Permutation("ijk"), "V": Set(1, 2, 4)})
    trials = [
        SourceTrial({"order": ["k", "i", "j"], "V": 2}, "ok", 1.0),
        SourceTrial({"order": ["i"], "V": 2}, "compile"),
    ]
    mapped = map_to_space(TransferSource("json", trials), space)
    assert mapped is not None
    assert mapped.dropped == 1
    assert space.configs(mapped.points) == [{"order": ("k", "i", "j"), "V": 2}]
