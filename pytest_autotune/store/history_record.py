"""The history a store entry keeps of the tuning run that made it: compact, canonical, bounded.

What one tuning run measured is worth keeping: the next device, or the next parametrization of the
same test, starts from it (:mod:`pytest_autotune.plugin.modes.warm_start`). The store is committed and
reviewed, so the record is small and diff-friendly:

* the best :data:`MAX_TRIALS` measured trials, each as its value relative to the best (rounded to
  :data:`SIGNIFICANT` significant digits) and its configuration's values, and up to
  :data:`MAX_FAILURES` failed configurations with their labels (the first ones found);
* written canonically: rows sorted (trials by value, then by their values' JSON; failures by label,
  then values), one row per line (:func:`pytest_autotune.store.document.dumps`), so re-tuning one
  test changes only that entry's lines;
* at most :data:`MAX_ENTRY_BYTES` per entry as written, ``commit_info`` and ``measured_at``
  included: failures beyond a few, then the worst trials, are dropped until it fits (:func:`bounded`).
  The entry is encoded once without its rows and each row once; the size for any number of rows
  kept follows from those (:func:`pytest_autotune.store.document.history_rows_bytes`), so bounding
  is linear in the rows, not quadratic.

It lives with the store, which owns the entry's text and so its size; the plugin builds an entry's
history here and bounds it here before the controller writes it. It reads a
:class:`~pytest_autotune.tuning.trials.TuningResult` (for its types only).

Objectives whose values are not all positive (a score that may be zero or negative) keep no
history: a value relative to the best means nothing there.
"""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import accumulate
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.entry import History, StoreEntry
from pytest_autotune.store.document import entry_text, history_row_bytes, history_rows_bytes
from pytest_autotune.timing.measure import round_significant

if TYPE_CHECKING:
    from pytest_autotune.timing.measure import Stats
    from pytest_autotune.tuning.trials import TuningResult

__all__ = ["MAX_ENTRY_BYTES", "MAX_FAILURES", "MAX_TRIALS", "SIGNIFICANT", "bounded", "tuning_history"]

#: Measured trials a history keeps (the best ones).
MAX_TRIALS: Final = 64
#: Failed configurations a history keeps (the first ones found).
MAX_FAILURES: Final = 16
#: Significant digits of the relative values.
SIGNIFICANT: Final = 4
#: Bytes one entry may take in ``autotune.json``, history included.
MAX_ENTRY_BYTES: Final = 8192
#: Bytes kept free for what the writer adds: ``commit_info`` (a 40-digit id, a branch, a flag) and
#: ``measured_at`` (a time).
_COMMIT_ROOM: Final = 360
#: Failures kept before trials are dropped to make an entry fit.
_FAILURES_KEPT: Final = 4


def _values(config: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(config[name] for name in names)


def _text(values: tuple[Any, ...]) -> str:
    return json.dumps([list(v) if isinstance(v, tuple) else v for v in values], default=repr)


def tuning_history(
    result: TuningResult, names: tuple[str, ...], default: Stats | None, chosen: Stats | None
) -> History | None:
    """The history of ``result`` over the parameters ``names``; None without a positive best.

    ``default`` and ``chosen`` are the finalist rounds of the declared default and the chosen
    configuration: their ratio is the history's ``default``.
    """
    measured = [(r.outcome.value, r.config) for r in result.top(MAX_TRIALS) if r.outcome.value is not None]
    values = [r.outcome.value for r in result.history if r.outcome.value is not None]
    if not measured or min(values) <= 0:
        return None
    best = measured[0][0]
    direction = -1.0 if result.maximize else 1.0
    trials = sorted(
        (
            (round_significant(value / best, SIGNIFICANT), _values(config, names))
            for value, config in measured
        ),
        key=lambda row: (direction * row[0], _text(row[1])),
    )
    failed = [record for record in result.history if not record.outcome.feasible][:MAX_FAILURES]
    failures = sorted(
        ((record.outcome.label, _values(record.config, names)) for record in failed),
        key=lambda row: (row[0], _text(row[1])),
    )
    ratio = None
    if default is not None and chosen is not None and default.median > 0 and chosen.median > 0:
        ratio = round_significant(default.median / chosen.median, SIGNIFICANT)
    return History(names, round_significant(best, 6), tuple(trials), tuple(failures), ratio)


def bounded(entry: StoreEntry) -> StoreEntry:
    """``entry`` with its history cut until the entry fits :data:`MAX_ENTRY_BYTES` (module docstring).

    Rows are dropped from the end, one at a time: failures while more than a few remain, then
    trials down to the best one, then the last failures; an entry that still does not fit keeps no
    history. The size of each step is computed, not encoded: the entry without rows is encoded once.
    """
    history = entry.history
    if not isinstance(history, History):
        return entry
    rows = history.to_json()
    # [n]: the bytes of the first n rows
    trial_bytes = list(accumulate(map(history_row_bytes, rows["trials"]), initial=0))
    failure_bytes = list(accumulate(map(history_row_bytes, rows["failures"]), initial=0))
    without_rows = replace(entry, history=replace(history, trials=(), failures=()))
    rest = len(entry_text(without_rows.to_json()).encode("utf-8")) - 2 * history_rows_bytes(0, 0)

    def size(trials: int, failures: int) -> int:
        rows_size = history_rows_bytes(trials, trial_bytes[trials])
        return rest + rows_size + history_rows_bytes(failures, failure_bytes[failures]) + _COMMIT_ROOM

    trials, failures = len(history.trials), len(history.failures)
    while size(trials, failures) > MAX_ENTRY_BYTES:
        if failures > _FAILURES_KEPT or (failures and trials <= 1):
            failures -= 1
        elif trials > 1:
            trials -= 1
        else:
            return replace(entry, history=None)
    if (trials, failures) == (len(history.trials), len(history.failures)):
        return entry
    kept = replace(history, trials=history.trials[:trials], failures=history.failures[:failures])
    return replace(entry, history=kept)
