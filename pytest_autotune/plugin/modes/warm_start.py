"""Warm start of ``pytest --autotune``: what other devices and parametrizations measured, as sources.

When a test is tuned on a device where it has no up-to-date entry, :func:`warm_start` gathers
transfer sources (:class:`~pytest_autotune.strategies.sources.TransferSource`) from the entries'
histories (:class:`~pytest_autotune.entry.History`, kept by every tuning run):

* the same test on the other devices of ``autotune.json`` (kind ``device``), and on every device
  of the read-only files named by ``--autotune-transfer-from`` (histories shipped or shared
  without being this project's store);
* the same test function under other parametrizations on this device (``test_x[...]``, kind
  ``sibling``), those tuned earlier in this session included (:func:`remember`: in this process;
  with xdist, each worker knows the tests it tuned itself).

An entry without a history (written before histories existed) still tells its tuned
configuration: it becomes a one-trial source. Configurations are carried into the test's space by
parameter name and value (:mod:`pytest_autotune.tuning.warm_start`). Nothing here stops tuning: a
damaged entry or file, a history of a newer version (left untouched in its file) and a source of
which nothing fits the space are skipped with an :class:`AutotuneTransferWarning` naming them,
once per session. ``--autotune-transfer=off`` turns all of it off.

A warm-started run may stop early (:func:`warm_abort`): once the sources' design and
:data:`MIN_AFTER_DESIGN` more trials ran, it stops when the last :data:`STALL_WINDOW` trials improved
the best by less than :data:`STALL_GAIN`. Measured by replaying the example kernels' recorded
landscapes (``benchmarks/data/pocl-*``; each machine a target, the other machines' shipped histories
its sources; 2 seeds, 32 runs): this rule stopped after 37 evaluations on average and reached 0.976 of
the optimum, plain ``bo`` 0.982 after 100; 3 runs ended more than 0.02 below plain ``bo``. Stopping
after 20 more trials and a window of 15 took 27 evaluations and reached 0.967, with 5 such runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import pytest

from pytest_autotune.entry import DamagedEntryError, History, StoreEntry, UnreadHistory
from pytest_autotune.store.document import StoreError
from pytest_autotune.store.reading import Store
from pytest_autotune.strategies.sources import SourceTrial, TransferSource
from pytest_autotune.tuning.abort import (
    DEFAULT_ABORT,
    AbortCondition,
    Evaluations,
    Speedup,
    TuningState,
    as_abort,
)
from pytest_autotune.tuning.warm_start import overlap, source_design
from pytest_autotune.warning_types import AutotuneTransferWarning, warn

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from pytest_autotune.space.base import Space

__all__ = [
    "MIN_AFTER_DESIGN",
    "STALL_GAIN",
    "STALL_WINDOW",
    "WarmStart",
    "budget_spent",
    "history_source",
    "remember",
    "warm_abort",
    "warm_start",
]

#: Trials a warm-started run makes after the sources' design before it may stop early.
MIN_AFTER_DESIGN: Final = 30
#: Trials over which a warm-started run must gain :data:`STALL_GAIN` to go on.
STALL_WINDOW: Final = 20
#: The relative gain over :data:`STALL_WINDOW` trials below which a warm-started run stops.
STALL_GAIN: Final = 0.05

_WARNED: Final = pytest.StashKey[set[str]]()
_EXTRA_STORES: Final = pytest.StashKey[list[Store]]()
_TUNED: Final = pytest.StashKey[dict[tuple[str, str], StoreEntry]]()


@dataclass(frozen=True)
class WarmStart:
    """The sources of one test's warm start and the size of the design drawn from them."""

    sources: tuple[TransferSource, ...]
    design: int

    def describe(self, stopped_early: bool = False) -> str:
        """``warm start: 2 devices, 1 sibling, 150 trials`` (what was used; and when it stopped early)."""
        parts = []
        for kind, word in (("device", "device"), ("sibling", "sibling"), ("user", "source")):
            n = sum(source.kind == kind for source in self.sources)
            if n:
                parts.append(f"{n} {word}{'s' if n != 1 else ''}")
        trials = sum(len(source.trials) for source in self.sources)
        text = f"warm start: {', '.join(parts)}, {trials} trial{'s' if trials != 1 else ''}"
        if stopped_early:
            text += f"; stopped early: no gain of {STALL_GAIN:.0%} in {STALL_WINDOW} trials"
        return text


def history_source(
    name: str, kind: str, entry: StoreEntry, *, maximize: bool = False, meta: dict[str, Any] | None = None
) -> TransferSource:
    """The source an entry's history gives (its tuned configuration alone when it has none).

    Values are relative to the source's best, in minimisation form (negated when ``maximize``).
    """
    sign = -1.0 if maximize else 1.0
    history = entry.history
    if isinstance(history, History):
        trials = [SourceTrial(history.config(values), "ok", sign * value) for value, values in history.trials]
        trials += [SourceTrial(history.config(values), label, None) for label, values in history.failures]
    else:
        trials = [SourceTrial(dict(entry.config), "ok", sign)]
    return TransferSource(name, trials, kind, dict(meta or {}))


def _function_of(nodeid: str) -> str:
    """The node id without its parametrization: ``t.py::test_x[4-8]`` -> ``t.py::test_x``."""
    return nodeid[: nodeid.index("[")] if nodeid.endswith("]") and "[" in nodeid else nodeid


def _warn_once(stash: pytest.Stash, key: str, message: str) -> None:
    warned = stash.setdefault(_WARNED, set())
    if key not in warned:
        warned.add(key)
        warn(AutotuneTransferWarning(message), stacklevel=3)


def _extra_stores(stash: pytest.Stash, store: Store, files: Sequence[Path]) -> list[Store]:
    """The ``--autotune-transfer-from`` files, loaded once per session (a bad one is warned about)."""
    if _EXTRA_STORES not in stash:
        stores = []
        for path in files:
            if path == store.path:
                continue
            if not path.exists():
                _warn_once(stash, str(path), f"--autotune-transfer-from: {path} does not exist; not used")
                continue
            try:
                stores.append(Store.load(path, advice=False))
            except StoreError as exc:
                _warn_once(stash, str(path), f"--autotune-transfer-from: not used: {exc}")
        stash[_EXTRA_STORES] = stores
    return stash[_EXTRA_STORES]


def remember(stash: pytest.Stash, device: str, nodeid: str, entry: StoreEntry) -> None:
    """Note an entry tuned in this process: a sibling tuned later in the session starts from it."""
    stash.setdefault(_TUNED, {})[device, nodeid] = entry


@dataclass(frozen=True)
class _Candidate:
    """An entry that may serve as a source: read from ``owner``, or ``tuned`` in this session."""

    name: str
    kind: str
    owner: Store
    device: str
    nodeid: str
    tuned: StoreEntry | None = None

    @property
    def where(self) -> str:
        return f"{self.owner.path}: entry {self.nodeid!r} of device {self.device!r}"

    def entry(self) -> StoreEntry | None:
        """The entry (raises :class:`DamagedEntryError`)."""
        return self.tuned if self.tuned is not None else self.owner.entry(self.device, self.nodeid)


def _candidates(
    stash: pytest.Stash, store: Store, extras: list[Store], nodeid: str, device: str
) -> list[_Candidate]:
    """Every entry that may serve as a source (module docstring)."""
    found = [
        _Candidate(f"device {other!r}", "device", store, other, nodeid)
        for other in store.devices()
        if other != device and nodeid in store.tests(other)
    ]
    for extra in extras:
        found += [
            _Candidate(f"device {other!r} of {extra.path}", "device", extra, other, nodeid)
            for other in extra.devices()
            if nodeid in extra.tests(other)
        ]
    function = _function_of(nodeid)
    tuned = stash.get(_TUNED, {})
    siblings = {other for d, other in tuned if d == device} | set(store.tests(device))
    found += [
        _Candidate(f"sibling {other!r}", "sibling", store, device, other, tuned.get((device, other)))
        for other in sorted(siblings)
        if other != nodeid and _function_of(other) == function
    ]
    return found


def warm_start(
    stash: pytest.Stash,
    store: Store,
    files: Sequence[Path],
    *,
    nodeid: str,
    device: str,
    space: Space,
    maximize: bool,
) -> WarmStart | None:
    """The warm start of ``nodeid`` on ``device`` from ``store``, the read-only ``files`` and the
    siblings tuned earlier in this process (:func:`remember`).

    None when no source fits (module docstring); ``stash`` (the session's) keeps the files loaded,
    the entries tuned and the warnings given.
    """
    sources = []
    for candidate in _candidates(stash, store, _extra_stores(stash, store, files), nodeid, device):
        name, kind, where = candidate.name, candidate.kind, candidate.where
        try:
            entry = candidate.entry()
        except DamagedEntryError as exc:
            _warn_once(stash, where, f"warm start: skipped {name}: {exc}")
            continue
        if entry is None:
            continue
        if isinstance(entry.history, UnreadHistory):
            left = " (left as it is in the file)" if entry.history.newer else ""
            _warn_once(stash, where, f"warm start: ignored the history of {where}{left}: {entry.history.why}")
        source = history_source(
            name,
            kind,
            entry,
            maximize=maximize,
            meta={"device": candidate.device, "nodeid": candidate.nodeid},
        )
        if overlap(space, source) == 0:
            _warn_once(
                stash,
                f"{where} -> {nodeid}",
                f"warm start of {nodeid}: skipped {name}: none of its configurations fits this test's space",
            )
            continue
        sources.append(source)
    if not sources:
        return None
    return WarmStart(tuple(sources), len(source_design(space, sources)))


def _limit(budget: Any) -> AbortCondition:
    return DEFAULT_ABORT if budget is None else as_abort(budget)


def warm_abort(budget: Any, design: int) -> AbortCondition:
    """The budget, or the early stop of a warm-started run (module docstring), whichever comes first."""
    stall = Evaluations(design + MIN_AFTER_DESIGN) & Speedup(1.0 + STALL_GAIN, evaluations=STALL_WINDOW)
    return _limit(budget) | stall


def budget_spent(budget: Any, state: TuningState) -> bool:
    """Whether the budget itself (not the early stop) ends a run in ``state``."""
    return _limit(budget).should_stop(state)
