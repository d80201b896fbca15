"""Which clock a comparison's blocks were judged on, and the other clock's blocks and ratio.

Each pair of workers reads both clocks (:mod:`pytest_autotune.timing.clock`); the blocks are judged
on the test's clock, wall time where a side read no CPU time. The other clock is reported beside
the verdict, never judged: the compare detail's ``clock`` and ``other_clock`` fields.
"""

from __future__ import annotations

import statistics
from typing import Any

from pytest_autotune.plugin.compare.pair import PairRun, SideTimes

__all__ = ["judged_clock"]


def judged_clock(pairs: list[PairRun]) -> dict[str, Any]:
    """The clock the blocks were judged on (``clock``, also the result's) and the other clock's blocks
    and ratio (the median of B/A per block; reported, not judged): the compare detail's ``clock`` fields."""
    clock = pairs[0].clock if all(pair.clock == pairs[0].clock for pair in pairs) else "wall"
    other = SideTimes([t for p in pairs for t in p.other.a], [t for p in pairs for t in p.other.b])
    ratios = [b / a for a, b in zip(other.a, other.b, strict=True) if a > 0]
    name = "wall" if clock == "cpu" else "cpu"
    return {
        "clock": clock,
        "other_clock": {
            "clock": name,
            "ratio": statistics.median(ratios) if ratios else None,
            "times": {"ref": other.a, "working": other.b},
        },
    }
