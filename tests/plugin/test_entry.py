"""The typed entry model: every field checked on read, the JSON given back key for key."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.entry import Baseline, DamagedEntryError, StoreEntry
from pytest_autotune.store import Store, apply_changes
from pytest_autotune.timing.measure import Stats

FULL: dict[str, Any] = {
    "config": {"A": 3, "ORDER": ["i", "j"], "FAST": True, "KIND": "x", "SCALE": 0.5, "NONE": None},
    "space_hash": "abc",
    "baseline": {"median": 1e-4, "iqr": 0.0, "q1": 1e-4, "q3": 1e-4, "min": 9e-5, "rounds": 10, "unit": "s"},
    "tuning": {"trials": 5, "counts": {"ok": 4, "build": 1}, "strategy": "bo", "seed": None, "duration": 0.5},
    "commit_info": {"id": "deadbeef", "branch": "main", "dirty": False},
    "metrics": {"GFLOP/s": 120.5, "error": -1e-7},
}


def test_round_trip_gives_the_same_json() -> None:
    entry = StoreEntry.from_json(copy.deepcopy(FULL), where="W")
    assert entry.config["ORDER"] == ("i", "j")
    assert entry.to_json() == FULL
    minimal = {"config": {}, "space_hash": "h", "baseline": {"median": 2}}
    assert StoreEntry.from_json(minimal, where="W").to_json() == minimal


def _with(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(FULL)
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node[part]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("baseline.median", math.nan, "field 'baseline.median' must be a finite number, got nan"),
        ("baseline.median", "0.0005", "field 'baseline.median' must be a number, got a string '0.0005'"),
        ("baseline.median", -1.0, "field 'baseline.median' must be a positive time in seconds, got -1.0"),
        ("baseline.median", True, "field 'baseline.median' must be a number, got a boolean True"),
        ("baseline.median", KeyError, "field 'baseline.median' is missing"),
        ("baseline.iqr", -1.0, "field 'baseline.iqr' must not be negative"),
        ("baseline.rounds", 1.5, "field 'baseline.rounds' must be a non-negative integer"),
        ("baseline", "fast", "field 'baseline' must be an object, got a string 'fast'"),
        ("config", [1], "field 'config' must be an object, got a list"),
        ("config.A", {"x": 1}, "field 'config.A' must be a scalar or a list of scalars, got an object"),
        ("config.A", math.inf, "field 'config.A' must hold finite numbers"),
        ("space_hash", "", "field 'space_hash' must be a non-empty string"),
        ("space_hash", KeyError, "field 'space_hash' is missing"),
        ("extra", 1, "field 'extra' is not a known key"),
        ("tuning.counts.ok", -1, "field 'tuning.counts.ok' must be a non-negative integer"),
        ("tuning.seed", "1", "field 'tuning.seed' must be a non-negative integer"),
        ("tuning.duration", KeyError, "field 'tuning.duration' is missing"),
        ("commit_info.dirty", "no", "field 'commit_info.dirty' must be a boolean"),
        ("metrics", [1.0], "field 'metrics' must be an object, got a list"),
        ("metrics.GFLOP/s", "fast", "field 'metrics.GFLOP/s' must be a number, got a string 'fast'"),
        ("metrics.GFLOP/s", math.nan, "field 'metrics.GFLOP/s' must be a finite number"),
    ],
)
def test_each_damaged_field_is_named(path: str, value: Any, message: str) -> None:
    with pytest.raises(DamagedEntryError) as info:
        StoreEntry.from_json(_with(path, value), where="autotune.json: entry 't' of device 'd'")
    assert str(info.value).startswith("autotune.json: entry 't' of device 'd': ")
    assert message in str(info.value)


def test_objectives_other_than_time_may_be_negative_but_must_be_finite() -> None:
    assert Baseline.from_json({"median": -3.0, "unit": "score"}, where="W").median == -3.0
    with pytest.raises(DamagedEntryError, match="finite"):
        Baseline.from_json({"median": math.inf, "unit": "score"}, where="W")


NOISY = {**FULL, "baseline": {**FULL["baseline"], "noise": 0.125, "processes": 5}}


def test_a_baseline_with_noise_round_trips_byte_for_byte(tmp_path: Path) -> None:
    entry = StoreEntry.from_json(copy.deepcopy(NOISY), where="W")
    assert entry.baseline is not None
    assert (entry.baseline.noise, entry.baseline.processes) == (0.125, 5)
    assert entry.to_json() == NOISY
    # through the store: read, written again beside a new entry, the same bytes
    path = tmp_path / "autotune.json"
    apply_changes(path, updates={("dev", "t.py::a"): entry})
    first = path.read_text()
    stored = Store.load(path).entry("dev", "t.py::a")
    assert stored == entry
    apply_changes(path, updates={("dev", "t.py::a"): stored, ("dev", "t.py::b"): stored})
    assert block(path.read_text(), "t.py::a") == block(first, "t.py::a")


def block(text: str, nodeid: str) -> str:
    """The lines of one entry in the store's text."""
    start = text.index(f'"{nodeid}"')
    return text[start : text.index("}\n", text.index('"space_hash"', start))]


def test_an_older_baseline_without_noise_reads_and_writes_as_it_was() -> None:
    entry = StoreEntry.from_json(copy.deepcopy(FULL), where="W")
    assert entry.baseline is not None
    assert (entry.baseline.noise, entry.baseline.processes) == (None, None)
    assert "noise" not in entry.to_json()["baseline"]
    assert json.dumps(entry.to_json()) == json.dumps(FULL)  # same keys, same order


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("noise", -0.1, "field 'baseline.noise' must not be negative, got -0.1"),
        ("noise", math.inf, "field 'baseline.noise' must be a finite number, got inf"),
        ("noise", "12%", "field 'baseline.noise' must be a number, got a string '12%'"),
        ("noise", None, "field 'baseline.noise' must be a number, got null"),
        ("processes", 0, "field 'baseline.processes' must be a positive integer, got 0"),
        ("processes", 2.5, "field 'baseline.processes' must be a non-negative integer, got 2.5"),
        ("processes", True, "field 'baseline.processes' must be a non-negative integer, got a boolean True"),
    ],
)
def test_a_damaged_noise_field_is_named(field: str, value: Any, message: str) -> None:
    data = copy.deepcopy(NOISY)
    data["baseline"][field] = value
    with pytest.raises(DamagedEntryError) as info:
        StoreEntry.from_json(data, where="autotune.json: entry 't' of device 'd'")
    assert str(info.value) == f"autotune.json: entry 't' of device 'd': {message}"


def test_a_measured_baseline_carries_its_noise_rounded() -> None:
    stats = Stats.of([1e-4, 1.1e-4, 1.2e-4])
    measured = Baseline.measured(stats, "s", noise=0.123456789, processes=5)
    assert (measured.noise, measured.processes, measured.median) == (0.1235, 5, 1.1e-4)
    assert Baseline.measured(stats, "s").noise is None
