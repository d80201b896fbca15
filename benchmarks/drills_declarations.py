"""Bad-input drills of one area (see benchmarks/bad_input_drills.py)."""

from __future__ import annotations

from benchmarks.bad_input_kit import Drill

DRILLS: list[Drill] = []
