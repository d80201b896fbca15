"""The run modes that run a test in this process: tune, check and update-baseline, and their results.

:class:`TuneMode` (``--autotune``, ``--autotune=missing``: tests planned for tuning are tuned, the
others checked), :class:`CheckMode` (a plain run) and :class:`UpdateBaselineMode`
(``--autotune-update-baseline``) implement :class:`~pytest_autotune.plugin.modes.run_mode.RunMode`.
Each builds the test's :class:`~pytest_autotune.plugin.report.results.AutotuneResult` in one call
from what its mode measured (:func:`tune_item`, :func:`check_item`), with the store entry to write
when there is one. Where the trials and the baseline run is not decided here: the hooks hand the
modes a :class:`Placement` (:class:`pytest_autotune.plugin.workers.placement.TrialPlacement`).
Tune mode's search is imported when a test is tuned, so that choosing the mode when the plugin is
configured stays light (a plain run imports no tuner).

The result always reaches the report (as the ``autotune`` user property) before a policy failure
(regression, missing entry, infeasible space) fails the test, so the summary and the store see it
(:func:`~pytest_autotune.plugin.modes.run_mode.conclude`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Protocol

from pytest_autotune.entry import Baseline, StoreEntry, TuningRecord
from pytest_autotune.plugin.modes.busy_baseline import warn_if_busy
from pytest_autotune.plugin.modes.check import CheckReport, check
from pytest_autotune.plugin.report.progress import TuningProgress
from pytest_autotune.plugin.report.results import AutotuneResult, ItemOutcome
from pytest_autotune.plugin.report.summary_text import (
    counts_text,
    metrics_text,
    speedup_text,
    tuned_time_text,
)
from pytest_autotune.store.history_record import bounded
from pytest_autotune.timing.clock import on_clock
from pytest_autotune.timing.measure import round_significant
from pytest_autotune.tuning.process.worker import WorkerStartError
from pytest_autotune.warning_types import AutotuneSharedFixtureWarning, warn

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin.modes.baseline import BaselineMeter
    from pytest_autotune.plugin.modes.item_plan import ItemPlan, Planner
    from pytest_autotune.plugin.modes.tune import TuneReport
    from pytest_autotune.plugin.modes.warm_start import WarmStart
    from pytest_autotune.plugin.session import AutotuneSession
    from pytest_autotune.plugin.workers.runner import BodyRun, TrialRunner
    from pytest_autotune.tuning.parallel.executor import TrialExecutor

__all__ = [
    "CheckMode",
    "PlacedTrials",
    "Placement",
    "TuneMode",
    "UpdateBaselineMode",
    "check_item",
    "shared_function_fixtures",
    "tune_item",
]

#: Function-scoped fixtures that are safe to share between trials.
_TRIAL_SAFE_FIXTURES: Final = frozenset({"autotune", "autotune_timer", "benchmark", "request"})


class PlacedTrials(Protocol):
    """Where one test's search trials run, as tune mode uses it (a context manager around the search)."""

    @property
    def runner(self) -> TrialRunner:
        """What runs one trial."""

    @property
    def executor(self) -> TrialExecutor[BodyRun] | None:
        """The executor of a search over several devices, else None."""

    def isolation(self, journal: Path) -> dict[str, Any] | None:
        """The workers' summary for the result (None when the trials ran in this process)."""

    def __enter__(self) -> PlacedTrials: ...

    def __exit__(self, *exc: Any) -> None: ...


class Placement(Protocol):
    """Where trials and baselines run: what these modes need of
    :class:`pytest_autotune.plugin.workers.placement.TrialPlacement` (named here, not imported, so
    that the modes do not sit on every kind of worker)."""

    def trials(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> PlacedTrials:
        """Where the search of ``item`` runs its trials."""

    def baseline(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> BaselineMeter:
        """How the baseline of ``item`` is measured afresh."""


@dataclass(frozen=True)
class TuneMode:
    """``--autotune`` (``missing_only``: ``--autotune=missing``): tune each test planned for tuning,
    check the others."""

    session: AutotuneSession
    placement: Placement
    #: ``item``'s plan in this mode (None: not a tunable test), as the hooks hand it over.
    plan: Planner
    missing_only: bool = False

    @property
    def name(self) -> str:
        """``tune`` or ``tune-missing``."""
        return "tune-missing" if self.missing_only else "tune"

    def run(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> ItemOutcome:
        """Tune ``item`` when its plan says so, else check it."""
        if plan.tune:
            return tune_item(self.session, self.placement, item, plan, autotune)
        return check_item(self.session, item, plan, autotune)


@dataclass(frozen=True)
class CheckMode:
    """A plain run: each test runs once with its committed configuration, its time judged."""

    session: AutotuneSession
    #: ``item``'s plan in this mode (None: not a tunable test), as the hooks hand it over.
    plan: Planner
    name: str = "check"

    def run(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> ItemOutcome:
        """Check ``item``."""
        return check_item(self.session, item, plan, autotune)


@dataclass(frozen=True)
class UpdateBaselineMode:
    """``--autotune-update-baseline``: check each test, then measure its baseline afresh."""

    session: AutotuneSession
    placement: Placement
    #: ``item``'s plan in this mode (None: not a tunable test), as the hooks hand it over.
    plan: Planner
    name: str = "update-baseline"

    def run(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> ItemOutcome:
        """Check ``item`` and re-measure its baseline where the placement says."""
        meter = self.placement.baseline(item, plan, autotune)
        return check_item(self.session, item, plan, autotune, update_baseline=meter)


def shared_function_fixtures(item: pytest.Item) -> list[str]:
    """Function-scoped fixtures of ``item`` that every trial will share (parametrized arguments excluded)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    params = set(getattr(getattr(item, "callspec", None), "params", {}))
    names = []
    for name in getattr(item, "fixturenames", ()):
        definitions = info.name2fixturedefs.get(name)
        if not definitions or name in _TRIAL_SAFE_FIXTURES or name in params:
            continue
        if str(getattr(definitions[-1], "scope", "")) in ("function", "Scope.Function"):
            names.append(name)
    return names


def _json_value(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def _result(
    item: pytest.Item, plan: ItemPlan, mode: str, state: Any, config: dict[str, Any], **parts: Any
) -> AutotuneResult:
    """The result of ``item``, built in one call: who it is, its mode, state and configuration, and
    the ``parts`` its mode's outcome measured (``stats``, ``message``, ``entry``, ...)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return AutotuneResult(
        nodeid=item.nodeid,
        name=item.name,
        device=plan.device,
        mode=mode,
        state=state,
        config={k: _json_value(v) for k, v in config.items()},
        unit=plan.policy.unit,
        params={k: _json_value(v) for k, v in params.items()},
        **parts,
    )


def _stored_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` as ``autotune.json`` will store it; a value JSON cannot hold fails the tuning."""
    from pytest_autotune.plugin.modes.tune import TuningFailed

    for name, value in config.items():
        if json.loads(json.dumps(value, default=repr)) != (
            list(value) if isinstance(value, tuple) else value
        ):
            raise TuningFailed(f"parameter {name!r}: value {value!r} cannot be stored in autotune.json")
    return dict(config)


def _metrics(autotune: Autotune, median: float | None, unit: str) -> dict[str, float] | None:
    """The test's metrics, functions of the time evaluated on the reported ``median`` (when it is a
    time; else on the last call's), rounded as baselines are; None when the test records none."""
    values = autotune.metric_values(median if unit == "s" else None)
    return {name: round_significant(value) for name, value in values.items()} or None


def _done_text(result: AutotuneResult) -> str:
    """The closing progress line of a tuned test (the same words as the summary's)."""
    tuning = result.tuning or {}
    counts = counts_text(tuning.get("counts"))
    head = f"{tuning.get('trials', 0)} trials ({counts}) in {tuning.get('duration', 0):.3g}s"
    if result.state != "tuned":
        return f"tuning failed after {head}"
    median = (result.stats or {}).get("median")
    if tuning.get("stopped") == "converged":
        head += " (stopped: converged)"
    parts = [f"tuned, {head}: {tuned_time_text(median, result.search, result.unit)}"]
    if result.speedup:
        parts.append(f"{speedup_text(result.speedup, result.speedup_at_least)} vs default")
    parts.append(metrics_text(result.metrics))
    return ", ".join(part for part in parts if part)


def _tuning_summary(report: TuneReport, warm: WarmStart | None) -> dict[str, Any]:
    """The tuning summary of a result: the search's, and when it converged, ``stopped`` and the
    names of the warm start's sources (``warm_from``), which the summary's note names."""
    if not report.converged:
        return report.summary
    sources = {"warm_from": [source.name for source in warm.sources]} if warm is not None else {}
    return {**report.summary, "stopped": "converged", **sources}


def tune_item(
    session: AutotuneSession, placement: Placement, item: pytest.Function, plan: ItemPlan, autotune: Autotune
) -> ItemOutcome:
    """Tune ``item`` (its trials where ``placement`` says) and build its result and store entry."""
    from pytest_autotune.plugin.modes.tune import TuningFailed, tune  # the search: imported when tuning
    from pytest_autotune.plugin.modes.warm_start import remember

    shared = shared_function_fixtures(item)
    if shared:
        warn(
            AutotuneSharedFixtureWarning(
                f"{item.nodeid}: function-scoped fixture(s) {', '.join(shared)} are set up once and shared "
                "by every tuning trial; make sure the test body does not depend on their state"
            ),
            stacklevel=2,
        )
    journal = session.journal_path(plan.device, item.nodeid)
    pruned = plan.pruned.to_dict() if plan.pruned is not None else None
    placed: PlacedTrials | None = None
    pictures = session.settings.report_dir is not None  # the per-trial list travels only for them
    progress = TuningProgress(session.config, item.nodeid, plan.policy, session.settings.progress_every)
    try:
        with progress:
            placed = placement.trials(item, plan, autotune)
            with placed:
                report = tune(
                    item,
                    autotune,
                    plan.policy,
                    journal=journal,
                    committed=plan.committed.entry,
                    progress=progress.update,
                    trials=placed.runner,
                    baseline=placement.baseline(item, plan, autotune),
                    warm=plan.warm,
                    executor=placed.executor,
                )
        config = _stored_config(report.config)
    except (TuningFailed, WorkerStartError) as exc:
        trace = exc.trace if isinstance(exc, TuningFailed) else None
        failed = _result(
            item,
            plan,
            "tune",
            "tune-failed",
            plan.committed.config,
            tuning=exc.summary if isinstance(exc, TuningFailed) else None,
            message=str(exc),
            isolation=placed.isolation(journal) if placed is not None else None,
            search=trace.to_json(trials=pictures) if trace is not None else None,
            pruned=pruned,
        )
        progress.done(_done_text(failed))
        return ItemOutcome(failed, f"tuning failed: {exc}")
    metrics = _metrics(autotune, report.baseline.stats.median, plan.policy.unit)
    where = f"the tuning result of {item.nodeid}"
    new_baseline = report.baseline.to_entry(plan.policy.unit, plan.clock)
    entry = bounded(
        StoreEntry(
            config=config,
            space_hash=plan.spec.space.space_hash,
            baseline=new_baseline,
            tuning=TuningRecord.from_json(report.summary, where=where),
            metrics=metrics,
            history=report.history,
            kernel=plan.spec.kernel,
            key=plan.spec.key_values(getattr(getattr(item, "callspec", None), "params", {})),
        )
    )
    device_info = session.devices.info_for(plan.device)
    tolerance = warn_if_busy(
        item.nodeid, plan.device, _judged(new_baseline, plan), plan.policy.rule, item=item
    )
    result = _result(
        item,
        plan,
        "tune",
        "tuned",
        config,
        isolation=placed.isolation(journal),
        pruned=pruned,
        warm_start=plan.warm.describe(report.stopped_early) if plan.warm is not None else None,
        stats=report.baseline.stats.to_dict(),
        speedup=report.speedup(plan.policy.maximize),
        speedup_at_least=report.speedup_at_least,
        tuning=_tuning_summary(report, plan.warm),
        search=report.trace.to_json(trials=pictures),
        metrics=metrics,
        message="kept the committed configuration (no better one beyond noise)"
        if report.kept_committed
        else "",
        entry=entry,
        device_info=device_info,
        tolerance=tolerance,
    )
    remember(session.config.stash, plan.device, item.nodeid, entry)
    progress.done(_done_text(result))
    return ItemOutcome(result)


def check_item(
    session: AutotuneSession,
    item: pytest.Function,
    plan: ItemPlan,
    autotune: Autotune,
    *,
    update_baseline: BaselineMeter | None = None,
) -> ItemOutcome:
    """Check ``item`` (and with ``update_baseline``, measure its baseline afresh) and build its result."""
    report: CheckReport = check(
        item,
        autotune,
        plan.committed,
        policy=plan.policy,
        timing_shared_by=plan.shared_by,
        update_baseline=update_baseline,
        clock=plan.clock,
    )
    stats = report.stats.to_dict() if report.stats else None
    metrics = _metrics(autotune, report.stats.median, plan.policy.unit) if report.stats is not None else None
    entry = plan.committed.entry
    verdict = report.verdict
    judged: dict[str, Any] = {}
    if verdict is not None:
        judged = {"limit": verdict.limit, "noise_band": verdict.noise_band, "tolerance": verdict.tolerance}
        judged |= {"clock": report.clock, "clock_note": report.clock_note}
    remeasured: dict[str, Any] = {}
    if report.new_baseline is not None and entry is not None:
        metrics = _metrics(autotune, report.new_baseline.stats.median, plan.policy.unit)
        baseline = report.new_baseline.to_entry(plan.policy.unit, plan.clock)
        remeasured = {
            "entry": replace(entry, baseline=baseline, commit_info=None, metrics=metrics),
            # the time reported is the one stored (fresh processes), not this process's first measurement
            "stats": report.new_baseline.stats.to_dict(),
            "tolerance": warn_if_busy(
                item.nodeid, plan.device, _judged(baseline, plan), plan.policy.rule, item=item
            ),
            "device_info": session.devices.info_for(plan.device),
        }
    parallelism = report.parallelism
    measured = {
        "message": report.message,
        "stats": stats,
        "metrics": metrics,
        "baseline": entry.baseline.to_json() if entry and entry.baseline else None,
        "parallelism": None
        if parallelism is None
        else {"state": parallelism.state, "message": parallelism.message},
    }
    mode = "update-baseline" if update_baseline is not None else "check"
    result = _result(item, plan, mode, report.state, report.config, **(measured | judged | remeasured))
    return ItemOutcome(result, report.failure)


def _judged(baseline: Baseline, plan: ItemPlan) -> Baseline:
    """``baseline`` on the clock the test's checks will judge (its wall part when it has no CPU part)."""
    return on_clock(baseline, plan.clock) or baseline
