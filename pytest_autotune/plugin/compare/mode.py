"""``--autotune-compare=REF``: a tunable test at the commit REF (A) against the working tree (B).

:func:`compare_item` replaces the plain check of one test:

1. **Trees.** REF's files are exported once per session (:mod:`pytest_autotune.plugin.compare.git_ref`,
   submodules included, removed at the end). A test whose file is not in REF's tree is skipped as
   new; one in a submodule that could not be exported is skipped saying so. Each side's worker
   imports the project's code from its own tree only (:mod:`pytest_autotune.plugin.compare.import_guard`,
   with the project's packages from :mod:`pytest_autotune.plugin.compare.project_packages`): an editable
   or a normal install of the working tree cannot stand in for REF's code. When a side would not
   run its own tree's code (a compiled extension REF has no build of, a module that escaped), the
   comparison is refused and the test fails, naming the module: a gate that cannot see the change
   must not pass.
2. **Pairs of workers** (:func:`~pytest_autotune.plugin.compare.pair.run_pairs`), each one
   worker per tree. Each collects the test from its own tree (test module, kernel sources,
   ``conftest.py``), with the pytest-autotune installed here, and plans it as a plain run would:
   the configuration that tree's ``autotune.json`` commits for this device, else the declared
   defaults (said in the report). Each runs the body once, asserts included: a failure of the
   working tree (an exception, a crash, a hang) fails the test and says why; a test REF lacks or
   cannot run is skipped with its own reason (new test, not tunable there, its file does not
   collect there, REF's ``autotune.json`` cannot be read, REF's run failed). Then a few ABBA blocks.
3. **Pairs as the unit.** Two processes running the same code can differ by several percent for
   their whole life (on a loaded 2-vCPU machine up to 20% for the example kernels, on an H200 5-10%
   for a memory-bound reduction), which no number of blocks of one pair averages out. So pairs of
   workers follow one another until the sequential verdict
   (:func:`~pytest_autotune.timing.stopping.judge_look`, after 1, 2, 4, ... pairs) decides or the
   time cap (``--autotune-compare-max-time``, counted from when the first pair's workers are
   ready, and also the limit of a hung run) is spent: a change far beyond the tolerance is decided
   by the first pairs, a smaller one by how the pairs' own estimates spread (from
   :data:`~pytest_autotune.timing.stopping.MIN_PAIRS` pairs). Pairs that disagree make the verdict
   inconclusive.
4. **Verdict**: the ratio B/A with its interval. ``regression`` (the interval lies above
   ``1 + compare_tolerance``) fails the test (a warning under ``--autotune-check=warn``, nothing
   under ``off``); ``inconclusive`` is a warning unless ``--autotune-compare-strict``, and says
   "likely regression" loudly when the cap ended it with the estimate beyond the tolerance and the
   interval above 1 (:func:`~pytest_autotune.timing.stopping.likely_regression`); ``pass`` passes.
   Where warnings are errors (``-W error``), a warning the comparison gives fails the test with
   its message, the result kept, instead of escaping through the plugin.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

import pytest

from pytest_autotune.plugin.compare.clocks import judged_clock
from pytest_autotune.plugin.compare.git_ref import RefTree, export_tree, uncommitted
from pytest_autotune.plugin.compare.import_guard import ENV_VAR as GUARD_VAR
from pytest_autotune.plugin.compare.import_guard import GuardSpec
from pytest_autotune.plugin.compare.messages import SideSetup
from pytest_autotune.plugin.compare.pair import (
    PairRun,
    Procedure,
    SideSpec,
    SideTimes,
    run_pair,
    run_pairs,
)
from pytest_autotune.plugin.compare.project_packages import interpreter_folders, project_packages
from pytest_autotune.plugin.compare.report import percent
from pytest_autotune.plugin.compare.side import SideError
from pytest_autotune.plugin.report.results import AutotuneResult
from pytest_autotune.plugin.workers.launch import pinned_home
from pytest_autotune.plugin.workers.protocol import ENV_VAR
from pytest_autotune.timing.measure import Stats
from pytest_autotune.timing.paired import PairedVerdict, blocks_to_decide, hodges_lehmann
from pytest_autotune.timing.pairs import pair_effects
from pytest_autotune.timing.stopping import MIN_PAIRS, PROCESS_BIAS, likely_regression
from pytest_autotune.warning_types import AutotuneInconclusiveWarning, AutotuneRegressionWarning, warn

if TYPE_CHECKING:
    from pytest_autotune.plugin.modes.item_plan import ItemPlan
    from pytest_autotune.plugin.options import Settings
    from pytest_autotune.plugin.session import AutotuneSession
    from pytest_autotune.policy import Policy

__all__ = ["CompareContext", "compare_context", "compare_item"]

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
        GUARD_VAR,
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
    #: What each side may import: REF's and the working tree's
    #: (:mod:`~pytest_autotune.plugin.compare.import_guard`).
    guards: tuple[GuardSpec, GuardSpec] | None = None


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
    context.guards = _guards(resolved.ref, tree)
    if ref_cache is None:
        context.notes.append(f"{cache} lies outside the git repository: both sides use it")
    elif uncommitted(resolved.toplevel, cache):
        context.notes.append(
            f"{cache.name} has uncommitted changes: the working tree's side uses them as they are"
        )
    config.stash[_CONTEXT] = context
    return context


def _guards(ref: str, tree: RefTree) -> tuple[GuardSpec, GuardSpec]:
    """The import guards of REF's side and of the working tree's (the project's packages found once)."""
    top = tree.resolved.toplevel
    packages = project_packages(top)
    exempt = str(Path(pinned_home()) / "pytest_autotune")
    outside = interpreter_folders()
    return (
        GuardSpec(f"REF {ref}", str(tree.path), str(top), packages, exempt, outside),
        GuardSpec("the working tree", str(top), None, packages, exempt, outside),
    )


def _side_environment(
    session: AutotuneSession, plan: ItemPlan, cache: Path, guard: GuardSpec | None
) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _NOT_INHERITED and not k.startswith("PYTEST_AUTOTUNE_COMPARE")
    }
    if guard is not None:
        env[GUARD_VAR] = guard.to_env()
    env["PYTEST_AUTOTUNE_CACHE"] = str(cache)
    spec = session.devices.spec_for(plan.device)  # the very same device (None: the host)
    if spec is not None:
        env["PYTEST_AUTOTUNE_DEVICE"] = spec
    return env


def _side_info(setup: SideSetup) -> dict[str, Any]:
    return {"config": setup.config, "state": setup.state, "reason": setup.reason}


def _describe_side(name: str, info: dict[str, Any]) -> str:
    what = "committed" if info["state"] == "committed" else f"{info['state']}: {info['reason']}"
    return f"{name} {info['config']} ({what})"


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

    def failed(
        self, state: Literal["failed", "refused"], reason: str, detail: str, started: float
    ) -> _Outcome:
        """The test fails: ``state`` (``failed``, ``refused``), ``reason`` in one line, ``detail`` in full."""
        self.result.state = state
        self.result.message = reason
        assert self.result.compare is not None
        self.result.compare.update(verdict=state, reason=reason, seconds=round(time.monotonic() - started, 3))
        self.failure = f"{reason}\n{detail}" if detail and detail != reason else reason
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


def _pair_summaries(pairs: list[PairRun], verdict: PairedVerdict, maximize: bool) -> list[dict[str, Any]]:
    """Each pair's own estimate (``ratio``, as the verdict reads it) and its blocks, for the report."""
    summaries: list[dict[str, Any]] = []
    for pair in pairs:
        a, b = (pair.times.b, pair.times.a) if maximize else (pair.times.a, pair.times.b)
        ratio: float | None = None  # None, not nan, in JSON: a pair the time cap left without blocks
        if a:
            effect = hodges_lehmann(pair_effects([(a, b)], verdict.scale)[0]).estimate
            ratio = 1 + effect if verdict.scale is not None else math.exp(effect)
        summaries.append({"ratio": ratio, "blocks": len(a)})
    return summaries


#: Why a test REF cannot run is not compared, by the kind of the REF side's error.
_REF_REASONS: Final = {
    "missing": "new test",
    "not-tunable": "not compared: not a @tunable test at REF",
    "collection": "not compared: its file does not collect at REF",
    "store": "not compared: REF's autotune.json cannot be read",
    "failed": "not compared: cannot run it at REF",
}


def _first_line(text: str) -> str:
    """The first line of a side's message, without the announcement of the worker's output below it."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), text.strip())
    return line.removesuffix("; its output:")


def _side_failure(outcome: _Outcome, exc: SideError, ref_side: str, started: float) -> _Outcome:
    """What a side that cannot be measured means for the test (module docstring)."""
    if exc.kind == "unfaithful":
        return outcome.failed("refused", f"cannot compare: {exc}", "", started)
    if exc.side == ref_side:
        why = _REF_REASONS.get(exc.kind, _REF_REASONS["failed"])
        said = str(exc) if exc.kind == "missing" else exc.message  # new test: REF main: no such test there
        return outcome.skipped(f"{why}: {_first_line(said)}", started)
    if exc.ended is not None:
        exc.ended.raise_again()
    reason = f"cannot run the working tree's test: {_first_line(exc.message)}"
    return outcome.failed("failed", reason, exc.message, started)


def compare_item(
    session: AutotuneSession, item: pytest.Function, plan: ItemPlan
) -> tuple[AutotuneResult, str | None, str | None]:
    """Compare ``item`` at REF and in the working tree: ``(result, failure, skip reason)``.

    A pytest outcome raised by the working tree's body (``pytest.skip``, ``pytest.fail``, ...) is
    raised again here.
    """
    started = time.monotonic()
    context = compare_context(session)
    ref, settings, policy = context.ref, session.settings, plan.policy
    outcome = _Outcome(_result(item, plan, ref))
    path = item.nodeid.split("::", 1)[0]
    relative = context.tree.relative(context.root / path)
    unexported = context.tree.missing_submodule(relative) if relative is not None else None
    if unexported is not None:
        return outcome.skipped(f"not compared: {path} at {ref}: {unexported}", started).as_tuple()
    if not (context.root / path).is_file():
        return outcome.skipped(f"new test: {path} does not exist at {ref}", started).as_tuple()
    ref_guard, working_guard = context.guards or (None, None)
    ref_side = SideSpec(
        f"REF {ref}",
        context.root,
        _side_environment(session, plan, context.ref_cache or settings.cache_path, ref_guard),
    )
    working_side = SideSpec(
        "the working tree", None, _side_environment(session, plan, settings.cache_path, working_guard)
    )
    cap = f"--autotune-compare-max-time={settings.compare_max_time:g}s"

    def one_pair(procedure: Procedure | None, deadline: float | None) -> PairRun:
        pair = run_pair(
            item,
            ref_side,
            working_side,
            timeout=policy.trial_timeout,
            seconds=settings.compare_max_time,
            deadline=deadline,
            procedure=procedure,
            calibrate=policy.objective == "time",
            cap=cap,
            clock=plan.clock,
        )
        outcome.result.config = dict(pair.setups[1].config)
        return pair

    try:
        verdict, pairs = run_pairs(
            one_pair,
            tolerance=policy.compare_tolerance,
            seconds=settings.compare_max_time,
            maximize=policy.maximize,
        )
    except SideError as exc:
        return _side_failure(outcome, exc, ref_side.name, started).as_tuple()
    seconds = time.monotonic() - started
    return _judged(outcome, context, pairs, verdict, seconds, settings, policy, cap).as_tuple()


def _how_to_decide(verdict: PairedVerdict, pairs: int, seconds: float) -> str:
    """What an inconclusive verdict would need, from the spread its pairs and blocks measured."""
    judged = verdict.pairs if verdict.blocks else 0
    if judged < MIN_PAIRS:
        per_pair = seconds / max(pairs, 1)
        cap = max(10, math.ceil(max(2 * seconds, per_pair * (MIN_PAIRS + 1)) / 10) * 10)
        return (
            f"the time cap allowed {judged} judged pair{'s' if judged != 1 else ''} of workers; fewer "
            f"than {MIN_PAIRS} decide only a change beyond the tolerance by more than the "
            f"{PROCESS_BIAS:.0%} two processes may differ: --autotune-compare-max-time={cap}"
        )
    blocks = blocks_to_decide(verdict)
    if blocks is None:
        if verdict.bounded:
            return (
                "the ratio sits at the tolerance, where no length of measuring decides: "
                "set the tolerance the change must meet (--autotune-compare-tolerance)"
            )
        return "measure longer with --autotune-compare-max-time"
    factor = blocks / max(verdict.blocks, 1)  # more pairs of the same blocks each: time grows alike
    needed = factor * seconds
    return (
        f"at this spread about {math.ceil(factor * judged)} pairs of workers ({blocks} blocks) would decide "
        f"it: --autotune-compare-max-time={max(10, math.ceil(needed / 10) * 10)}"
    )


def _judged(
    outcome: _Outcome,
    context: CompareContext,
    pairs: list[PairRun],
    verdict: PairedVerdict,
    seconds: float,
    settings: Settings,
    policy: Policy,
    cap: str,
) -> _Outcome:
    result, first = outcome.result, pairs[0]
    likely = likely_regression(verdict)
    clocks = judged_clock(pairs, result)
    times = SideTimes([t for p in pairs for t in p.times.a], [t for p in pairs for t in p.times.b])
    sides = {"ref": _side_info(first.setups[0]), "working": _side_info(first.setups[1])}
    state = verdict.state
    result.state = "faster" if verdict.faster else "passed" if state == "pass" else state
    if times.a:
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
        likely_regression=likely,
        commit=context.commit,
        repeat=first.procedure.repeat,
        warmup=first.procedure.warmup,
        pairs=_pair_summaries(pairs, verdict, policy.maximize),
        spread=verdict.spread if verdict.spread is not None and math.isfinite(verdict.spread) else None,
        sides=sides,
        notes=list(context.notes),
        times={"ref": times.a, "working": times.b},
        scale=verdict.scale,
        **clocks,
    )
    configs = f"{_describe_side('REF', sides['ref'])}; {_describe_side('working tree', sides['working'])}"
    where = f"{context.ref} ({context.commit[:12]})"
    if state == "regression":
        result.message = (
            f"slower than {where}: ratio {verdict.describe()}; {configs}.\n"
            "  expected? accept it with a larger tolerance: @tunable(compare_tolerance=...) or "
            "--autotune-compare-tolerance"
        )
        if policy.check == "fail":
            outcome.failure = f"performance regression: {result.message}"
        elif policy.check == "warn":
            warn(AutotuneRegressionWarning(f"{result.nodeid}: {result.message}"), stacklevel=2)
    elif state == "inconclusive":
        each = ", ".join(percent(pair["ratio"]) for pair in result.compare["pairs"])
        interval = f"{percent(verdict.ratio)} [{percent(verdict.low)}, {percent(verdict.high)}]"
        headline = (
            f"likely regression: {interval} against {where} (tolerance {verdict.tolerance:.0%}), not "
            f"confirmed within {cap}; raise --autotune-compare-max-time. Comparison"
            if likely
            else f"comparison with {where}"
        )
        result.message = (
            f"{headline} inconclusive after {seconds:.0f}s: ratio {verdict.describe()}; "
            f"each pair of workers found {each}; {configs}; {_how_to_decide(verdict, len(pairs), seconds)}"
        )
        if settings.compare_strict:
            outcome.failure = f"{result.message} (--autotune-compare-strict)"
        else:
            warn(AutotuneInconclusiveWarning(f"{result.nodeid}: {result.message}"), stacklevel=2)
    else:
        result.message = f"ratio {verdict.describe()}; {configs}"
    return outcome
