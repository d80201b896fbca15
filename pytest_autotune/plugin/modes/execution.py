"""Running one tunable test (tune it, or run and check it) and attaching its result to the report.

The result always reaches the report (as the ``autotune`` user property) before a policy failure
(regression, missing entry, infeasible space) fails the test, so the summary and the store see it.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_autotune.entry import Baseline, StoreEntry, TuningRecord
from pytest_autotune.fixture import TRIAL_REPEAT
from pytest_autotune.plugin.modes.baseline import BaselineMeter, FreshProcessBaseline, InProcessBaseline
from pytest_autotune.plugin.modes.busy_baseline import warn_if_busy
from pytest_autotune.plugin.modes.check import CheckReport, check
from pytest_autotune.plugin.modes.tune import TuningFailed, tune
from pytest_autotune.plugin.modes.warm_start import remember
from pytest_autotune.plugin.report.progress import TuningProgress
from pytest_autotune.plugin.report.results import PROPERTY, AutotuneResult
from pytest_autotune.plugin.report.summary_text import (
    counts_text,
    metrics_text,
    speedup_text,
    tuned_time_text,
)
from pytest_autotune.plugin.workers.runner import InProcessTrials
from pytest_autotune.store.history_record import bounded
from pytest_autotune.timing.clock import on_clock
from pytest_autotune.timing.measure import round_significant
from pytest_autotune.tuning.process.worker import WorkerStartError
from pytest_autotune.warning_types import AutotuneSharedFixtureWarning, AutotuneWarning, take_escalated, warn

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin.modes.item_plan import ItemPlan
    from pytest_autotune.plugin.modes.tune import TuneReport
    from pytest_autotune.plugin.modes.warm_start import WarmStart
    from pytest_autotune.plugin.session import AutotuneSession
    from pytest_autotune.plugin.workers.parallel import ParallelTrials
    from pytest_autotune.plugin.workers.parent import IsolatedTrials
    from pytest_autotune.plugin.workers.remote import ClusterLink, ClusterTrials

    TrialWorkers = IsolatedTrials | ParallelTrials | ClusterTrials

__all__ = ["conclude", "run_item", "shared_function_fixtures"]

#: Function-scoped fixtures that are safe to share between trials.
_TRIAL_SAFE_FIXTURES: Final = frozenset({"autotune", "autotune_timer", "benchmark", "request"})
#: The warnings this session gave once (``--autotune-parallel`` asking for more devices than exist).
_WARNED: Final = pytest.StashKey[set[str]]()
#: The run's one connection to the scheduler of ``--autotune-cluster`` (made on first use).
_CLUSTER: Final = pytest.StashKey["ClusterLink"]()


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
    item: pytest.Item, plan: ItemPlan, mode: str, state: Any, config: dict[str, Any]
) -> AutotuneResult:
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
    )


def _stored_config(config: dict[str, Any]) -> dict[str, Any]:
    for name, value in config.items():
        if json.loads(json.dumps(value, default=repr)) != (
            list(value) if isinstance(value, tuple) else value
        ):
            raise TuningFailed(f"parameter {name!r}: value {value!r} cannot be stored in autotune.json")
    return dict(config)


def _isolation(isolated: TrialWorkers | None, journal: Path) -> dict[str, Any] | None:
    """The worker's summary and where the trials' details are (None when trials were not isolated)."""
    if isolated is None:
        return None
    done = journal.with_name(journal.stem + ".done" + journal.suffix)
    return {**isolated.summary(), "journal": str(done if done.exists() else journal)}


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


def _worker_env(session: AutotuneSession, plan: ItemPlan) -> dict[str, str]:
    from pytest_autotune.plugin.workers.parent import worker_environment

    return worker_environment(session.settings.cache_path, session.devices.spec_for(plan.device))


def _trial_workers(session: AutotuneSession, item: pytest.Function, plan: ItemPlan) -> TrialWorkers:
    """The test's trial worker, or one per device of its type under ``--autotune-parallel``, or the
    devices of a Dask cluster under ``--autotune-cluster``."""
    from pytest_autotune.plugin.workers.parent import IsolatedTrials, worker_environment

    if session.settings.cluster is not None:  # the search on a Dask cluster's devices
        from pytest_autotune.plugin.workers.remote import ClusterTrials

        env = _worker_env(session, plan)
        return ClusterTrials(item, plan.policy, env, _cluster_link(session), repeat=TRIAL_REPEAT)
    wanted = session.settings.parallel
    if wanted == 1:
        return IsolatedTrials(item, plan.policy, _worker_env(session, plan))
    from pytest_autotune.plugin.workers.parallel import ParallelTrials, same_type_specs

    specs = same_type_specs(session.devices, session.devices.backend_for(item.fixturenames))
    if None in specs:  # the backend cannot name a device to another process (the host): one device
        specs = specs[:1]
    chosen = specs if wanted == "all" else specs[: int(wanted)]
    if wanted != "all" and len(chosen) < int(wanted):
        _warn_once(
            session,
            f"--autotune-parallel={wanted}: this host has {len(chosen)} usable device(s) of type "
            f"{plan.device}; the trials of its tests run on {len(chosen)} at once",
        )
    if len(chosen) == 1:
        return IsolatedTrials(item, plan.policy, _worker_env(session, plan))
    cache = session.settings.cache_path
    envs = [worker_environment(cache, spec) for spec in chosen]
    return ParallelTrials(item, plan.policy, envs, repeat=TRIAL_REPEAT)


def _cluster_link(session: AutotuneSession) -> ClusterLink:
    """The run's one connection to the ``--autotune-cluster`` scheduler (closed when pytest ends)."""
    from pytest_autotune.plugin.workers.remote import ClusterLink

    link = session.config.stash.get(_CLUSTER, None)
    if link is None:
        assert session.settings.cluster is not None
        link = session.config.stash[_CLUSTER] = ClusterLink(session.settings.cluster)
        session.config.add_cleanup(link.close)
    return link


def _warn_once(session: AutotuneSession, message: str) -> None:
    """Warn with ``message`` once per session."""
    warned = session.config.stash.setdefault(_WARNED, set())
    if message not in warned:
        warned.add(message)
        warn(AutotuneWarning(message), stacklevel=3)


def _baseline_meter(
    session: AutotuneSession, item: pytest.Function, plan: ItemPlan, autotune: Autotune
) -> BaselineMeter:
    """Fresh baseline processes when trials are isolated; else this process (the former way)."""
    if not plan.policy.isolated:
        return InProcessBaseline(item, autotune, plan.policy.maximize)
    from pytest_autotune.plugin.workers.parent import IsolatedTrials

    return FreshProcessBaseline(
        lambda: IsolatedTrials(item, plan.policy, _worker_env(session, plan), role="baseline"),
        autotune.timer,
        plan.policy.maximize,
        rule=plan.policy.rule,
    )


def _tune(
    session: AutotuneSession, item: pytest.Function, plan: ItemPlan, autotune: Autotune
) -> tuple[AutotuneResult, str | None]:
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
    isolated: TrialWorkers | None = None
    pictures = session.settings.report_dir is not None  # the per-trial list travels only for them
    progress = TuningProgress(session.config, item.nodeid, plan.policy, session.settings.progress_every)
    try:
        with progress:
            if plan.policy.isolated:
                from pytest_autotune.plugin.workers.parent import IsolatedTrials

                isolated = _trial_workers(session, item, plan)
                if isinstance(isolated, IsolatedTrials):
                    # it sets the test up while this process builds the tuner (the strategy's
                    # imports, a warm start's model): the first trial waits for it
                    isolated.launch()
            elif session.settings.parallel != 1:
                _warn_once(
                    session,
                    f"--autotune-parallel={session.settings.parallel} needs isolated trials (a worker "
                    "process per device); with --autotune-isolate=none the trials run one at a time",
                )
            elif session.settings.cluster is not None:
                _warn_once(
                    session,
                    f"--autotune-cluster={session.settings.cluster} needs isolated trials (a worker "
                    "process on each Dask worker); with --autotune-isolate=none the trials run here, "
                    "one at a time",
                )
            with isolated or contextlib.nullcontext():
                report = tune(
                    item,
                    autotune,
                    plan.policy,
                    journal=journal,
                    committed=plan.committed.entry,
                    progress=progress.update,
                    trials=isolated or InProcessTrials(item, autotune),
                    baseline=_baseline_meter(session, item, plan, autotune),
                    warm=plan.warm,
                    executor=getattr(isolated, "executor", None),
                )
        config = _stored_config(report.config)
    except (TuningFailed, WorkerStartError) as exc:
        result = _result(item, plan, "tune", "tune-failed", plan.committed.config)
        result.tuning = exc.summary if isinstance(exc, TuningFailed) else None
        result.message = str(exc)
        result.isolation = _isolation(isolated, journal)
        trace = exc.trace if isinstance(exc, TuningFailed) else None
        result.search = trace.to_json(trials=pictures) if trace is not None else None
        progress.done(_done_text(result))
        result.pruned = pruned
        return result, f"tuning failed: {exc}"
    result = _result(item, plan, "tune", "tuned", config)
    result.isolation = _isolation(isolated, journal)
    result.pruned = pruned
    result.warm_start = plan.warm.describe(report.stopped_early) if plan.warm is not None else None
    result.stats = report.baseline.stats.to_dict()
    result.speedup = report.speedup(plan.policy.maximize)
    result.speedup_at_least = report.speedup_at_least
    result.tuning = _tuning_summary(report, plan.warm)
    result.search = report.trace.to_json(trials=pictures)
    result.metrics = _metrics(autotune, report.baseline.stats.median, plan.policy.unit)
    result.message = (
        "kept the committed configuration (no better one beyond noise)" if report.kept_committed else ""
    )
    where = f"the tuning result of {item.nodeid}"
    new_baseline = report.baseline.to_entry(plan.policy.unit, plan.clock)
    result.entry = bounded(
        StoreEntry(
            config=config,
            space_hash=plan.spec.space.space_hash,
            baseline=new_baseline,
            tuning=TuningRecord.from_json(report.summary, where=where),
            metrics=result.metrics,
            history=report.history,
            kernel=plan.spec.kernel,
            key=plan.spec.key_values(getattr(getattr(item, "callspec", None), "params", {})),
        )
    )
    result.device_info = session.devices.info_for(plan.device)
    result.tolerance = warn_if_busy(
        item.nodeid, plan.device, _judged(new_baseline, plan), plan.policy.rule, item=item
    )
    remember(session.config.stash, plan.device, item.nodeid, result.entry)
    progress.done(_done_text(result))
    return result, None


def _check(
    session: AutotuneSession, item: pytest.Function, plan: ItemPlan, autotune: Autotune
) -> tuple[AutotuneResult, str | None]:
    update = session.settings.update_baseline
    report: CheckReport = check(
        item,
        autotune,
        plan.committed,
        policy=plan.policy,
        timing_shared_by=plan.shared_by,
        update_baseline=_baseline_meter(session, item, plan, autotune) if update else None,
        clock=plan.clock,
    )
    result = _result(item, plan, "update-baseline" if update else "check", report.state, report.config)
    result.message = report.message
    result.stats = report.stats.to_dict() if report.stats else None
    if report.stats is not None:
        result.metrics = _metrics(autotune, report.stats.median, plan.policy.unit)
    entry = plan.committed.entry
    result.baseline = entry.baseline.to_json() if entry and entry.baseline else None
    if report.verdict is not None:
        result.limit, result.noise_band = report.verdict.limit, report.verdict.noise_band
        result.tolerance = report.verdict.tolerance
        result.clock, result.clock_note = report.clock, report.clock_note
    if report.parallelism is not None:
        result.parallelism = {"state": report.parallelism.state, "message": report.parallelism.message}
    if report.new_baseline is not None and entry is not None:
        metrics = _metrics(autotune, report.new_baseline.stats.median, plan.policy.unit)
        baseline = report.new_baseline.to_entry(plan.policy.unit, plan.clock)
        result.entry = replace(entry, baseline=baseline, commit_info=None, metrics=metrics)
        # the time reported is the one stored (fresh processes), not this process's first measurement
        result.stats, result.metrics = report.new_baseline.stats.to_dict(), metrics
        result.tolerance = warn_if_busy(
            item.nodeid, plan.device, _judged(baseline, plan), plan.policy.rule, item=item
        )
        result.device_info = session.devices.info_for(plan.device)
    return result, report.failure


def _judged(baseline: Baseline, plan: ItemPlan) -> Baseline:
    """``baseline`` on the clock the test's checks will judge (its wall part when it has no CPU part)."""
    return on_clock(baseline, plan.clock) or baseline


def run_item(session: AutotuneSession, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> None:
    """Tune or check ``item``; attach the result; fail the test when the policy says so.

    Compare mode is its sibling (:func:`pytest_autotune.plugin.compare.mode.compare_item`); both
    end in :func:`conclude`.
    """
    result, failure = (_tune if plan.tune else _check)(session, item, plan, autotune)
    conclude(item, result, failure)


def conclude(item: pytest.Item, result: AutotuneResult, failure: str | None, skip: str | None = None) -> None:
    """Attach ``result`` to the test's report, then skip it (``skip``) or fail it (``failure``, and the
    plugin's warnings that the filters made errors: :func:`~pytest_autotune.warning_types.warn`)."""
    import pytest

    item.user_properties.append((PROPERTY, result.to_json()))
    escalated = take_escalated()
    if escalated:
        failure = "\n".join([*([failure] if failure is not None else []), *escalated])
    if skip is not None and not escalated:
        pytest.skip(skip)
    if failure is not None:
        pytest.fail(failure, pytrace=False)
