"""The tuning loop: ask a strategy, evaluate, tell it, until an abort condition holds.

Usable alone, without pytest::

    result = Tuner(space, "anneal", abort=Evaluations(50), seed=1).run(objective)

or step by step (the pytest plugin does this, one test call per trial)::

    while (trial := tuner.ask()) is not None:
        tuner.tell(trial, Outcome.ok(measure(trial.config)))

What the tuner guarantees, whatever the strategy does:

* **No configuration is evaluated twice.** When a strategy proposes a known
  configuration, the tuner tells it the recorded outcome again and asks
  again; after :data:`MAX_KNOWN_PROPOSALS` such proposals in a row it falls
  back to a uniformly drawn unseen configuration, and it reports exhaustion
  (``ask() -> None``) once every configuration was evaluated.
* **Several trials at once.** :meth:`ask` may be called again before earlier trials are told (one
  test's trials on several devices: :mod:`~pytest_autotune.tuning.parallel.loop`); the strategy is told
  the configurations under way before each suggestion
  (:meth:`~pytest_autotune.strategies.base.Strategy.pending`), the abort conditions count them when
  deciding whether to ask for another, and trials may be told in any order (the journal records
  each under its number as it finishes).
* **Maximised objectives** (``maximize=True``) are negated before strategies
  see them; results, history and journal keep the values as measured.
* **Journal and resume.** With ``journal=path`` every completed trial is
  appended to a JSON-lines file (flushed and fsync'd) before :meth:`tell`
  returns. Building a tuner on an existing journal of the same job replays
  it: the strategy is asked again and told each recorded outcome in order,
  without evaluating anything, so a seeded strategy ends in the state an
  uninterrupted run would have reached, and the run continues from there.
  If a re-asked proposal differs from the record (a non-deterministic
  strategy), the record is told anyway; nothing recorded is ever evaluated
  again. A strategy class may set ``resume_by_asking = False`` to be told the
  records without being asked (faster when asking is expensive, at the cost
  of exact equality with an uninterrupted run). A journal of a different job
  (space hash, strategy, seed, options or direction) raises
  :class:`~pytest_autotune.tuning.journal.JournalMismatchError` naming the file, or
  with ``on_journal_mismatch="restart"`` is renamed to ``<name>.<n>.old`` and
  a fresh run starts. ``seed=None`` adopts the journal's seed.
* **Errors in the objective** (:meth:`run`): by default an exception from
  the objective propagates and the trial is forgotten (not journaled, so a
  resumed run evaluates it); with ``errors="record"`` an ``Exception`` is
  recorded as a ``runtime`` failure with the error as detail. A returned
  float that is NaN or infinite is a ``runtime`` failure.
* **Time**: the clock the abort conditions see and ``duration_s`` include
  the evaluation and suggestion time recorded for resumed trials.
* **Crashes in this process**: :meth:`Tuner.start` journals a trial as started
  before it runs; a resumed run records a started trial that never finished as
  a ``runtime`` failure (its process died with it) instead of running it again.
* **Transfer sources** (``sources=[TransferSource, ...]``: what other devices or
  parametrizations measured) go to the strategy's constructor when it accepts
  ``sources``; otherwise the tuner evaluates their best configurations, mapped
  into this space, first (:mod:`~pytest_autotune.tuning.warm_start`).

This module is the loop; what it records and returns is in
:mod:`~pytest_autotune.tuning.trials`, its bookkeeping in :mod:`~pytest_autotune.tuning.ledger`,
the journal checks of a resume in :mod:`~pytest_autotune.tuning.resume`, and the evaluation of an
objective (:meth:`Tuner.run`) in :mod:`~pytest_autotune.tuning.evaluation`.
"""

from __future__ import annotations

import inspect
import numbers
import os
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from pytest_autotune.outcome import Outcome
from pytest_autotune.space.base import Config, Points, Space
from pytest_autotune.strategies import get_strategy, make_strategy
from pytest_autotune.strategies.base import SpaceExhausted, Strategy
from pytest_autotune.strategies.sources import TransferSource
from pytest_autotune.strategies.unseen import draw_unseen, key_of
from pytest_autotune.tuning.abort import (
    DEFAULT_ABORT,
    AbortCondition,
    AbortLike,
    TuningState,
    as_abort,
    budget_left,
    converged,
)
from pytest_autotune.tuning.evaluation import objective_outcome, run_objective
from pytest_autotune.tuning.journal import (
    JournalContents,
    JournalEntry,
    JournalHeader,
    JournalWriter,
    read_journal,
)
from pytest_autotune.tuning.ledger import PendingTrial, TrialLedger
from pytest_autotune.tuning.resume import (
    UNFINISHED_DETAIL,
    decode_point,
    journal_of_job,
    unfinished_as_failures,
)
from pytest_autotune.tuning.trials import Trial, TrialRecord, TuningResult
from pytest_autotune.tuning.warm_start import source_design

__all__ = [
    "DEFAULT_STRATEGY",
    "MAX_KNOWN_PROPOSALS",
    "UNFINISHED_DETAIL",
    "Trial",
    "TrialRecord",
    "Tuner",
    "TuningResult",
]

#: Registry name of the strategy used when none is given.
DEFAULT_STRATEGY = "bo"

#: Known configurations a strategy may propose in a row before the tuner draws an unseen one itself.
MAX_KNOWN_PROPOSALS = 32


def _make_strategy(name: str, space: Space, rng: np.random.Generator, options: Mapping[str, Any]) -> Strategy:
    """Instantiate a registered strategy (see :func:`pytest_autotune.strategies.make_strategy`)."""
    return make_strategy(name, space, rng, options)


def accepts_sources(name: str) -> bool:
    """Whether the strategy registered as ``name`` takes transfer ``sources`` (a keyword of its class)."""
    parameters = inspect.signature(get_strategy(name).__init__).parameters
    return "sources" in parameters and parameters["sources"].kind is inspect.Parameter.KEYWORD_ONLY


def _strategy_name(strategy: Strategy) -> str:
    return str(getattr(type(strategy), "name", type(strategy).__name__))


class Tuner:
    """The tuning loop over ``space`` with ``strategy`` (a registry name or an instance).

    See the module docstring for the guarantees (dedup, maximisation,
    journal/resume, errors). ``abort`` defaults to
    :data:`~pytest_autotune.tuning.abort.DEFAULT_ABORT`; ``seed=None`` draws one
    (recorded in the result and journal). ``strategy_options`` are passed to
    the strategy's constructor (only with a registry name).

    ``sources`` (:class:`~pytest_autotune.strategies.sources.TransferSource`: what tuning the
    same kernel elsewhere measured) go to a strategy given by name whose class takes a
    ``sources`` keyword (``bo`` does: it learns from them); for other strategies the sources'
    best configurations, mapped into this space, are the first trials (module docstring).
    :attr:`uses_sources` tells which happened.
    """

    def __init__(
        self,
        space: Space,
        strategy: str | Strategy = DEFAULT_STRATEGY,
        *,
        abort: AbortLike | None = None,
        seed: int | None = None,
        journal: str | os.PathLike[str] | None = None,
        maximize: bool = False,
        strategy_options: Mapping[str, Any] | None = None,
        on_journal_mismatch: Literal["error", "restart"] = "error",
        sources: Sequence[TransferSource] = (),
    ) -> None:
        if not isinstance(space, Space):
            raise TypeError(f"Tuner: expected a Space, got {type(space).__name__}")
        if on_journal_mismatch not in ("error", "restart"):
            raise ValueError(
                f"Tuner: on_journal_mismatch must be 'error' or 'restart', not {on_journal_mismatch!r}"
            )
        self.space = space
        self.maximize = bool(maximize)
        self.abort: AbortCondition = DEFAULT_ABORT if abort is None else as_abort(abort)
        self.abort.check(space)
        self._size: int | None = None if space.is_continuous else space.size
        options = dict(strategy_options or {})
        if not isinstance(strategy, (str, Strategy)):
            raise TypeError(f"Tuner: strategy must be a registry name or a Strategy, got {strategy!r}")
        if isinstance(strategy, Strategy) and options:
            raise ValueError("Tuner: strategy_options apply only to a strategy given by name")
        if seed is not None and (
            not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0
        ):
            raise ValueError(f"Tuner: seed must be a non-negative integer or None, got {seed!r}")
        sources = tuple(sources)
        for source in sources:
            if not isinstance(source, TransferSource):
                raise TypeError(f"Tuner: sources must be TransferSource objects, got {source!r}")
        if sources and isinstance(strategy, Strategy):
            raise ValueError("Tuner: sources apply only to a strategy given by name")

        contents: JournalContents | None = None
        if journal is not None:
            contents = read_journal(journal)
            if seed is None and contents.header is not None:
                seed = contents.header.seed
        self.seed = int(seed) if seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
        strategy_seq, fallback_seq = np.random.SeedSequence(self.seed).spawn(2)
        self._fallback_rng = np.random.default_rng(fallback_seq)
        #: Whether the strategy was given the transfer sources (see the class docstring).
        self.uses_sources = bool(sources) and isinstance(strategy, str) and accepts_sources(strategy)
        self.sources = sources
        if isinstance(strategy, str):
            given = {**options, "sources": sources} if self.uses_sources else options
            self.strategy: Strategy = _make_strategy(
                strategy, space, np.random.default_rng(strategy_seq), given
            )
            self.strategy_name = strategy
        else:
            self.strategy = strategy
            self.strategy_name = _strategy_name(strategy)
        self.strategy_options = options
        #: The sources' best configurations, evaluated first when the strategy does not take them.
        self.design = [] if self.uses_sources else source_design(space, self.sources)
        self._design_left = list(self.design)

        self._ledger = TrialLedger(maximize=self.maximize)  # its clock starts now
        self._next_number = 0
        self._exhausted = False
        #: Stopped because the strategy's model expects too little of the budget left (abort module).
        self.converged = False
        self._diverged = 0
        self._journal: JournalWriter | None = None
        if journal is not None:
            header = JournalHeader(
                self.space.space_hash, self.strategy_name, self.seed, options, self.maximize
            )
            self._open_journal(journal, header, contents, on_journal_mismatch)

    # -- journal ---------------------------------------------------------------------
    def _open_journal(
        self,
        path: str | os.PathLike[str],
        header: JournalHeader,
        contents: JournalContents | None,
        on_mismatch: str,
    ) -> None:
        contents = journal_of_job(path, header, contents, on_mismatch)
        crashed = unfinished_as_failures(contents)
        if contents is not None and (contents.entries or crashed):
            self._resume(path, [*contents.entries, *crashed])
        self._journal = JournalWriter(path, header, contents)
        for entry in crashed:  # now a finished failure: a later resume reads it as such
            self._journal.append(entry)

    def _resume(self, path: str | os.PathLike[str], entries: list[JournalEntry]) -> None:
        """Replay recorded trials: ask the strategy again (unless it opts out), tell each outcome."""
        by_asking = bool(getattr(self.strategy, "resume_by_asking", True))
        for entry in entries:
            point = decode_point(path, self.space, entry)
            key = key_of(point)
            if self._ledger.told(key) is not None:
                continue  # cannot happen with journals this tuner wrote; never count a trial twice
            if by_asking:
                proposed = self._propose()
                if proposed is None or key_of(proposed) != key:
                    self._diverged += 1
            config = self.space.configs(point)[0]
            record = TrialRecord(
                entry.number, config, entry.outcome, entry.eval_seconds, entry.suggest_seconds, resumed=True
            )
            self._ledger.resumed_seconds += entry.eval_seconds + entry.suggest_seconds
            self._complete(record, point, key)
            self._next_number = max(self._next_number, entry.number + 1)

    def close(self) -> None:
        """Close the journal file (the tuner can still report its result)."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    # -- state -----------------------------------------------------------------------
    @property
    def elapsed_s(self) -> float:
        """Seconds since the tuner was built, plus the time recorded for resumed trials."""
        return self._ledger.elapsed_s

    def state(self, *, include_pending: bool = False) -> TuningState:
        """The snapshot abort conditions are evaluated on."""
        return self._ledger.state(space_size=self._size, include_pending=include_pending)

    @property
    def exhausted(self) -> bool:
        """True when every configuration of the space has been evaluated or is being evaluated."""
        if self._exhausted:
            return True
        return self._size is not None and self._ledger.seen_count() >= self._size

    @property
    def done(self) -> bool:
        """True when the abort condition holds or the space is exhausted."""
        return self.exhausted or self.abort.should_stop(self.state())

    def progress(self) -> float | None:
        """Progress of the abort condition in [0, 1] (None when it cannot be told)."""
        return 1.0 if self.exhausted else self.abort.progress(self.state())

    # -- ask / tell ------------------------------------------------------------------
    def _propose(self) -> Points | None:
        """The next unseen configuration of the sources' design, else the strategy's next unseen
        proposal (re-telling known ones), else an unseen draw."""
        while self._design_left:
            point = self.space.to_points([self._design_left.pop(0)])
            key = key_of(point)
            if self._ledger.told(key) is None and not self._ledger.is_pending(key):
                return point
        self.strategy.pending([p.trial.point for p in self._ledger.pending.values()])
        for _ in range(MAX_KNOWN_PROPOSALS):
            try:
                point = self.strategy.ask()
            except SpaceExhausted:
                break
            if not isinstance(point, Points) or len(point) != 1:
                raise TypeError(
                    f"strategy {self.strategy_name!r}: ask() must return a one-row Points, got {point!r}"
                )
            key = key_of(point)
            known = self._ledger.told(key)
            if known is not None:
                self.strategy.tell(point, known)
                continue
            if not self._ledger.is_pending(key):
                return point
        return draw_unseen(self.space, self._fallback_rng, self._ledger.seen())

    def ask(self) -> Trial | None:
        """The next trial to evaluate, or None when done (abort condition or exhausted space)."""
        if self.exhausted or self.converged or self.abort.should_stop(self.state(include_pending=True)):
            return None
        started = time.perf_counter()
        point = self._propose()
        if point is None:
            self._exhausted = True
            return None
        gain, fraction = self.strategy.expected_gain, self.strategy.converge
        if converged(gain, fraction, budget_left(self.abort, self.state(include_pending=True))):
            self.converged = True  # the proposal is dropped: the model expects too little of it
            return None
        trial = Trial(self._next_number, self.space.configs(point)[0], point)
        self._next_number += 1
        now = time.perf_counter()
        self._ledger.pending[trial.number] = PendingTrial(trial, key_of(point), now - started, now)
        return trial

    def start(self, trial: Trial) -> None:
        """Journal durably that ``trial`` is about to run, before running it in this process.

        If the process dies during the trial (a configuration that crashes it), a tuner resuming
        the journal records that trial as a ``runtime`` failure instead of running it again (see
        the module docstring). Trials run where a crash cannot take the tuner down (a worker
        process) need no start: a kill of the tuner's process there re-runs the trial on resume.
        """
        pending = self._ledger.pending.get(trial.number)
        if pending is None:
            raise ValueError(f"start: trial {trial.number} was not asked from this tuner or was told")
        if self._journal is not None and not pending.started:
            self._journal.start(trial.number, trial.config)
            pending.started = True

    def cancel(self, trial: Trial) -> None:
        """Forget a trial that was asked but will not be told (e.g. the run is interrupted).

        A started trial is journaled as cancelled, so a resumed run evaluates it.
        """
        pending = self._ledger.pending.pop(trial.number, None)
        if pending is not None and pending.started and self._journal is not None:
            self._journal.cancel(trial.number)

    def tell(self, trial: Trial, outcome: Outcome | float, *, seconds: float | None = None) -> TrialRecord:
        """Record the outcome of an asked trial (journaled before returning); returns its record.

        ``outcome`` is as measured (a float means ``Outcome.ok``); ``seconds``
        overrides the evaluation time (default: time since :meth:`ask`).
        """
        pending = self._ledger.pending.get(trial.number)
        if pending is None or pending.key != key_of(trial.point):
            raise ValueError(f"tell: trial {trial.number} was not asked from this tuner, or was already told")
        outcome = objective_outcome(outcome)
        del self._ledger.pending[trial.number]
        elapsed = time.perf_counter() - pending.asked_at if seconds is None else float(seconds)
        record = TrialRecord(trial.number, trial.config, outcome, elapsed, pending.suggest_seconds)
        if self._journal is not None:
            self._journal.append(
                JournalEntry(
                    record.number, record.config, outcome, record.eval_seconds, record.suggest_seconds
                )
            )
        self._complete(record, trial.point, pending.key)
        return record

    def _complete(self, record: TrialRecord, point: Points, key: Hashable) -> None:
        """Add a finished trial to the ledger (history, counters, best); tell the strategy."""
        self.strategy.tell(point, self._ledger.add(record, key))

    # -- convenience -----------------------------------------------------------------
    def run(
        self,
        objective: Callable[[Config], float | Outcome],
        *,
        errors: Literal["raise", "record"] = "raise",
    ) -> TuningResult:
        """Evaluate trials with ``objective(config)`` until done; returns :attr:`result`.

        ``errors="raise"`` lets an exception from the objective propagate
        (the trial is forgotten); ``"record"`` records it as a ``runtime``
        failure and goes on. ``KeyboardInterrupt`` always propagates.
        """
        return run_objective(self, objective, errors=errors)

    @property
    def history(self) -> list[TrialRecord]:
        """Completed trials in completion order (a copy)."""
        return list(self._ledger.history)

    @property
    def result(self) -> TuningResult:
        """The best configuration so far, the history and the counters (available at any time)."""
        ledger = self._ledger
        best = ledger.best()
        return TuningResult(
            best_config=dict(best.config) if best is not None else None,
            best_value=best.outcome.value if best is not None else None,
            history=list(ledger.history),
            counts=dict(ledger.counts),
            evaluations=len(ledger.history),
            duration_s=self.elapsed_s,
            strategy=self.strategy_name,
            seed=self.seed,
            space_size=self._size,
            maximize=self.maximize,
            exhausted=self.exhausted,
            resumed=sum(r.resumed for r in ledger.history),
            diverged=self._diverged,
            converged=self.converged,
        )

    def __enter__(self) -> Tuner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
