"""The pieces every bad-input drill shares: the row types and small helpers.

A drill module (``benchmarks/drills_<area>.py``) exports ``DRILLS: list[Drill]``;
``python -m benchmarks bad-input-drills`` runs them and prints the table.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Drill", "Observation", "digest"]


@dataclass(frozen=True)
class Observation:
    """What a drill saw: a one-line description, whether it is the expected behaviour, and whether
    data the user had (an entry, a file, a journal, a tuning run's results) was lost."""

    observed: str
    passed: bool
    data_lost: bool = False


@dataclass(frozen=True)
class Drill:
    """One bad input: ``run`` gets a fresh empty directory and reports an :class:`Observation`."""

    area: str
    name: str
    expected: str
    run: Callable[[Path], Observation]


def digest(path: Path) -> str | None:
    """SHA-256 of a file's bytes (None when it does not exist): compare before and after a drill."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None
