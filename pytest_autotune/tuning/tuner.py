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
"""

from __future__ import annotations

import math
import numbers
import os
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from pytest_autotune.outcome import LABELS, Label, Outcome
from pytest_autotune.space.base import Config, Points, Space
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.strategies import make_strategy
from pytest_autotune.strategies.base import SpaceExhausted, Strategy
from pytest_autotune.strategies.unseen import draw_unseen, key_of
from pytest_autotune.tuning.abort import (
    DEFAULT_ABORT,
    AbortCondition,
    AbortLike,
    Improvement,
    TuningState,
    as_abort,
)
from pytest_autotune.tuning.journal import (
    JournalContents,
    JournalEntry,
    JournalError,
    JournalHeader,
    JournalMismatchError,
    JournalWriter,
    read_journal,
    set_aside,
)

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

#: Detail of a trial journaled as started that never finished (see :meth:`Tuner.start`).
UNFINISHED_DETAIL = (
    "the process running this trial died before it finished (a crash, or a kill); "
    "recorded as a failure on resume and not run again"
)


@dataclass(frozen=True)
class Trial:
    """A configuration to evaluate: ``number`` (0-based), ``config`` and its ``point`` (one row)."""

    number: int
    config: Config
    point: Points


@dataclass(frozen=True)
class TrialRecord:
    """A completed trial: outcome as measured, seconds spent evaluating and suggesting it."""

    number: int
    config: Config
    outcome: Outcome
    eval_seconds: float
    suggest_seconds: float
    resumed: bool = False


@dataclass
class TuningResult:
    """The best configuration so far and everything that led to it.

    ``best_value`` is as measured; ``counts`` has every label (zeros
    included); ``duration_s`` includes time recorded for resumed trials;
    ``space_size`` is None for spaces with continuous parameters.
    """

    best_config: Config | None
    best_value: float | None
    history: list[TrialRecord]
    counts: dict[Label, int]
    evaluations: int
    duration_s: float
    strategy: str
    seed: int
    space_size: int | None
    maximize: bool = False
    exhausted: bool = False
    resumed: int = 0
    diverged: int = 0

    @property
    def feasible(self) -> bool:
        """True when some configuration produced a value."""
        return self.best_value is not None

    def top(self, k: int) -> list[TrialRecord]:
        """The ``k`` best feasible trials, best first (ties keep trial order)."""
        if k < 0:
            raise ValueError(f"top: k must be >= 0, got {k}")
        feasible = [r for r in self.history if r.outcome.value is not None]
        sign = -1.0 if self.maximize else 1.0
        feasible.sort(key=lambda r: sign * (r.outcome.value or 0.0))
        return feasible[:k]


@dataclass
class _Pending:
    trial: Trial
    key: Hashable
    suggest_seconds: float
    asked_at: float
    started: bool = False


@dataclass
class _Progress:
    """Counters, best so far and the improvement trail."""

    counts: dict[Label, int] = field(default_factory=lambda: dict.fromkeys(LABELS, 0))
    improvements: list[Improvement] = field(default_factory=list)
    best_index: int | None = None
    resumed_seconds: float = 0.0


def _make_strategy(name: str, space: Space, rng: np.random.Generator, options: Mapping[str, Any]) -> Strategy:
    """Instantiate a registered strategy (see :func:`pytest_autotune.strategies.make_strategy`)."""
    return make_strategy(name, space, rng, options)


def _strategy_name(strategy: Strategy) -> str:
    return str(getattr(type(strategy), "name", type(strategy).__name__))


class Tuner:
    """The tuning loop over ``space`` with ``strategy`` (a registry name or an instance).

    See the module docstring for the guarantees (dedup, maximisation,
    journal/resume, errors). ``abort`` defaults to
    :data:`~pytest_autotune.tuning.abort.DEFAULT_ABORT`; ``seed=None`` draws one
    (recorded in the result and journal). ``strategy_options`` are passed to
    the strategy's constructor (only with a registry name).
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

        contents: JournalContents | None = None
        if journal is not None:
            contents = read_journal(journal)
            if seed is None and contents.header is not None:
                seed = contents.header.seed
        self.seed = int(seed) if seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
        strategy_seq, fallback_seq = np.random.SeedSequence(self.seed).spawn(2)
        self._fallback_rng = np.random.default_rng(fallback_seq)
        if isinstance(strategy, str):
            self.strategy: Strategy = _make_strategy(
                strategy, space, np.random.default_rng(strategy_seq), options
            )
            self.strategy_name = strategy
        else:
            self.strategy = strategy
            self.strategy_name = _strategy_name(strategy)
        self.strategy_options = options

        self._history: list[TrialRecord] = []
        self._outcomes: dict[Hashable, Outcome] = {}  # key -> outcome as the strategy sees it
        self._pending: dict[int, _Pending] = {}
        self._progress = _Progress()
        self._next_number = 0
        self._exhausted = False
        self._diverged = 0
        self._started = time.perf_counter()
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
        if contents is not None and contents.header is not None:
            differences = header.differences(contents.header)
            if differences:
                if on_mismatch == "error":
                    raise JournalMismatchError(
                        path,
                        "journal of a different tuning job (" + "; ".join(differences) + "); "
                        "delete it or resume with the same settings",
                    )
                set_aside(path)
                contents = None
        crashed = [
            JournalEntry(start.number, start.config, Outcome.failed("runtime", UNFINISHED_DETAIL), 0.0, 0.0)
            for start in sorted(contents.unfinished if contents else (), key=lambda s: s.number)
        ]
        if contents is not None and (contents.entries or crashed):
            self._resume(path, [*contents.entries, *crashed])
        self._journal = JournalWriter(path, header, contents)
        for entry in crashed:  # now a finished failure: a later resume reads it as such
            self._journal.append(entry)

    def _resume(self, path: str | os.PathLike[str], entries: list[JournalEntry]) -> None:
        by_asking = bool(getattr(self.strategy, "resume_by_asking", True))
        for entry in entries:
            point = self._decode(path, entry)
            key = key_of(point)
            if key in self._outcomes:
                continue  # cannot happen with journals this tuner wrote; never count a trial twice
            if by_asking:
                proposed = self._propose()
                if proposed is None or key_of(proposed) != key:
                    self._diverged += 1
            config = self.space.configs(point)[0]
            record = TrialRecord(
                entry.number, config, entry.outcome, entry.eval_seconds, entry.suggest_seconds, resumed=True
            )
            self._progress.resumed_seconds += entry.eval_seconds + entry.suggest_seconds
            self._complete(record, point, key)
            self._next_number = max(self._next_number, entry.number + 1)

    def _decode(self, path: str | os.PathLike[str], entry: JournalEntry) -> Points:
        config = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.config.items()}
        if set(config) != set(self.space.names):
            raise JournalError(
                path, f"trial {entry.number}: parameters {sorted(config)} do not match the space"
            )
        try:
            return self.space.to_points([config])
        except (SpaceError, KeyError, TypeError, ValueError) as exc:
            raise JournalError(path, f"trial {entry.number}: {config!r} is not in the space ({exc})") from exc

    def close(self) -> None:
        """Close the journal file (the tuner can still report its result)."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None

    # -- state -----------------------------------------------------------------------
    @property
    def elapsed_s(self) -> float:
        """Seconds since the tuner was built, plus the time recorded for resumed trials."""
        return time.perf_counter() - self._started + self._progress.resumed_seconds

    def state(self, *, include_pending: bool = False) -> TuningState:
        """The snapshot abort conditions are evaluated on."""
        counts = self._progress.counts
        evaluations = len(self._history) + (len(self._pending) if include_pending else 0)
        return TuningState(
            evaluations=evaluations,
            valid_evaluations=counts["ok"],
            elapsed_s=self.elapsed_s,
            space_size=self._size,
            maximize=self.maximize,
            improvements=self._progress.improvements,
        )

    @property
    def exhausted(self) -> bool:
        """True when every configuration of the space has been evaluated or is being evaluated."""
        if self._exhausted:
            return True
        return self._size is not None and len(self._outcomes) + len(self._pending) >= self._size

    @property
    def done(self) -> bool:
        """True when the abort condition holds or the space is exhausted."""
        return self.exhausted or self.abort.should_stop(self.state())

    def progress(self) -> float | None:
        """Progress of the abort condition in [0, 1] (None when it cannot be told)."""
        return 1.0 if self.exhausted else self.abort.progress(self.state())

    # -- ask / tell ------------------------------------------------------------------
    def _strategy_outcome(self, outcome: Outcome) -> Outcome:
        if self.maximize and outcome.value is not None:
            return Outcome("ok", -outcome.value, outcome.detail)
        return outcome

    def _propose(self) -> Points | None:
        """The strategy's next unseen proposal (re-telling known ones), else an unseen draw."""
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
            known = self._outcomes.get(key)
            if known is not None:
                self.strategy.tell(point, known)
                continue
            if not any(p.key == key for p in self._pending.values()):
                return point
        seen = _SeenKeys(self._outcomes, self._pending)
        return draw_unseen(self.space, self._fallback_rng, seen)

    def ask(self) -> Trial | None:
        """The next trial to evaluate, or None when done (abort condition or exhausted space)."""
        if self.exhausted or self.abort.should_stop(self.state(include_pending=True)):
            return None
        started = time.perf_counter()
        point = self._propose()
        if point is None:
            self._exhausted = True
            return None
        trial = Trial(self._next_number, self.space.configs(point)[0], point)
        self._next_number += 1
        now = time.perf_counter()
        self._pending[trial.number] = _Pending(trial, key_of(point), now - started, now)
        return trial

    def start(self, trial: Trial) -> None:
        """Journal durably that ``trial`` is about to run, before running it in this process.

        If the process dies during the trial (a configuration that crashes it), a tuner resuming
        the journal records that trial as a ``runtime`` failure instead of running it again (see
        the module docstring). Trials run where a crash cannot take the tuner down (a worker
        process) need no start: a kill of the tuner's process there re-runs the trial on resume.
        """
        pending = self._pending.get(trial.number)
        if pending is None:
            raise ValueError(f"start: trial {trial.number} was not asked from this tuner or was told")
        if self._journal is not None and not pending.started:
            self._journal.start(trial.number, trial.config)
            pending.started = True

    def cancel(self, trial: Trial) -> None:
        """Forget a trial that was asked but will not be told (e.g. the run is interrupted).

        A started trial is journaled as cancelled, so a resumed run evaluates it.
        """
        pending = self._pending.pop(trial.number, None)
        if pending is not None and pending.started and self._journal is not None:
            self._journal.cancel(trial.number)

    def tell(self, trial: Trial, outcome: Outcome | float, *, seconds: float | None = None) -> TrialRecord:
        """Record the outcome of an asked trial (journaled before returning); returns its record.

        ``outcome`` is as measured (a float means ``Outcome.ok``); ``seconds``
        overrides the evaluation time (default: time since :meth:`ask`).
        """
        pending = self._pending.get(trial.number)
        if pending is None or pending.key != key_of(trial.point):
            raise ValueError(f"tell: trial {trial.number} was not asked from this tuner, or was already told")
        outcome = _as_outcome(outcome)
        del self._pending[trial.number]
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
        """Add a finished trial to the history, counters and best; tell the strategy."""
        progress = self._progress
        self._history.append(record)
        outcome = record.outcome
        progress.counts[outcome.label] += 1
        value = outcome.value
        if value is not None:
            best = progress.improvements[-1].value if progress.improvements else None
            if best is None or (value > best if self.maximize else value < best):
                progress.best_index = len(self._history) - 1
                progress.improvements.append(
                    Improvement(len(self._history), progress.counts["ok"], self.elapsed_s, value)
                )
        strategy_outcome = self._strategy_outcome(outcome)
        self._outcomes[key] = strategy_outcome
        self.strategy.tell(point, strategy_outcome)

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
        if errors not in ("raise", "record"):
            raise ValueError(f"run: errors must be 'raise' or 'record', not {errors!r}")
        while (trial := self.ask()) is not None:
            try:
                returned = objective(trial.config)
            except Exception as exc:
                if errors == "raise":
                    self.cancel(trial)
                    raise
                returned = Outcome.failed("runtime", f"{type(exc).__name__}: {exc}")
            except BaseException:
                self.cancel(trial)
                raise
            self.tell(trial, returned)
        return self.result

    @property
    def history(self) -> list[TrialRecord]:
        """Completed trials in completion order (a copy)."""
        return list(self._history)

    @property
    def result(self) -> TuningResult:
        """The best configuration so far, the history and the counters (available at any time)."""
        progress = self._progress
        best = self._history[progress.best_index] if progress.best_index is not None else None
        return TuningResult(
            best_config=dict(best.config) if best is not None else None,
            best_value=best.outcome.value if best is not None else None,
            history=list(self._history),
            counts=dict(progress.counts),
            evaluations=len(self._history),
            duration_s=self.elapsed_s,
            strategy=self.strategy_name,
            seed=self.seed,
            space_size=self._size,
            maximize=self.maximize,
            exhausted=self.exhausted,
            resumed=sum(r.resumed for r in self._history),
            diverged=self._diverged,
        )

    def __enter__(self) -> Tuner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _SeenKeys:
    """Evaluated or pending keys, as a container (no copy)."""

    def __init__(self, outcomes: Mapping[Hashable, Outcome], pending: Mapping[int, _Pending]) -> None:
        self._outcomes = outcomes
        self._pending = {p.key for p in pending.values()}

    def __contains__(self, key: object) -> bool:
        return key in self._outcomes or key in self._pending


def _as_outcome(value: Outcome | float) -> Outcome:
    if isinstance(value, Outcome):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if not math.isfinite(number):
            return Outcome.failed("runtime", f"the objective returned {number!r}")
        return Outcome.ok(number)
    raise TypeError(f"an objective must return a number or an Outcome, got {value!r}")
