"""Store drills on real pytest processes: damaged, read-only and concurrently written ``autotune.json``.

Small repetition counts here; ``benchmarks/drills/faults.py`` runs the same drills with more.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType


def test_damaged_files_give_a_clear_error_and_stay_untouched(drills: ModuleType, tmp_path: Path) -> None:
    cases = drills.damaged_store_drill(tmp_path, cuts=1, flips=1, seed=3)
    assert sorted({case.kind for case in cases}) == [
        "byte replaced",
        "empty file",
        "newer schema",
        "truncated",
    ]
    assert [case for case in cases if not case.passed] == []
    for case in cases:
        if case.kind in ("newer schema", "empty file"):
            assert case.exit_code == 4  # a usage error naming the file, which stays byte-identical
            assert case.error_named_file
            assert case.unchanged


def test_read_only_and_unwritable_stores_fail_clearly_and_change_nothing(
    drills: ModuleType, tmp_path: Path
) -> None:
    cases = drills.read_only_drill(tmp_path)
    assert [(case.name, case.exit_code) for case in cases] == [
        ("read-only file", 0),  # a normal run only reads the store
        ("read-only file", 4),  # tuning refuses to start: its results could not be saved
        ("unwritable directory", 4),
        ("a file in the way", 4),
        ("made read-only during the run", 1),  # the run fails; entries written before stay
    ]
    assert [case for case in cases if not case.passed] == []


def test_concurrent_sessions_and_xdist_workers_lose_no_entry(drills: ModuleType, tmp_path: Path) -> None:
    xdist = drills.concurrent_store_drill(tmp_path / "xdist", tests=50, sessions=1, workers=4)
    assert xdist.passed, xdist
    assert xdist.entries == 50
    assert xdist.torn_reads == 0
    assert xdist.versions_seen >= 2  # written as tests finished, not once at the end
    sessions = drills.concurrent_store_drill(tmp_path / "sessions", tests=16, sessions=2, workers=2)
    assert sessions.passed, sessions
    assert sessions.entries == 16
