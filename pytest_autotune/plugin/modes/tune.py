"""Tune mode: search a test's space calling its body once per trial, then pick and verify the winner.

1. **Search**: :class:`~pytest_autotune.tuning.tuner.Tuner` proposes configurations; each trial is one
   call of the test body through a :class:`~pytest_autotune.plugin.workers.runner.TrialRunner`, in this
   process (fixtures set up once, before the first trial) or in a worker process that set the test up
   itself (:mod:`pytest_autotune.plugin.workers.parent`: a crash or hang is a failed trial). The journal
   makes an interrupted run resume; when tuning ends otherwise it is renamed ``*.done.jsonl`` so
   the next ``--autotune`` starts afresh (the finished journal stays for reports).
   A warm-started test (:mod:`pytest_autotune.plugin.modes.warm_start`) hands its transfer sources to
   the tuner, which evaluates their best configurations first, and may stop early once it stalls.
   With ``--autotune-parallel`` the trials run on several devices at once
   (:mod:`pytest_autotune.plugin.workers.parallel`: an executor the tuning loop keeps busy,
   :func:`~pytest_autotune.tuning.parallel.loop.run_parallel`), told in the order they finish.
2. **Finalists**: the best few configurations, the declared default and the committed
   configuration (when still valid) are re-measured by the same runner in interleaved rounds, so
   drift in the machine's speed hits them alike; one :data:`OUTCLASSED` times worse than the best
   after the first round (a slow declared default) measures no further round: one round says how
   many times worse it is. The declared default is measured by a
   :class:`~pytest_autotune.plugin.modes.slow_default.DefaultMeter`: a short probe first, no more
   once it is clearly outclassed ('vs default: ≥N.Nx'), and never beyond a time cap (a fifth of
   the search's time, within bounds). The committed configuration is replaced only
   when the winner beats it beyond the regression rule's noise band
   (:meth:`pytest_autotune.timing.regression.Rule.beats`).
3. **Final call**: the body runs once more with the winner as the real test, in this process
   (as in a normal run); its exceptions are the test's outcome. The new baseline is measured
   after the choice by the ``baseline`` meter (:mod:`pytest_autotune.plugin.modes.baseline`, as
   ``--autotune-update-baseline`` does): in fresh processes, as a plain run measures, with the
   noise between them; not from the finalist rounds, which won because they were fast (the
   winner's curse), nor from this process's timings.

The reported speedup over the default compares the winner's and the default's finalist rounds:
measured side by side, under the same machine conditions, as the choice itself was. Dividing the
default's rounds by the later baseline instead would mix two moments of a shared machine; on a
memory-bound kernel whose runs vary by 2x it showed a winner that beat the default in every
round as "0.91x vs default".
"""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.fixture import MEASURE_REPEAT, TRIAL_REPEAT, Autotune
from pytest_autotune.outcome import Outcome
from pytest_autotune.plugin.modes.baseline import BaselineFailed, BaselineMeter, MeasuredBaseline
from pytest_autotune.plugin.modes.slow_default import (
    OUTCLASSED,
    DefaultMeter,
    best_median,
    default_cap,
    searched_seconds,
)
from pytest_autotune.plugin.modes.warm_start import WarmStart, budget_spent, warm_abort
from pytest_autotune.plugin.report.search_trace import SearchTrace
from pytest_autotune.plugin.workers.runner import TrialRunner, run_final
from pytest_autotune.policy import Policy
from pytest_autotune.store.history_record import tuning_history
from pytest_autotune.timing.measure import Stats, round_significant
from pytest_autotune.tuning.warm_start import source_design

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.entry import History, StoreEntry
    from pytest_autotune.plugin.workers.runner import BodyRun
    from pytest_autotune.space.base import Space
    from pytest_autotune.tuning.parallel.executor import TrialExecutor
    from pytest_autotune.tuning.trials import Trial, TrialRecord, TuningResult

__all__ = [
    "FINALIST_ROUNDS",
    "JOURNAL_WAIT",
    "OUTCLASSED",
    "TuneReport",
    "TuningFailed",
    "derive_seed",
    "tune",
]

#: Interleaved rounds in which the finalists are re-measured.
FINALIST_ROUNDS: Final = 3
#: Seconds a run waits for another process tuning the same test before it gives up on that test.
JOURNAL_WAIT: Final = 10.0

#: Called after each trial with (trials done, fraction of the budget used or None, label, best value).
ProgressCallback = Callable[[int, float | None, str, float | None], None]


@dataclass(frozen=True)
class TuneReport:
    """The outcome of tuning one test."""

    config: dict[str, Any]
    baseline: MeasuredBaseline
    default_stats: Stats | None
    #: The winner's finalist rounds (interleaved with the default's).
    winner_stats: Stats
    summary: dict[str, Any]
    kept_committed: bool
    #: The trials, the best trial's value and the re-measured finalists (summary, pictures).
    trace: SearchTrace
    history: History | None = None
    #: A warm-started search stopped before its budget because it stalled.
    stopped_early: bool = False
    #: The search stopped before its budget because its model expected too little of the rest.
    converged: bool = False
    #: The default was measured only until it was clearly outclassed: :meth:`speedup` is a lower bound.
    speedup_at_least: bool = False

    def speedup(self, maximize: bool) -> float | None:
        """How much better the chosen configuration is than the declared default (x times).

        From the finalist rounds of both, measured side by side (see the module docstring); when
        :attr:`speedup_at_least`, from the default's best call: a lower bound.
        """
        chosen = self.winner_stats.median
        if self.default_stats is None or self.default_stats.median <= 0 or chosen <= 0:
            return None
        if maximize:
            return chosen / (self.default_stats.max if self.speedup_at_least else self.default_stats.median)
        return (self.default_stats.min if self.speedup_at_least else self.default_stats.median) / chosen


def derive_seed(nodeid: str, seed: int | None) -> int:
    """The search seed of one test: stable per node id, so tuning is reproducible and resumable."""
    return (zlib.crc32(nodeid.encode()) + (seed or 0) * 1_000_003) % 2**32


class TuningFailed(Exception):
    """Tuning produced no configuration to commit; the message says why (the test fails with it).

    ``summary`` holds the tuning summary (trials, counts per label) and ``trace`` the trials
    when the search ran.
    """

    def __init__(
        self, message: str, summary: dict[str, Any] | None = None, trace: SearchTrace | None = None
    ) -> None:
        super().__init__(message)
        self.summary = summary
        self.trace = trace


def _infeasible_message(result: TuningResult) -> str:
    counts = ", ".join(f"{label} {n}" for label, n in result.counts.items() if n)
    lines = [
        f"no feasible configuration: all {result.evaluations} evaluated configurations failed "
        f"({counts or 'none evaluated'}; space size {result.space_size})"
    ]
    seen: set[str] = set()
    for record in result.history:
        label = record.outcome.label
        if label not in seen:
            seen.add(label)
            lines.append(f"  first {label} failure, config {record.config}: {record.outcome.detail}")
    return "\n".join(lines)


def _search(
    item: pytest.Function,
    autotune: Autotune,
    policy: Policy,
    journal: Path,
    progress: ProgressCallback,
    trials: TrialRunner,
    warm: WarmStart | None,
    executor: TrialExecutor[BodyRun] | None = None,
) -> tuple[TuningResult, bool]:
    """The search's result, and whether a warm-started run stopped early (before its budget).

    With an ``executor``, its slots (devices) run trials at once; else ``trials`` runs one at a time.
    """
    from pytest_autotune.tuning.parallel.loop import run_parallel
    from pytest_autotune.tuning.tuner import Tuner

    tuner = Tuner(
        autotune.space,
        policy.strategy,
        abort=policy.budget if warm is None else warm_abort(policy.budget, warm.design),
        seed=derive_seed(item.nodeid, policy.seed),
        journal=journal,
        maximize=policy.maximize,
        strategy_options=policy.strategy_options,
        on_journal_mismatch="restart",
        sources=warm.sources if warm is not None else (),
    )

    def told(record: TrialRecord) -> None:
        progress(len(tuner.history), tuner.progress(), record.outcome.label, tuner.result.best_value)

    with tuner:
        if executor is not None:
            run_parallel(tuner, executor, _run_outcome, told)
        while executor is None and (trial := tuner.ask()) is not None:
            if not policy.isolated:  # a crash here ends pytest: a resumed run must not run it again
                tuner.start(trial)
            try:
                run = trials(trial.config, TRIAL_REPEAT)
                outcome = _run_outcome(trial, run)
            except BaseException:
                tuner.cancel(trial)
                raise
            told(tuner.tell(trial, outcome))
        result = tuner.result
        early = (
            warm is not None
            and not tuner.exhausted
            and not tuner.converged
            and not budget_spent(policy.budget, tuner.state())
        )
    return result, early


def _run_outcome(trial: Trial, run: BodyRun) -> Outcome:
    """A trial's outcome from the body's run; a body that measured nothing ends tuning."""
    if run.label == "ok" and not run.samples:
        raise TuningFailed(
            "the test body never called autotune.measure() or autotune.record(): there is nothing to tune"
        )
    return run.outcome()


def _retire_journal(journal: Path) -> None:
    """Rename a finished journal ``*.done.jsonl``: the next ``--autotune`` starts afresh."""
    if journal.exists():
        journal.replace(journal.with_name(journal.stem + ".done" + journal.suffix))


def _candidates(
    space: Space, result: TuningResult, k: int, committed: StoreEntry | None
) -> tuple[list[dict[str, Any]], int | None, int | None]:
    """Finalist configurations, with the positions of the default and the committed ones."""
    from pytest_autotune.space.errors import SpaceError

    finalists = [dict(record.config) for record in result.top(k)]
    failed = [dict(record.config) for record in result.history if not record.outcome.feasible]

    def add(config: dict[str, Any] | None) -> int | None:
        if config is None or set(config) != set(space.names) or not space.contains([config])[0]:
            return None
        if config in failed:  # failed as a trial (maybe crashed the process): not run again
            return None
        if config not in finalists:
            finalists.append(config)
        return finalists.index(config)

    try:
        default: dict[str, Any] | None = space.default_config()
    except SpaceError:
        default = None
    committed_config = dict(committed.config) if committed else None
    return finalists, add(default), add(committed_config)


def _remeasure(
    trials: TrialRunner,
    finalists: list[dict[str, Any]],
    keep: int | None = None,
    maximize: bool = False,
    default: DefaultMeter | None = None,
    default_index: int | None = None,
) -> dict[int, list[tuple[float, ...]]]:
    """Samples of each round per finalist, over interleaved rounds (one that fails once is dropped).

    After the first round, a finalist :data:`OUTCLASSED` times worse than the best of that round
    (a slow declared default) is measured no more: its one round says how many times worse it is,
    and the rounds it would take are time the phase after the search should not spend. ``keep``
    (the committed configuration) is measured in every round, since the winner must beat it.
    The finalist at ``default_index`` (the declared default, not ``keep``) is measured by
    ``default``, within its time cap; it comes last in the first round, after the others it is
    compared with.
    """
    measured: dict[int, list[tuple[float, ...]]] = {i: [] for i in range(len(finalists))}
    active = set(measured)
    metered = default_index if default is not None and default_index != keep else None
    for round_index in range(FINALIST_ROUNDS):
        order = [(round_index + j) % len(finalists) for j in range(len(finalists))]
        if round_index == 0 and metered is not None:
            order = [i for i in order if i != metered] + [metered]
        for i in order:
            if i not in measured or i not in active:
                continue
            if i == metered and default is not None:
                meter_run = default.round(best_median(measured, round_index, metered, maximize))
                if meter_run is None:
                    active.discard(i)
                    continue
                run = meter_run
            else:
                run = trials(finalists[i], MEASURE_REPEAT)
            if run.measured:
                measured[i].append(run.samples)
            else:
                del measured[i]
        if round_index == 0:
            active -= _outclassed(measured, keep, maximize)
    return measured


def _outclassed(measured: dict[int, list[tuple[float, ...]]], keep: int | None, maximize: bool) -> set[int]:
    """The finalists (never ``keep``) :data:`OUTCLASSED` times worse than the best, by their first round."""
    medians = {i: Stats.of(list(rounds[0])).median for i, rounds in measured.items() if rounds}
    positive = {i: m for i, m in medians.items() if m > 0}
    if len(positive) < 2 or len(positive) != len(medians):  # ratios need positive values
        return set()
    best = max(positive.values()) if maximize else min(positive.values())
    return {
        i for i, m in positive.items() if i != keep and (best / m if maximize else m / best) >= OUTCLASSED
    }


def _pooled(rounds: list[tuple[float, ...]]) -> Stats:
    """Statistics of the samples of several rounds together."""
    return Stats.of([x for samples in rounds for x in samples])


def _pick_winner(stats: dict[int, Stats], committed: int | None, policy: Policy) -> tuple[int, bool]:
    """The best finalist, or the committed one when the best does not beat it beyond the noise band."""
    sign = -1.0 if policy.maximize else 1.0
    winner = min(stats, key=lambda i: sign * stats[i].median)
    if committed is None or committed not in stats or winner == committed:
        return winner, False
    if not policy.rule.beats(stats[winner], stats[committed]):
        return committed, True
    return winner, False


@contextlib.contextmanager
def _journal_kept_only_if_interrupted(journal: Path) -> Iterator[None]:
    """Retire the journal when the block ends in any way but an interruption (see :func:`tune`)."""
    from _pytest.outcomes import Exit

    try:
        yield
    except (KeyboardInterrupt, SystemExit, Exit):
        raise
    except BaseException:
        _retire_journal(journal)
        raise
    _retire_journal(journal)


def tune(
    item: pytest.Function,
    autotune: Autotune,
    policy: Policy,
    *,
    journal: Path,
    committed: StoreEntry | None,
    progress: ProgressCallback,
    trials: TrialRunner,
    baseline: BaselineMeter,
    warm: WarmStart | None = None,
    executor: TrialExecutor[BodyRun] | None = None,
) -> TuneReport:
    """Tune the test and run it once more with the winner (see the module docstring).

    The journal is retired when tuning ends in any way but an interruption (``KeyboardInterrupt``,
    ``pytest.exit``, ``SystemExit``, or the process being killed): an interrupted test resumes
    from it, even when the interruption came after the search (during the finalists), so no
    trial is evaluated twice; a test that completed or failed starts afresh next time. The journal
    is locked while tuning: a second run tuning the same test at the same time waits up to
    :data:`JOURNAL_WAIT` seconds, then fails that test naming the other process, journal untouched.
    """
    from pytest_autotune.tuning.journal import JournalBusy, hold_journal

    with contextlib.ExitStack() as held:
        try:
            held.enter_context(hold_journal(journal, wait=JOURNAL_WAIT))
        except JournalBusy as exc:  # another run tunes this test: its journal is not touched
            raise TuningFailed(str(exc)) from None
        held.enter_context(_journal_kept_only_if_interrupted(journal))
        started = time.perf_counter()
        result, stopped_early = _search(item, autotune, policy, journal, progress, trials, warm, executor)
        summary = {
            "trials": result.evaluations,
            "counts": dict(result.counts),
            "strategy": result.strategy,
            "seed": result.seed,
            "duration": round_significant(time.perf_counter() - started, 3),
        }
        suggested = source_design(autotune.space, warm.sources) if warm is not None else []
        trace = SearchTrace.of_search(result, policy.unit, suggested)
        if not result.feasible:
            raise TuningFailed(_infeasible_message(result), summary, trace)
        finalists, default_index, committed_index = _candidates(
            autotune.space, result, policy.finalists, committed
        )
        meter = None
        if default_index is not None:
            cap = default_cap(time.perf_counter() - started)
            meter = DefaultMeter(
                trials,
                finalists[default_index],
                cap,
                maximize=policy.maximize,
                estimate=searched_seconds(result, finalists[default_index], policy.unit, policy.maximize),
            )
        measured = _remeasure(trials, finalists, committed_index, policy.maximize, meter, default_index)
        if not measured:
            raise TuningFailed(
                "every finalist failed when re-measured (flaky correctness check or unstable device): "
                + ", ".join(str(c) for c in finalists),
                summary,
                trace,
            )
        stats = {i: _pooled(rounds) for i, rounds in measured.items()}
        winner, kept = _pick_winner(stats, committed_index, policy)
        trace = trace.with_finalists(
            finalists,
            stats,
            default=default_index,
            committed=committed_index,
            winner=winner,
            best=len(result.top(policy.finalists)),
        )
        final = run_final(item, autotune, finalists[winner], repeat=MEASURE_REPEAT)
        if final.stats is None:
            raise TuningFailed("the final run of the winning configuration measured nothing", summary, trace)
        try:
            measured_baseline = baseline(finalists[winner], final.stats)
        except BaselineFailed as exc:
            raise TuningFailed(str(exc), summary, trace) from None
        summary["duration"] = round_significant(time.perf_counter() - started, 3)
        default_stats = stats.get(default_index) if default_index is not None else None
        return TuneReport(
            config=finalists[winner],
            baseline=measured_baseline,
            default_stats=default_stats,
            winner_stats=stats[winner],
            summary=summary,
            kept_committed=kept,
            trace=trace,
            history=tuning_history(result, autotune.space.names, default_stats, stats[winner]),
            stopped_early=stopped_early,
            converged=result.converged,
            speedup_at_least=meter is not None and meter.at_least and default_index != winner,
        )
