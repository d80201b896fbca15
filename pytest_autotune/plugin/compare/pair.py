"""One pair of workers for ``--autotune-compare``, measured to a verdict.

:func:`run_pair` starts the two sides at once (:mod:`pytest_autotune.plugin.compare.side`: REF's
tree and the working tree), runs each body once, asserts included, then measures them against each
other (:func:`measure_sides`):

* A measurement is one more run of the body in a side's worker, and counts as the median of the
  samples its ``autotune.measure`` took. Running the whole body each time gives each measurement
  fresh inputs and buffers: A-vs-A pairs that re-timed one run's buffers differed by 10-28% per
  process pair on a loaded machine.
* Both sides measure alike: a warm-up block (dropped) calibrates the :class:`Procedure`, the timed
  calls per ``autotune.measure`` (about :data:`MEASUREMENT_SECONDS` of them on the slower side) and
  the untimed warm-up call before them (none for long calls); then blocks of one A and one B
  measurement in ABBA order (:func:`~pytest_autotune.timing.paired.block_order`) follow until
  :func:`~pytest_autotune.timing.paired.measure_until_decided` decides or the time is spent.
  The sequential plan looks at :data:`MIN_BLOCKS` blocks, then at each doubling, up to as many
  blocks as the time left holds at the first judged block's duration (:func:`max_blocks_for`):
  a longer ``--autotune-compare-max-time`` buys more blocks and so a narrower interval.

For an objective that is maximised (``autotune.record``ed throughput, say) the judged ratio is A/B,
so that above 1 still means worse. A side that cannot be run comes back as a
:class:`~pytest_autotune.plugin.compare.side.SideError` naming it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pytest_autotune.plugin.compare.side import CompareSide, SideError
from pytest_autotune.plugin.workers.protocol import SideSetup
from pytest_autotune.timing.paired import PairedVerdict, SequentialPlan, block_order, measure_until_decided

if TYPE_CHECKING:
    import pytest

__all__ = [
    "CONFIDENCE",
    "MEASUREMENT_SECONDS",
    "PairRun",
    "Procedure",
    "SideSpec",
    "SideTimes",
    "max_blocks_for",
    "measure_sides",
    "run_pair",
]

#: Confidence of the ratio's two-sided interval (split across the sequential looks).
CONFIDENCE: Final = 0.95
#: Seconds of timed calls one measurement aims at (``repeat`` x the time of one call).
MEASUREMENT_SECONDS: Final = 0.25
#: Calls at least this long get no warm-up call before each measurement.
LONG_CALL: Final = 0.1
#: Most timed calls per ``autotune.measure`` (for very short calls).
MAX_REPEAT: Final = 50
#: Blocks measured and dropped before the judged ones (they also calibrate ``repeat``).
WARMUP_BLOCKS: Final = 1
#: Timed calls per ``autotune.measure`` in the warm-up blocks.
CALIBRATION_REPEAT: Final = 2
#: The sequential plan's first look, and its block cap whatever the time (looks at 8, 16, 32, ...).
MIN_BLOCKS: Final = 8
MAX_BLOCKS: Final = 1024
#: The plan's last look is at this many times the blocks that fit the time left, at the first
#: judged block's duration (the time cap, with its own last look, usually ends measuring first).
BLOCK_MARGIN: Final = 1.5


@dataclass(frozen=True)
class Procedure:
    """How each measurement is taken, alike on both sides: ``warmup`` untimed and ``repeat`` timed
    calls per ``autotune.measure`` (a warm-up the test sets itself wins)."""

    repeat: int
    warmup: int = 1

    @classmethod
    def for_calls(cls, seconds: float) -> Procedure:
        """The procedure for calls of ``seconds`` each (the slower side's, from the warm-up block).

        Calls of :data:`LONG_CALL` or more get no warm-up call: what it would warm (caches, the
        device's threads) is a negligible part of them, and it would double the time they cost.
        """
        if not (math.isfinite(seconds) and seconds > 0):
            return cls(1)
        repeat = max(1, min(MAX_REPEAT, round(MEASUREMENT_SECONDS / seconds)))
        return cls(repeat, 0 if seconds >= LONG_CALL else 1)


@dataclass(frozen=True)
class SideTimes:
    """The judged measurements (medians) of both sides, in block order."""

    a: list[float]
    b: list[float]


def measure_sides(
    measure_a: Callable[[int, int], Sequence[float]],
    measure_b: Callable[[int, int], Sequence[float]],
    *,
    tolerance: float,
    seconds: float,
    maximize: bool = False,
    calibrate: bool = True,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[PairedVerdict, SideTimes, Procedure]:
    """Warm-up blocks, then ABBA blocks until decided or ``seconds`` are spent (module docstring).

    ``measure_a(repeat, warmup)``/``measure_b(repeat, warmup)`` take one measurement of their side
    and return its samples. The warm-up blocks use :data:`CALIBRATION_REPEAT` calls and, with
    ``calibrate``, choose the :class:`Procedure` of the judged blocks from the slower side's median.
    No block starts once ``seconds`` are spent: the verdict is then inconclusive (with no judged
    block, :meth:`~pytest_autotune.timing.paired.PairedVerdict.unmeasured`). The warm-up block
    also fixes the scale of values that are not all positive (a metric): the magnitude of A's.
    """
    start = clock()
    times = SideTimes([], [])
    measure = {"A": measure_a, "B": measure_b}
    procedure = Procedure(CALIBRATION_REPEAT)
    unmeasured = PairedVerdict.unmeasured(tolerance, CONFIDENCE)

    def block(index: int) -> tuple[float, float]:
        values: dict[str, float] = {}
        for side in block_order(index):
            values[side] = statistics.median(measure[side](procedure.repeat, procedure.warmup))
        return values["A"], values["B"]

    warm: list[tuple[float, float]] = []
    for index in range(WARMUP_BLOCKS):
        if clock() - start >= seconds:
            return unmeasured, times, procedure
        warm.append(block(index))
    if calibrate:
        procedure = Procedure.for_calls(max(max(pair) for pair in warm))
    scale = _scale(warm)

    def judged_block(index: int) -> tuple[float, float]:
        a, b = block(index + WARMUP_BLOCKS)
        times.a.append(a)
        times.b.append(b)
        return (b, a) if maximize else (a, b)  # judged as cost: above 1 is worse

    # The plan is fixed before any ratio is judged: its block cap comes from the time left and the
    # duration of the first judged block (a time, which says nothing about the ratio), so that a
    # longer --autotune-compare-max-time buys more blocks, and more blocks a narrower interval.
    time_left = seconds - (clock() - start)  # for all judged blocks, the first included
    if time_left <= 0:
        return unmeasured, times, procedure
    block_started = clock()
    first = judged_block(0)
    block_seconds = max(clock() - block_started, 1e-6)
    after_first = max(time_left - block_seconds, 1e-3)
    plan = SequentialPlan(MIN_BLOCKS, max_blocks_for(time_left, block_seconds), after_first)

    def planned_block(index: int) -> tuple[float, float]:
        return first if index == 0 else judged_block(index)

    verdict = measure_until_decided(
        planned_block, plan, tolerance=tolerance, confidence=CONFIDENCE, clock=clock, scale=scale
    )
    return verdict, times, procedure


def _scale(warm: Sequence[tuple[float, float]]) -> float:
    """The magnitude that differences are judged against when values are not all positive: A's
    warm-up value (B's when A's is 0; 1, an absolute difference, when both are)."""
    for value in (*(abs(a) for a, _ in warm), *(abs(b) for _, b in warm)):
        if math.isfinite(value) and value > 0:
            return value
    return 1.0


def max_blocks_for(seconds: float, block_seconds: float) -> int:
    """The plan's block cap for ``seconds`` of blocks of ``block_seconds`` each (with the margin)."""
    fit = math.floor(BLOCK_MARGIN * seconds / block_seconds) if block_seconds > 0 else MAX_BLOCKS
    return max(MIN_BLOCKS, min(MAX_BLOCKS, fit))


def _start(
    ref: CompareSide, working: CompareSide, *, seconds: float, cap: str
) -> tuple[SideSetup, SideSetup]:
    """Start both workers at once, then run each body once; the working tree's problem is raised first.

    Everything waits in this thread (no pool to join), so an interrupt ends it at once. The time cap
    (``seconds``) starts when both workers are ready: it covers the first runs and the blocks.
    """
    errors: dict[str, SideError] = {}
    for side in (ref, working):
        side.launch()  # both processes start now; the waits below overlap them
    for side in (ref, working):
        try:
            side.start()
        except SideError as exc:
            errors[side.name] = exc
    deadline = time.monotonic() + seconds
    setups: dict[str, SideSetup] = {}
    for side in (working, ref):
        side.deadline, side.cap = deadline, cap
        if side.name not in errors:
            try:
                setups[side.name] = side.setup(1)
            except SideError as exc:
                errors[side.name] = exc
    for side in (working, ref):
        if side.name in errors:
            raise errors[side.name]
    return setups[ref.name], setups[working.name]


@dataclass(frozen=True)
class PairRun:
    """What one pair of workers found: each side's setup, the verdict, the judged times, the procedure."""

    setups: tuple[SideSetup, SideSetup]
    verdict: PairedVerdict
    times: SideTimes
    procedure: Procedure


@dataclass(frozen=True)
class SideSpec:
    """Where a side's worker runs from (``root`` None: the working tree) and its environment."""

    name: str
    root: Path | None
    env: dict[str, str]


def run_pair(
    item: pytest.Item,
    ref: SideSpec,
    working: SideSpec,
    *,
    timeout: float | None,
    tolerance: float,
    seconds: float,
    maximize: bool,
    calibrate: bool,
    cap: str = "the time cap",
) -> PairRun:
    """Start both sides, run each body once, and measure them against each other: all within
    ``seconds`` of both workers being ready (``cap`` names that limit in messages).

    Raises :class:`~pytest_autotune.plugin.compare.side.SideError` when a side cannot be run or
    measured (the working tree's first).
    """
    with (
        CompareSide(item, name=ref.name, root=ref.root, env=ref.env, timeout=timeout) as side_a,
        CompareSide(item, name=working.name, root=working.root, env=working.env, timeout=timeout) as side_b,
    ):
        setup_a, setup_b = _start(side_a, side_b, seconds=seconds, cap=cap)
        assert side_a.deadline is not None
        verdict, times, procedure = measure_sides(
            side_a.measure,
            side_b.measure,
            tolerance=tolerance,
            seconds=side_a.deadline - time.monotonic(),
            maximize=maximize,
            calibrate=calibrate,
        )
    return PairRun((setup_a, setup_b), verdict, times, procedure)
