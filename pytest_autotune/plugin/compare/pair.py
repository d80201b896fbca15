"""Pairs of workers for ``--autotune-compare``, measured to a verdict.

:func:`run_pairs` measures the two sides with one pair of workers after another
(:func:`run_pair`: REF's tree and the working tree, :mod:`pytest_autotune.plugin.compare.side`,
started at once, each body run once, asserts included), and judges all their blocks with the pair
as the unit (:func:`~pytest_autotune.timing.pairs.judge_pairs`):

* Two processes running the same code can differ for their whole life (memory placement, a
  device's performance state): on an H200 the blocks of one pair sat in plateaus 5-10% away from
  another pair's, and one pair passed a +5% change. So fewer than :data:`MIN_PAIRS` pairs decide
  only a change that clears the tolerance by more than two processes may differ (a 2x slowdown),
  and pairs that disagree widen the interval until the verdict is inconclusive, instead of
  passing silently (:mod:`pytest_autotune.timing.stopping`).
* A measurement is one more run of the body in a side's worker, and counts as the median of the
  samples its ``autotune.measure`` took. Running the whole body each time gives each measurement
  fresh inputs and buffers: A-vs-A pairs that re-timed one run's buffers differed by 10-28% per
  process pair on a loaded machine.
* Both sides measure alike: each pair's warm-up block (dropped) warms its workers; the first one
  also calibrates the :class:`Procedure` that every pair then uses, the timed calls per
  ``autotune.measure`` (about :data:`MEASUREMENT_SECONDS` of them on the slower side) and the
  untimed warm-up call before them (none for long calls); then :data:`BLOCKS_PER_PAIR` blocks of
  one A and one B measurement in ABBA order (:func:`~pytest_autotune.timing.paired.block_order`).
* The sequential plan (:class:`~pytest_autotune.timing.stopping.PairLooks`) looks after the first
  pair, then at each doubling, up to as many pairs as the time cap holds at the first pair's
  duration (:func:`max_pairs_for`), splitting the error across its looks; no pair starts once less
  time is left than a pair takes.

For an objective that is maximised (``autotune.record``ed throughput, say) the judged ratio is A/B,
so that above 1 still means worse. A side that cannot be run comes back as a
:class:`~pytest_autotune.plugin.compare.side.SideError` naming it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pytest_autotune.plugin.compare.messages import SideSetup
from pytest_autotune.plugin.compare.side import CompareSide, SideError
from pytest_autotune.timing.paired import PairedVerdict, block_order
from pytest_autotune.timing.stopping import MIN_PAIRS, PairLooks, judge_look

if TYPE_CHECKING:
    import pytest

__all__ = [
    "BLOCKS_PER_PAIR",
    "CONFIDENCE",
    "MEASUREMENT_SECONDS",
    "MIN_PAIRS",
    "PairRun",
    "Procedure",
    "SideSpec",
    "SideTimes",
    "judge_runs",
    "max_pairs_for",
    "measure_sides",
    "run_pair",
    "run_pairs",
]

#: Confidence of the ratio's two-sided interval (split across the sequential looks).
CONFIDENCE: Final = 0.95
#: Seconds of timed calls one measurement aims at (``repeat`` x the time of one call).
MEASUREMENT_SECONDS: Final = 0.25
#: Calls at least this long get no warm-up call before each measurement.
LONG_CALL: Final = 0.1
#: Most timed calls per ``autotune.measure`` (for very short calls).
MAX_REPEAT: Final = 50
#: Blocks measured and dropped by each pair before its judged ones (the first pair's calibrate ``repeat``).
WARMUP_BLOCKS: Final = 1
#: Timed calls per ``autotune.measure`` in the warm-up blocks.
CALIBRATION_REPEAT: Final = 2
#: Judged blocks per pair of workers (ABBA: an even number balances the order).
BLOCKS_PER_PAIR: Final = 4
#: The sequential plan's cap in pairs of workers, whatever the time (:data:`MIN_PAIRS`, from
#: :mod:`pytest_autotune.timing.stopping`: the pairs from which their spread is read).
MAX_PAIRS: Final = 64
#: A pair cut short by the time cap is judged only with at least this many blocks (one AB, one BA).
MIN_PAIR_BLOCKS: Final = 2
#: The plan's last look is at this many times the pairs that fit the time cap, at the first pair's
#: duration (the time cap, with its own last look, usually ends measuring first).
PAIR_MARGIN: Final = 1.5


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


@dataclass(frozen=True)
class Measured:
    """What one pair's blocks gave: the judged times, the procedure they used, and the scale for
    values that are not all positive (the magnitude of A's warm-up value)."""

    times: SideTimes
    procedure: Procedure
    scale: float


def measure_sides(
    measure_a: Callable[[int, int], Sequence[float]],
    measure_b: Callable[[int, int], Sequence[float]],
    *,
    seconds: float,
    procedure: Procedure | None = None,
    calibrate: bool = True,
    blocks: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Measured:
    """One pair's warm-up blocks, then ``blocks`` (:data:`BLOCKS_PER_PAIR`) ABBA blocks, within ``seconds``.

    ``measure_a(repeat, warmup)``/``measure_b(repeat, warmup)`` take one measurement of their side
    and return its samples. The warm-up blocks use :data:`CALIBRATION_REPEAT` calls; without a
    ``procedure`` (the first pair) they choose it, with ``calibrate``, from the slower side's
    median. No block starts once ``seconds`` are spent: fewer blocks, or none, come back.
    """
    start = clock()
    count = BLOCKS_PER_PAIR if blocks is None else blocks
    times = SideTimes([], [])
    measure = {"A": measure_a, "B": measure_b}
    chosen = procedure
    current = Procedure(CALIBRATION_REPEAT)

    def block(index: int) -> tuple[float, float]:
        values: dict[str, float] = {}
        for side in block_order(index):
            values[side] = statistics.median(measure[side](current.repeat, current.warmup))
        return values["A"], values["B"]

    warm: list[tuple[float, float]] = []
    for index in range(WARMUP_BLOCKS):
        if clock() - start >= seconds:
            return Measured(times, chosen or current, 1.0)
        warm.append(block(index))
    if chosen is None:
        chosen = Procedure.for_calls(max(max(pair) for pair in warm)) if calibrate else current
    current = chosen
    for index in range(count):
        if clock() - start >= seconds:
            break
        a, b = block(index + WARMUP_BLOCKS)
        times.a.append(a)
        times.b.append(b)
    return Measured(times, chosen, _scale(warm))


def _scale(warm: Sequence[tuple[float, float]]) -> float:
    """The magnitude that differences are judged against when values are not all positive: A's
    warm-up value (B's when A's is 0; 1, an absolute difference, when both are)."""
    for value in (*(abs(a) for a, _ in warm), *(abs(b) for _, b in warm)):
        if math.isfinite(value) and value > 0:
            return value
    return 1.0


def max_pairs_for(seconds: float, pair_seconds: float) -> int:
    """The plan's pair cap for ``seconds`` of pairs of ``pair_seconds`` each (with the margin)."""
    fit = math.floor(PAIR_MARGIN * seconds / pair_seconds) if pair_seconds > 0 else MAX_PAIRS
    return max(MIN_PAIRS, min(MAX_PAIRS, fit))


def _start(
    ref: CompareSide, working: CompareSide, *, deadline: float | None, seconds: float, cap: str
) -> tuple[SideSetup, SideSetup, float]:
    """Start both workers at once, then run each body once; the working tree's problem is raised first.

    Everything waits in this thread (no pool to join), so an interrupt ends it at once. Without a
    ``deadline`` (the first pair) the time cap (``seconds``) starts when both workers are ready: it
    covers the first runs, the blocks and every later pair. Returns the setups and the deadline.
    """
    errors: dict[str, SideError] = {}
    for side in (ref, working):
        side.launch()  # both processes start now; the waits below overlap them
    for side in (ref, working):
        try:
            side.start()
        except SideError as exc:
            errors[side.name] = exc
    if deadline is None:
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
    return setups[ref.name], setups[working.name], deadline


@dataclass(frozen=True)
class PairRun:
    """What one pair of workers found: each side's setup, its judged times, the procedure, the
    scale of values that are not all positive, and the time cap's deadline (``time.monotonic()``)."""

    setups: tuple[SideSetup, SideSetup]
    times: SideTimes
    procedure: Procedure
    scale: float = 1.0
    deadline: float = math.inf
    #: The clock ``times`` are on, and the same blocks on the other clock (empty where not read).
    clock: str = "wall"
    other: SideTimes = field(default_factory=lambda: SideTimes([], []))


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
    seconds: float,
    deadline: float | None,
    procedure: Procedure | None,
    calibrate: bool,
    cap: str = "the time cap",
    clock: str = "wall",
) -> PairRun:
    """One pair of workers: start both sides, run each body once, and measure their blocks, all
    before ``deadline`` (None, the first pair: ``seconds`` after both workers are ready; ``cap``
    names that limit in messages). ``procedure`` None: the warm-up block calibrates it. ``clock``:
    the one the blocks are judged on (:mod:`pytest_autotune.timing.clock`); the other is kept too.

    Raises :class:`~pytest_autotune.plugin.compare.side.SideError` when a side cannot be run or
    measured (the working tree's first).
    """
    with (
        CompareSide(item, name=ref.name, root=ref.root, env=ref.env, timeout=timeout, clock=clock) as side_a,
        CompareSide(
            item, name=working.name, root=working.root, env=working.env, timeout=timeout, clock=clock
        ) as side_b,
    ):
        setup_a, setup_b, deadline = _start(side_a, side_b, deadline=deadline, seconds=seconds, cap=cap)
        if not (setup_a.run.cpu and setup_b.run.cpu):  # a side reads no CPU time: both judge on wall
            side_a.clock = side_b.clock = "wall"
        measured = measure_sides(
            side_a.measure,
            side_b.measure,
            seconds=deadline - time.monotonic(),
            procedure=procedure,
            calibrate=calibrate,
        )
    judged = clock if side_a.judged_on == side_b.judged_on == clock else "wall"
    blocks = len(measured.times.a)  # the other clock's medians of the judged blocks (after warm-ups)
    other = SideTimes(side_a.other[-blocks:], side_b.other[-blocks:]) if blocks else SideTimes([], [])
    if len(other.a) != blocks or len(other.b) != blocks:
        other = SideTimes([], [])
    return PairRun(
        (setup_a, setup_b), measured.times, measured.procedure, measured.scale, deadline, judged, other
    )


def judge_runs(
    runs: Sequence[PairRun],
    *,
    tolerance: float,
    confidence: float = CONFIDENCE,
    maximize: bool = False,
    max_pairs: int | None = None,
) -> PairedVerdict:
    """The verdict of all pairs' blocks at one look of a plan of up to ``max_pairs`` pairs (None:
    these runs), the pair as the unit (:func:`~pytest_autotune.timing.stopping.judge_look`).

    A pair that the time cap cut to fewer than :data:`MIN_PAIR_BLOCKS` blocks is left out; with no
    pair left the verdict is :meth:`~pytest_autotune.timing.paired.PairedVerdict.unmeasured`. A
    maximised objective is judged as A/B, so that above 1 still means worse.
    """
    kept = [run for run in runs if len(run.times.a) >= MIN_PAIR_BLOCKS]
    if not kept:
        return PairedVerdict.unmeasured(tolerance, confidence)
    groups = [(run.times.b, run.times.a) if maximize else (run.times.a, run.times.b) for run in kept]
    looks = PairLooks(max_pairs or len(runs), confidence)
    return judge_look(groups, tolerance=tolerance, looks=looks, scale=kept[0].scale)


def run_pairs(
    run_one: Callable[[Procedure | None, float | None], PairRun],
    *,
    tolerance: float,
    seconds: float,
    maximize: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[PairedVerdict, list[PairRun]]:
    """Pairs of workers until the verdict is decided or the time cap is spent (module docstring).

    ``run_one(procedure, deadline)`` runs one pair (:func:`run_pair`); the first gets neither and
    fixes both. The plan's looks (after 1, 2, 4, ... pairs up to :func:`max_pairs_for` the time the
    first pair took: :class:`~pytest_autotune.timing.stopping.PairLooks`) each judge at a
    confidence split across them, so over the whole run a false regression (and a false pass) each
    stay below ``(1 - CONFIDENCE) / 2``. No pair starts when less time is left than a pair has
    taken on average; the last verdict is returned.
    """
    started = clock()
    runs = [run_one(None, None)]
    deadline, procedure = runs[0].deadline, runs[0].procedure
    first_seconds = max(clock() - started, 1e-6)
    cap = max_pairs_for(deadline - started, first_seconds)
    looks = set(PairLooks(cap, CONFIDENCE).looks())
    while True:
        per_pair = (clock() - started) / len(runs)
        out_of_time = deadline - clock() < per_pair
        if len(runs) in looks or out_of_time or len(runs) >= cap:
            verdict = judge_runs(runs, tolerance=tolerance, maximize=maximize, max_pairs=cap)
            if verdict.state != "inconclusive" or out_of_time or len(runs) >= cap:
                return verdict, runs
        runs.append(run_one(procedure, deadline))
