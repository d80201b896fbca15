"""The tuning history an entry keeps: validated, round-tripped, canonical, bounded."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pytest_autotune.entry import HISTORY_VERSION, History, StoreEntry, UnreadHistory
from pytest_autotune.outcome import FAILURE_LABELS, Outcome
from pytest_autotune.space import Bool, Categorical, Pow2, Set, build_space
from pytest_autotune.store.changes import apply_changes
from pytest_autotune.store.document import dumps, entry_text
from pytest_autotune.store.history_record import (
    MAX_ENTRY_BYTES,
    MAX_FAILURES,
    MAX_TRIALS,
    bounded,
    tuning_history,
)
from pytest_autotune.timing.measure import Stats
from pytest_autotune.tuning.tuner import Tuner

HISTORY: dict[str, Any] = {
    "version": 1,
    "params": ["A", "ORDER", "FAST"],
    "best": 1.5e-4,
    "default": 3.25,
    "trials": [[1.0, 3, ["i", "j"], True], [1.013, 2, ["j", "i"], False]],
    "failures": [["compile", 8, ["i", "j"], True]],
}
ENTRY: dict[str, Any] = {
    "config": {"A": 3, "ORDER": ["i", "j"], "FAST": True},
    "space_hash": "abc",
    "baseline": {"median": 1.6e-4, "unit": "s"},
    "history": HISTORY,
}


def _document(*entries: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    devices: dict[str, Any] = {}
    for device, nodeid, entry in entries:
        devices.setdefault(device, {"info": {}, "tests": {}})["tests"][nodeid] = entry
    return {"schema_version": 1, "devices": devices}


def test_a_history_round_trips() -> None:
    entry = StoreEntry.from_json(copy.deepcopy(ENTRY), where="W")
    history = entry.history
    assert isinstance(history, History)
    assert history.params == ("A", "ORDER", "FAST")
    assert history.trials[1] == (1.013, (2, ("j", "i"), False))
    assert history.failures == (("compile", (8, ("i", "j"), True)),)
    assert history.config(history.trials[0][1]) == {"A": 3, "ORDER": ("i", "j"), "FAST": True}
    assert entry.to_json() == ENTRY
    text = dumps(_document(("d", "t.py::k", entry.to_json())))
    assert dumps(json.loads(text)) == text


def test_one_row_per_line_and_otherwise_the_standard_layout() -> None:
    document = _document(
        ("d", "t.py::k", ENTRY), ("d", "t.py::old", {"config": {"A": [1, 2]}, "space_hash": "h"})
    )
    lines = dumps(document).splitlines()
    assert '              [1.0, 3, ["i", "j"], true],' in lines
    assert '              [1.013, 2, ["j", "i"], false]' in lines
    assert '            "params": ["A", "ORDER", "FAST"],' in lines
    assert '              ["compile", 8, ["i", "j"], true]' in lines
    without = copy.deepcopy(document)
    del without["devices"]["d"]["tests"]["t.py::k"]["history"]
    without["devices"]["d"]["info"] = {"ü": [1.5, None, {"x": []}], "nan": math.nan, "e": {}}
    assert dumps(without) == json.dumps(without, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_an_old_file_without_histories_is_written_back_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    old = {"config": {"A": 1}, "space_hash": "h", "baseline": {"median": 0.001}}
    text = json.dumps(_document(("d", "t.py::k", old)), indent=2, sort_keys=True) + "\n"
    path.write_text(text)
    assert StoreEntry.from_json(old, where="W").to_json() == old
    assert apply_changes(path, updates={("d", "t.py::k"): StoreEntry.from_json(old, where="W")}) is False
    assert path.read_text() == text


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"trials": [[0.0, 1, ["i"], True]]}, "'trials' must hold positive finite numbers, got 0.0"),
        ({"trials": [[1.0, 1]]}, "'trials': a row must list 4 values"),
        ({"failures": [["slow", 1, ["i", "j"], True]]}, "'failures' has an unknown label a string 'slow'"),
        ({"params": ["A", "A", "B"]}, "'params' names a parameter twice"),
        ({"best": "fast"}, "'best' must hold positive finite numbers"),
        ({"version": "1"}, "'version' must be 1"),
        ({"extra": 1}, "unknown key 'extra'"),
        (
            {"trials": [[1.0, {"x": 1}, ["i"], True]]},
            "'trials': a value must be a scalar or a list of scalars",
        ),
    ],
)
def test_a_damaged_history_leaves_the_entry_usable_and_is_kept(change: dict[str, Any], why: str) -> None:
    data = copy.deepcopy(ENTRY)
    data["history"].update(change)
    entry = StoreEntry.from_json(copy.deepcopy(data), where="W")
    assert entry.config["A"] == 3
    assert isinstance(entry.history, UnreadHistory)
    assert not entry.history.newer
    assert why in entry.history.why
    assert entry.to_json() == data


def test_a_history_of_a_newer_version_is_kept_as_it_is() -> None:
    data = copy.deepcopy(ENTRY)
    data["history"] = {"version": HISTORY_VERSION + 1, "anything": [1, {"new": "layout"}]}
    entry = StoreEntry.from_json(copy.deepcopy(data), where="W")
    assert isinstance(entry.history, UnreadHistory)
    assert entry.history.newer
    assert "version 2 is newer" in entry.history.why
    assert entry.to_json() == data


def _twelve_parameter_space(*, wide: bool = False) -> Any:
    params: dict[str, Any] = {f"P{i}": Pow2(1, 256) for i in range(8)}
    params.update({f"B{i}": Bool() for i in range(3)})
    params["V"] = Categorical(*(f"variant-{'x' * 40}-{i}" for i in range(4))) if wide else Set(1, 2, 4, 8)
    return build_space(params)


def _tuned(space: Any, evaluations: int) -> Any:
    def objective(config: dict[str, Any]) -> Outcome:
        if config["B0"] and config["B1"]:
            return Outcome.failed("compile", "no")
        return Outcome.ok(1e-3 * (1 + sum(abs(np.log2(config[f"P{i}"]) - 4) for i in range(8))))

    return Tuner(space, "random", abort=evaluations, seed=3).run(objective)


def _entry(space: Any, result: Any, history: History) -> StoreEntry:
    baseline = {
        "median": 1e-3,
        "iqr": 1.2e-5,
        "q1": 9.9e-4,
        "q3": 1.01e-3,
        "min": 9.8e-4,
        "rounds": 10,
        "unit": "s",
    }
    tuning = {"trials": 150, "counts": dict(result.counts), "strategy": "random", "seed": 3, "duration": 12.5}
    commit = {"id": "f" * 40, "branch": "feature/warm-start-histories", "dirty": True}
    data = {
        "config": result.best_config,
        "space_hash": space.space_hash,
        "baseline": baseline,
        "tuning": tuning,
    }
    entry = StoreEntry.from_json(json.loads(json.dumps(data)), where="W")
    return replace(entry, history=history, commit_info=commit)


def _size(entry: StoreEntry) -> int:
    return len(entry_text(entry.to_json()).encode())


def test_sixty_four_trials_of_a_twelve_parameter_space_fit_in_eight_kilobytes() -> None:
    space = _twelve_parameter_space()
    result = _tuned(space, 150)
    assert result.counts["compile"] > 16  # more failures than a history keeps
    history = tuning_history(result, space.names, Stats.of([3e-3]), Stats.of([1e-3]))
    assert history is not None
    assert len(history.trials) == MAX_TRIALS
    assert len(history.failures) == MAX_FAILURES
    assert history.default == 3.0
    assert history.trials[0][0] == 1.0
    assert [v for v, _ in history.trials] == sorted(v for v, _ in history.trials)
    assert all(v == float(f"{v:.4g}") for v, _ in history.trials)
    assert [label for label, _ in history.failures] == ["compile"] * MAX_FAILURES
    entry = _entry(space, result, history)
    assert bounded(replace(entry, commit_info=None)).history == history  # it fits as it is
    assert _size(entry) <= MAX_ENTRY_BYTES
    assert StoreEntry.from_json(entry.to_json(), where="W") == entry


def test_a_history_too_large_drops_failures_first_then_the_worst_trials() -> None:
    space = _twelve_parameter_space(wide=True)
    result = _tuned(space, 150)
    history = tuning_history(result, space.names, None, None)
    assert history is not None
    entry = _entry(space, result, history)
    assert _size(entry) > MAX_ENTRY_BYTES
    cut = bounded(replace(entry, commit_info=None))
    assert isinstance(cut.history, History)
    assert _size(replace(cut, commit_info=entry.commit_info)) <= MAX_ENTRY_BYTES
    assert len(cut.history.failures) == 4
    assert 32 < len(cut.history.trials) < MAX_TRIALS
    assert cut.history.trials == history.trials[: len(cut.history.trials)]  # the best ones stay


def test_objectives_that_are_not_positive_keep_no_history() -> None:
    space = build_space({"A": Set(1, 2, 3)})
    result = Tuner(space, "exhaustive", seed=1).run(lambda c: float(c["A"] - 2))
    assert tuning_history(result, space.names, None, None) is None


# -- bounding: the same entry as the algorithm it replaced, in linear work ---------------------------

#: The bounding of an entry as it was before it moved to the store (issue 45), kept as the reference:
#: the entry re-encoded whole for every row it drops.
_REFERENCE_COMMIT_ROOM = 360
_REFERENCE_FAILURES_KEPT = 4


def _reference_size(entry: StoreEntry) -> int:
    return len(entry_text(entry.to_json()).encode("utf-8")) + _REFERENCE_COMMIT_ROOM


def _reference_bounded(entry: StoreEntry) -> StoreEntry:
    history = entry.history
    if not isinstance(history, History):
        return entry
    while _reference_size(entry) > MAX_ENTRY_BYTES:
        many_failures = len(history.failures) > _REFERENCE_FAILURES_KEPT
        if many_failures or (history.failures and len(history.trials) <= 1):
            history = replace(history, failures=history.failures[:-1])
        elif len(history.trials) > 1:
            history = replace(history, trials=history.trials[:-1])
        else:
            return replace(entry, history=None)
        entry = replace(entry, history=history)
    return entry


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)  # non-ASCII too: bytes count
_VALUES = st.tuples(
    st.integers(-(10**12), 10**12), _TEXT, st.booleans(), st.lists(st.sampled_from("ijk"), max_size=3)
).map(lambda v: (v[0], v[1], v[2], tuple(v[3])))


@st.composite
def _entries(draw: st.DrawFn) -> StoreEntry:
    """An entry whose history may fit, need cutting, or not fit at all (a configuration near 8 KB)."""
    most = draw(st.sampled_from([3, 40, 160, 300]))
    trials = draw(st.lists(st.tuples(st.floats(1.0, 1e6), _VALUES), min_size=most // 2, max_size=most))
    failures = draw(st.lists(st.tuples(st.sampled_from(FAILURE_LABELS), _VALUES), max_size=30))
    padding = draw(st.sampled_from([0, 10, 2000, 5000, 7000, 7600, 8200]))
    history = History(("A", "NAME", "FLAG", "ORDER"), 1.5e-4, tuple(trials), tuple(failures), draw(st.none()))
    commit = draw(st.none() | st.just({"id": "f" * 40, "branch": "main", "dirty": False}))
    config = {"A": 1, "NAME": "x" * padding, "FLAG": True, "ORDER": ("i", "j")}
    return StoreEntry(config, "hash", history=history, commit_info=commit)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(_entries())
def test_bounding_keeps_what_the_reference_keeps(entry: StoreEntry) -> None:
    kept = bounded(entry)
    reference = _reference_bounded(entry)
    event("fits" if kept is entry else "no history" if kept.history is None else "cut")
    assert kept == reference
    assert entry_text(kept.to_json()) == entry_text(reference.to_json())  # byte for byte


def test_bounding_cuts_every_way_the_reference_does() -> None:
    """The three ways out, each checked against the reference: fits, cut, no history at all."""
    rows = tuple((1.0 + i / 100, (i, f"name-{i:04d}-" + "é" * 20, True, ("i", "j"))) for i in range(200))
    failures = tuple(("compile", (i, "f" * 30, False, ("j",))) for i in range(16))
    history = History(("A", "NAME", "FLAG", "ORDER"), 1e-3, rows, failures)
    for padding, kind in ((0, "cut"), (7000, "cut"), (9000, "none")):
        entry = StoreEntry({"NAME": "x" * padding}, "h", history=history)
        kept = bounded(entry)
        assert kept == _reference_bounded(entry)
        assert (kept.history is None) == (kind == "none")
    small = StoreEntry({"A": 1}, "h", history=replace(history, trials=rows[:3], failures=()))
    assert bounded(small) is small


def test_bounding_encodes_each_row_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linear work: ``json.dumps`` runs about once per row, where re-encoding the whole entry for
    every dropped row ran it once per row for every row dropped (quadratic)."""
    calls = 0
    real = json.dumps

    def counting(*args: Any, **kwargs: Any) -> str:
        nonlocal calls
        calls += 1
        return real(*args, **kwargs)

    def dumps_for(count: int) -> int:
        nonlocal calls
        rows = tuple((1.0 + i, (i, f"v{i}", True, ("i", "j"))) for i in range(count))
        entry = StoreEntry({"A": 1}, "h", history=History(("A", "B", "C", "D"), 1e-3, rows, ()))
        calls = 0
        with monkeypatch.context() as patch:
            patch.setattr(json, "dumps", counting)
            kept = bounded(entry)
        assert isinstance(kept.history, History)
        assert len(kept.history.trials) < count  # most rows were dropped
        return calls

    small, large = dumps_for(1000), dumps_for(4000)
    assert small <= 1000 + 50
    assert large - small <= 3000 + 10  # grows by one call per row
