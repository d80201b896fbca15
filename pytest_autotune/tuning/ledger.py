"""The tuner's bookkeeping: which trials are done or under way, what each returned, the best so far.

Kept apart from the loop (:mod:`pytest_autotune.tuning.tuner`) so that the questions the loop and
the abort conditions ask (was this configuration seen? how many trials succeeded? which is the
best? how long has the run taken?) each have one answer, in one place, whether the trials were
evaluated now or replayed from a journal. Two views of an outcome are kept: the history holds it as
measured; what the strategy was told is negated for a maximised objective (strategies always
minimise), and that view is what a strategy proposing a known configuration is told again.
"""

from __future__ import annotations

import time
from collections.abc import Container, Hashable
from dataclasses import dataclass

from pytest_autotune.outcome import LABELS, Label, Outcome
from pytest_autotune.tuning.abort import Improvement, TuningState
from pytest_autotune.tuning.trials import Trial, TrialRecord

__all__ = ["PendingTrial", "TrialLedger"]


@dataclass
class PendingTrial:
    """A trial asked but not yet told: its dedup key, when it was asked, and whether it was started."""

    trial: Trial
    key: Hashable
    suggest_seconds: float
    asked_at: float
    started: bool = False


class TrialLedger:
    """Completed trials in completion order, trials under way, counters, and the improvement trail.

    The clock (:attr:`elapsed_s`) starts when the ledger is built and includes the evaluation and
    suggestion time recorded for resumed trials (:attr:`resumed_seconds`).
    """

    def __init__(self, *, maximize: bool) -> None:
        self.maximize = maximize
        self.history: list[TrialRecord] = []
        self.pending: dict[int, PendingTrial] = {}
        self.counts: dict[Label, int] = dict.fromkeys(LABELS, 0)
        self.improvements: list[Improvement] = []
        self.resumed_seconds = 0.0
        self._outcomes: dict[Hashable, Outcome] = {}  # key -> outcome as the strategy sees it
        self._best_index: int | None = None
        self._started = time.perf_counter()

    @property
    def elapsed_s(self) -> float:
        """Seconds since the ledger was built, plus the time recorded for resumed trials."""
        return time.perf_counter() - self._started + self.resumed_seconds

    def told(self, key: Hashable) -> Outcome | None:
        """The outcome the strategy was told for the configuration ``key``, or None if none was."""
        return self._outcomes.get(key)

    def is_pending(self, key: Hashable) -> bool:
        """Whether a trial of the configuration ``key`` was asked and not yet told."""
        return any(p.key == key for p in self.pending.values())

    def seen(self) -> Container[Hashable]:
        """The keys evaluated or under way, as a container (the evaluated ones are not copied)."""
        return _SeenKeys(self._outcomes, {p.key for p in self.pending.values()})

    def seen_count(self) -> int:
        """How many configurations were evaluated or are under way."""
        return len(self._outcomes) + len(self.pending)

    def add(self, record: TrialRecord, key: Hashable) -> Outcome:
        """Record a finished trial (counters, best, improvements); returns what to tell the strategy."""
        self.history.append(record)
        outcome = record.outcome
        self.counts[outcome.label] += 1
        value = outcome.value
        if value is not None:
            best = self.improvements[-1].value if self.improvements else None
            if best is None or (value > best if self.maximize else value < best):
                self._best_index = len(self.history) - 1
                self.improvements.append(
                    Improvement(len(self.history), self.counts["ok"], self.elapsed_s, value)
                )
        if self.maximize and outcome.value is not None:
            outcome = Outcome("ok", -outcome.value, outcome.detail)
        self._outcomes[key] = outcome
        return outcome

    def best(self) -> TrialRecord | None:
        """The best finished trial so far (the first of equals), or None when none produced a value."""
        return self.history[self._best_index] if self._best_index is not None else None

    def state(self, *, space_size: int | None, include_pending: bool = False) -> TuningState:
        """The snapshot abort conditions are evaluated on."""
        evaluations = len(self.history) + (len(self.pending) if include_pending else 0)
        return TuningState(
            evaluations=evaluations,
            valid_evaluations=self.counts["ok"],
            elapsed_s=self.elapsed_s,
            space_size=space_size,
            maximize=self.maximize,
            improvements=self.improvements,
        )


class _SeenKeys:
    """Evaluated or pending keys, as a container (no copy of the evaluated ones)."""

    def __init__(self, outcomes: Container[Hashable], pending: set[Hashable]) -> None:
        self._outcomes = outcomes
        self._pending = pending

    def __contains__(self, key: object) -> bool:
        return key in self._outcomes or key in self._pending
