"""``--autotune-compare=REF``: a tunable test at the commit REF (A) against the working tree (B).

:func:`compare_item` replaces the plain check of one test:

1. **Trees.** REF's files are exported once per session (:mod:`pytest_autotune.plugin.git_ref`,
   removed at the end). A test whose file is not in REF's tree is skipped as new.
2. **Sides.** Two workers start at once, one per tree (:mod:`pytest_autotune.plugin.compare_side`).
   Each collects the test from its own tree (test module, kernel sources, ``conftest.py``), with
   the pytest-autotune installed here, and plans it as a plain run would: the configuration that
   tree's ``autotune.json`` commits for this device, else the declared defaults (said in the
   report). Each runs the body once, asserts included: a failure of the working tree fails the
   test; a test REF lacks or cannot run is skipped, naming why.
3. **Measurements.** A measurement is one more run of the body in a side's worker, and counts as
   the median of the samples its ``autotune.measure`` took. Running the whole body each time gives
   each measurement fresh inputs and buffers: with the buffers of one run re-timed over and over,
   A-vs-A comparisons of the example kernels on a loaded 2-vCPU machine found one process of a
   pair 10-28% slower than the other for the whole pair's life, a bias that more blocks cannot
   remove. Both sides measure alike: a warm-up block (dropped) calibrates the :class:`Procedure`,
   the timed calls per ``autotune.measure`` (about :data:`MEASUREMENT_SECONDS` of them on the slower
   side) and the untimed warm-up call before them (none for long calls); then blocks of one A and
   one B measurement in ABBA order (:func:`~pytest_autotune.timing.paired.block_order`) follow until
   :func:`~pytest_autotune.timing.paired.measure_until_decided` decides or the time cap
   (``--autotune-compare-max-time``, counted from the start of the test's comparison) is reached.
4. **Verdict** (:func:`~pytest_autotune.timing.paired.judge`): the Hodges-Lehmann ratio B/A with its
   interval. ``regression`` (the interval lies above ``1 + compare_tolerance``) fails the test;
   ``inconclusive`` is a warning unless ``--autotune-compare-strict``; ``pass`` passes.

For an objective that is maximised (``autotune.record``ed throughput, say) the judged ratio is A/B,
so that above 1 still means worse.
"""

from __future__ import annotations

import math
import os
import statistics
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_autotune.plugin.compare_side import CompareSide, SideError
from pytest_autotune.plugin.git_ref import RefTree, export_tree, uncommitted
from pytest_autotune.plugin.results import AutotuneResult
from pytest_autotune.plugin.worker_protocol import ENV_VAR, SideSetup
from pytest_autotune.timing.measure import Stats
from pytest_autotune.timing.paired import PairedVerdict, SequentialPlan, block_order, measure_until_decided
from pytest_autotune.warning_types import AutotuneInconclusiveWarning

if TYPE_CHECKING:
    from pytest_autotune.plugin.options import Settings
    from pytest_autotune.plugin.planning import ItemPlan
    from pytest_autotune.plugin.session import AutotuneSession

__all__ = [
    "CONFIDENCE",
    "MEASUREMENT_SECONDS",
    "CompareContext",
    "Procedure",
    "compare_context",
    "compare_item",
    "measure_sides",
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
#: The sequential plan's first look and its block cap (looks at 8, 16 and 32 blocks).
MIN_BLOCKS: Final = 8
MAX_BLOCKS: Final = 32
#: Environment variables a side's worker does not inherit (they would make it tune, compare or write).
_NOT_INHERITED: Final = frozenset(
    {
        "PYTEST_ADDOPTS",
        ENV_VAR,
        "PYTEST_AUTOTUNE",
        "PYTEST_AUTOTUNE_UPDATE_BASELINE",
        "PYTEST_AUTOTUNE_PRUNE",
        "PYTEST_AUTOTUNE_JSON",
        "PYTEST_AUTOTUNE_REPORT_MD",
        "PYTEST_AUTOTUNE_CACHE",
        "PYTEST_AUTOTUNE_DEVICE",
    }
)


@dataclass
class CompareContext:
    """What every comparison of the session shares: REF's exported tree and where things are in it.

    ``root`` is REF's counterpart of the rootdir, ``ref_cache`` REF's ``autotune.json`` (None when
    the store lies outside the repository: both sides then read the same file), ``notes`` what the
    report says once (e.g. uncommitted changes to the working tree's ``autotune.json``).
    """

    ref: str
    commit: str
    tree: RefTree
    root: Path
    ref_cache: Path | None
    notes: list[str] = field(default_factory=list)


_CONTEXT: Final = pytest.StashKey[CompareContext]()


def compare_context(session: AutotuneSession) -> CompareContext:
    """The session's :class:`CompareContext`; REF's tree is exported on first use, removed at the end."""
    config = session.config
    found = config.stash.get(_CONTEXT, None)
    if found is not None:
        return found
    resolved = session.compare
    assert resolved is not None, "compare_context outside --autotune-compare"
    tree = export_tree(resolved)
    config.add_cleanup(tree.close)
    cache = session.settings.cache_path
    ref_cache = tree.mirror(cache)
    root = tree.mirror(session.rootpath) or tree.path
    context = CompareContext(resolved.ref, resolved.commit, tree, root, ref_cache)
    if ref_cache is None:
        context.notes.append(f"{cache} lies outside the git repository: both sides use it")
    elif uncommitted(resolved.toplevel, cache):
        context.notes.append(
            f"{cache.name} has uncommitted changes: the working tree's side uses them as they are"
        )
    config.stash[_CONTEXT] = context
    return context


def _side_environment(session: AutotuneSession, plan: ItemPlan, cache: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _NOT_INHERITED and not k.startswith("PYTEST_AUTOTUNE_COMPARE")
    }
    env["PYTEST_AUTOTUNE_CACHE"] = str(cache)
    spec = session.devices.spec_for(plan.device)  # the very same device (None: the host)
    if spec is not None:
        env["PYTEST_AUTOTUNE_DEVICE"] = spec
    return env


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
    """
    start = clock()
    times = SideTimes([], [])
    measure = {"A": measure_a, "B": measure_b}
    procedure = Procedure(CALIBRATION_REPEAT)

    def block(index: int) -> tuple[float, float]:
        values: dict[str, float] = {}
        for side in block_order(index):
            values[side] = statistics.median(measure[side](procedure.repeat, procedure.warmup))
        return values["A"], values["B"]

    warm = [block(index) for index in range(WARMUP_BLOCKS)]
    if calibrate:
        procedure = Procedure.for_calls(max(max(pair) for pair in warm))

    def judged_block(index: int) -> tuple[float, float]:
        a, b = block(index + WARMUP_BLOCKS)
        times.a.append(a)
        times.b.append(b)
        return (b, a) if maximize else (a, b)  # judged as cost: above 1 is worse

    remaining = max(seconds - (clock() - start), 1e-3)
    plan = SequentialPlan(MIN_BLOCKS, MAX_BLOCKS, remaining)
    verdict = measure_until_decided(
        judged_block, plan, tolerance=tolerance, confidence=CONFIDENCE, clock=clock
    )
    return verdict, times, procedure


def _side_info(setup: SideSetup) -> dict[str, Any]:
    return {"config": setup.config, "state": setup.state, "reason": setup.reason}


def _describe_side(name: str, info: dict[str, Any]) -> str:
    what = "committed" if info["state"] == "committed" else f"{info['state']}: {info['reason']}"
    return f"{name} {info['config']} ({what})"


def _start(sides: Sequence[CompareSide], repeat: int) -> list[SideSetup | SideError]:
    """Start both workers at once and run each body once; a side's problem comes back as its error."""

    def setup(side: CompareSide) -> SideSetup | SideError:
        try:
            return side.setup(repeat)
        except SideError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=len(sides)) as pool:
        return list(pool.map(setup, sides))


@dataclass
class _Outcome:
    """What :func:`compare_item` hands to the plugin: the result, and a failure or a skip reason."""

    result: AutotuneResult
    failure: str | None = None
    skip: str | None = None

    def skipped(self, reason: str, started: float) -> _Outcome:
        self.result.message = reason
        assert self.result.compare is not None
        self.result.compare.update(reason=reason, seconds=round(time.monotonic() - started, 3))
        self.skip = reason
        return self

    def as_tuple(self) -> tuple[AutotuneResult, str | None, str | None]:
        return self.result, self.failure, self.skip


def _result(item: pytest.Item, plan: ItemPlan, ref: str) -> AutotuneResult:
    params = getattr(getattr(item, "callspec", None), "params", {})
    return AutotuneResult(
        nodeid=item.nodeid,
        name=item.name,
        device=plan.device,
        mode="compare",
        state="skipped",
        config={},
        unit=plan.policy.unit,
        params={k: repr(v) for k, v in params.items()},
        compare={"verdict": "skipped", "ref": ref},
    )


def compare_item(
    session: AutotuneSession, item: pytest.Function, plan: ItemPlan
) -> tuple[AutotuneResult, str | None, str | None]:
    """Compare ``item`` at REF and in the working tree: ``(result, failure, skip reason)``.

    A pytest outcome raised by the working tree's body (``pytest.skip``, ``pytest.fail``, ...) is
    raised again here.
    """
    started = time.monotonic()
    context = compare_context(session)
    ref, settings = context.ref, session.settings
    outcome = _Outcome(_result(item, plan, ref))
    path = item.nodeid.split("::", 1)[0]
    if not (context.root / path).is_file():
        return outcome.skipped(f"new test: {path} does not exist at {ref}", started).as_tuple()
    timeout = plan.policy.trial_timeout
    ref_env = _side_environment(session, plan, context.ref_cache or settings.cache_path)
    working_env = _side_environment(session, plan, settings.cache_path)
    with (
        CompareSide(item, name=f"REF {ref}", root=context.root, env=ref_env, timeout=timeout) as side_a,
        CompareSide(item, name="the working tree", root=None, env=working_env, timeout=timeout) as side_b,
    ):
        setup_a, setup_b = _start((side_a, side_b), repeat=1)
        if isinstance(setup_b, SideError):
            if setup_b.ended is not None:
                setup_b.ended.raise_again()
            outcome.failure = f"cannot run the working tree's test: {setup_b}"
            return outcome.as_tuple()
        outcome.result.config = dict(setup_b.config)
        if isinstance(setup_a, SideError):
            why = "new test" if setup_a.kind == "missing" else "cannot run it at REF"
            return outcome.skipped(f"{why}: {setup_a}", started).as_tuple()
        try:
            verdict, times, procedure = measure_sides(
                side_a.measure,
                side_b.measure,
                tolerance=plan.policy.compare_tolerance,
                seconds=settings.compare_max_time - (time.monotonic() - started),
                maximize=plan.policy.maximize,
                calibrate=plan.policy.objective == "time",
            )
        except SideError as exc:
            if exc.side == side_a.name:
                return outcome.skipped(f"cannot measure it at REF: {exc}", started).as_tuple()
            if exc.ended is not None:
                exc.ended.raise_again()
            outcome.failure = f"cannot measure the working tree's test: {exc}"
            return outcome.as_tuple()
    seconds = time.monotonic() - started
    sides = (setup_a, setup_b)
    return _judged(outcome, context, verdict, times, procedure, sides, seconds, settings).as_tuple()


def _judged(
    outcome: _Outcome,
    context: CompareContext,
    verdict: PairedVerdict,
    times: SideTimes,
    procedure: Procedure,
    setups: tuple[SideSetup, SideSetup],
    seconds: float,
    settings: Settings,
) -> _Outcome:
    result = outcome.result
    sides = {"ref": _side_info(setups[0]), "working": _side_info(setups[1])}
    state = verdict.state
    result.state = "passed" if state == "pass" else state
    if verdict.faster:
        result.state = "faster"
    result.stats = Stats.of(times.b).to_dict()
    result.baseline = Stats.of(times.a).baseline(result.unit)
    assert result.compare is not None
    result.compare.update(
        verdict=state,
        ratio=verdict.ratio,
        low=verdict.low,
        high=verdict.high,
        blocks=verdict.blocks,
        seconds=round(seconds, 3),
        tolerance=verdict.tolerance,
        confidence=verdict.confidence,
        faster=verdict.faster,
        commit=context.commit,
        repeat=procedure.repeat,
        sides=sides,
        notes=list(context.notes),
        times={"ref": times.a, "working": times.b},
    )
    configs = f"{_describe_side('REF', sides['ref'])}; {_describe_side('working tree', sides['working'])}"
    where = f"{context.ref} ({context.commit[:12]})"
    if state == "regression":
        result.message = (
            f"slower than {where}: ratio {verdict.describe()}; {configs}.\n"
            "  expected? accept it with a larger tolerance: @tunable(compare_tolerance=...) or "
            "--autotune-compare-tolerance"
        )
        outcome.failure = f"performance regression: {result.message}"
    elif state == "inconclusive":
        result.message = (
            f"comparison with {where} inconclusive after {seconds:.0f}s: ratio {verdict.describe()}; "
            f"{configs}; measure longer with --autotune-compare-max-time"
        )
        if settings.compare_strict:
            outcome.failure = f"{result.message} (--autotune-compare-strict)"
        else:
            warnings.warn(AutotuneInconclusiveWarning(f"{result.nodeid}: {result.message}"), stacklevel=2)
    else:
        result.message = f"ratio {verdict.describe()}; {configs}"
    return outcome
