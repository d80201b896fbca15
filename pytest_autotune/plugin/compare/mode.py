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
4. **Verdict** (:mod:`pytest_autotune.plugin.compare.verdict`, which builds the test's result): the
   ratio B/A with its interval. ``regression`` (the interval lies above
   ``1 + compare_tolerance``) fails the test (a warning under ``--autotune-check=warn``, nothing
   under ``off``); ``inconclusive`` is a warning unless ``--autotune-compare-strict``, and says
   "likely regression" loudly when the cap ended it with the estimate beyond the tolerance and the
   interval above 1 (:func:`~pytest_autotune.timing.stopping.likely_regression`); ``pass`` passes.
   Where warnings are errors (``-W error``), a warning the comparison gives fails the test with
   its message, the result kept, instead of escaping through the plugin.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pytest

from pytest_autotune.plugin.compare.git_ref import RefTree, export_tree, uncommitted
from pytest_autotune.plugin.compare.import_guard import ENV_VAR as GUARD_VAR
from pytest_autotune.plugin.compare.import_guard import GuardSpec
from pytest_autotune.plugin.compare.pair import (
    PairRun,
    Procedure,
    SideSpec,
    run_pair,
    run_pairs,
)
from pytest_autotune.plugin.compare.project_packages import interpreter_folders, project_packages
from pytest_autotune.plugin.compare.side import SideError
from pytest_autotune.plugin.compare.verdict import Comparison, judged, side_failure
from pytest_autotune.plugin.report.results import ItemOutcome
from pytest_autotune.plugin.workers.launch import pinned_home
from pytest_autotune.plugin.workers.protocol import ENV_VAR

if TYPE_CHECKING:
    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin.modes.item_plan import ItemPlan, Planner
    from pytest_autotune.plugin.session import AutotuneSession

__all__ = ["CompareContext", "CompareMode", "compare_context", "compare_item"]

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


@dataclass(frozen=True)
class CompareMode:
    """``--autotune-compare=REF``: each tunable test at REF against the working tree
    (:func:`compare_item`)."""

    session: AutotuneSession
    #: ``item``'s plan in this mode (None: not a tunable test), as the hooks hand it over.
    plan: Planner
    name: str = "compare"

    def run(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> ItemOutcome:
        """Compare ``item`` (this process never runs its body: ``autotune`` goes unused)."""
        return compare_item(self.session, item, plan)


def compare_item(session: AutotuneSession, item: pytest.Function, plan: ItemPlan) -> ItemOutcome:
    """Compare ``item`` at REF and in the working tree: its result, and a failure or a skip reason.

    A pytest outcome raised by the working tree's body (``pytest.skip``, ``pytest.fail``, ...) is
    raised again here.
    """
    started = time.monotonic()
    context = compare_context(session)
    ref, settings, policy = context.ref, session.settings, plan.policy
    comparison = Comparison(item, plan.device, plan.policy, ref, started)
    path = item.nodeid.split("::", 1)[0]
    relative = context.tree.relative(context.root / path)
    unexported = context.tree.missing_submodule(relative) if relative is not None else None
    if unexported is not None:
        return comparison.skipped(f"not compared: {path} at {ref}: {unexported}")
    if not (context.root / path).is_file():
        return comparison.skipped(f"new test: {path} does not exist at {ref}")
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
        comparison.config = dict(pair.setups[1].config)
        return pair

    try:
        verdict, pairs = run_pairs(
            one_pair,
            tolerance=policy.compare_tolerance,
            seconds=settings.compare_max_time,
            maximize=policy.maximize,
        )
    except SideError as exc:
        return side_failure(comparison, exc, ref_side.name)
    strict = settings.compare_strict
    return judged(
        comparison, pairs, verdict, commit=context.commit, notes=context.notes, strict=strict, cap=cap
    )
