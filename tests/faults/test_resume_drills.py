"""Resume drills: SIGINT and SIGKILL in the middle of a test's tuning, then resume (real processes).

Each drill compares the resumed run with an uninterrupted run of the same project and seed:
same trials in the same order, same winner and baseline, no journaled trial evaluated again, a
valid ``autotune.json`` right after the interruption, and no trial worker left behind. The
helpers and the full matrix (more strategies, signals and pause points) are in
``benchmarks/drills/faults_kit.py`` and ``benchmarks/drills/faults.py``.
"""

from __future__ import annotations

import signal
from pathlib import Path
from types import ModuleType

import pytest


@pytest.mark.parametrize(
    ("strategy", "sig", "pause_at"),
    [("random", signal.SIGINT, 7), ("bo-light", signal.SIGKILL, 7)],
)
def test_interrupted_tuning_resumes_to_the_uninterrupted_result(
    drills: ModuleType, tmp_path: Path, strategy: str, sig: signal.Signals, pause_at: int
) -> None:
    reference = drills.reference_run(tmp_path / "reference", strategy)
    assert len(reference.trials) == drills.BUDGETS[strategy]
    assert any(label == "runtime" for _, label, _ in reference.trials)  # failures are journaled too
    result = drills.resume_drill(tmp_path / "drill", reference, sig, pause_at)
    assert result.problems == []
    assert result.journaled_before == pause_at - 1  # the paused trial was in flight, not journaled
    assert result.resumed_evaluated == len(reference.trials) - (pause_at - 1)
    assert result.repeated == 0
    assert result.same_trials
    assert result.same_winner
    assert result.store_valid_after_kill
    assert result.first_entry_kept
    assert result.worker_gone


def test_a_sigkill_at_an_arbitrary_moment_resumes_to_the_uninterrupted_result(
    drills: ModuleType, tmp_path: Path
) -> None:
    # not at a pause point: half-way through the sixth trial, wherever the process happens to be
    reference = drills.reference_run(tmp_path / "reference", "random")
    result = drills.chaos_drill(tmp_path / "drill", reference, after_trials=5, fraction=0.5)
    assert "nothing to drill" not in result.moment
    assert result.problems == []
    assert result.journaled_before >= 5
    assert result.repeated == 0
    assert result.same_trials
    assert result.same_winner
    assert result.store_valid_after_kill
    assert result.worker_gone
