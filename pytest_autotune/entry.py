"""One entry of ``autotune.json`` as typed, validated values: the only model of an entry.

An entry (one test on one device) holds the tuned ``config``, the ``space_hash`` of the declaration
it was tuned for, the ``baseline`` the plain runs are judged against, the ``tuning`` summary and the
``commit_info`` it was measured at. :meth:`StoreEntry.from_json` checks every field (types, finite
numbers, positive times, known keys) and raises :class:`DamagedEntryError` naming the entry and the
field, so a hand-edited or merged-wrong value is a clear error and not an ``AttributeError`` or a
silently disabled check deep inside a run. :meth:`StoreEntry.to_json` gives the JSON form back,
key for key, so an entry read and written again yields the same bytes.

Only :mod:`pytest_autotune.store` converts between the file's JSON and this model (and
:mod:`pytest_autotune.plugin.results` for the entry a result carries to the writing process); everything
else reads attributes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pytest_autotune.timing.measure import Stats

__all__ = ["Baseline", "DamagedEntryError", "StoreEntry", "TuningRecord"]

#: The unit of time objectives: their values are durations and must be positive.
TIME_UNIT: Final = "s"
_ENTRY_KEYS: Final = frozenset({"config", "space_hash", "baseline", "tuning", "commit_info"})
_BASELINE_KEYS: Final = frozenset(
    {"median", "iqr", "q1", "q3", "min", "rounds", "unit", "noise", "processes"}
)
_TUNING_KEYS: Final = frozenset({"trials", "counts", "strategy", "seed", "duration"})
_COMMIT_KEYS: Final = frozenset({"id", "branch", "dirty"})


class DamagedEntryError(ValueError):
    """An entry of ``autotune.json`` has a value of the wrong type or range.

    ``where`` names the file, test id and device (``"autotune.json: entry 't.py::k' of device
    'host:x'"``), ``field`` the dotted field path (``"baseline.median"``), ``why`` what is wrong.
    """

    def __init__(self, where: str, field: str, why: str) -> None:
        super().__init__(f"{where}: field {field!r} {why}")
        self.where = where
        self.field = field
        self.why = why


class _Reader:
    """Checks the fields of one JSON object of an entry, naming ``where`` and the field path."""

    def __init__(self, data: Any, where: str, path: str) -> None:
        self.where, self.path = where, path
        if not isinstance(data, dict):
            raise self.error("", f"must be an object, got {_show(data)}")
        self.data: dict[str, Any] = data

    def name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, why: str) -> DamagedEntryError:
        return DamagedEntryError(self.where, self.name(key) if key else self.path or "entry", why)

    def only(self, known: frozenset[str], required: frozenset[str] = frozenset()) -> None:
        unknown = sorted(set(self.data) - known)
        if unknown:
            raise self.error(unknown[0], f"is not a known key (known: {', '.join(sorted(known))})")
        missing = sorted(required - set(self.data))
        if missing:
            raise self.error(missing[0], "is missing")

    def number(self, key: str, *, positive: bool = False, non_negative: bool = False) -> float:
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"must be a number, got {_show(value)}")
        if not math.isfinite(value):
            raise self.error(key, f"must be a finite number, got {_show(value)}")
        if positive and value <= 0:
            raise self.error(key, f"must be a positive time in seconds, got {_show(value)}")
        if non_negative and value < 0:
            raise self.error(key, f"must not be negative, got {_show(value)}")
        return value

    def integer(self, key: str) -> int:
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.error(key, f"must be a non-negative integer, got {_show(value)}")
        return value

    def string(self, key: str, *, empty: bool = False) -> str:
        value = self.data[key]
        if not isinstance(value, str) or (not empty and not value):
            expected = "a string" if empty else "a non-empty string"
            raise self.error(key, f"must be {expected}, got {_show(value)}")
        return value


def _show(value: Any) -> str:
    kind = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    text = repr(value) if not isinstance(value, dict | list) and value is not None else ""
    label = kind.get(type(value), "")
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{label} {text}".strip() if label else text


def _config_value(reader: _Reader, name: str, value: Any) -> Any:
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, str | int | float | bool | None):
            raise reader.error(name, f"must be a scalar or a list of scalars, got {_show(value)}")
        if isinstance(item, float) and not math.isfinite(item):
            raise reader.error(name, f"must hold finite numbers, got {_show(value)}")
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Baseline:
    """The measurement plain runs are judged against (in ``unit``; None: an older entry lacked it).

    ``noise`` is the relative spread between the fresh processes that measured it (``0.12`` = their
    medians spread over 12% of the baseline; :func:`pytest_autotune.timing.regression.between_process_noise`)
    and ``processes`` their number; both None for a baseline measured in one process (older entries,
    ``--autotune-isolate=none``), which the rule judges with its plain tolerance.
    """

    median: float
    iqr: float | None = None
    q1: float | None = None
    q3: float | None = None
    min: float | None = None
    rounds: int | None = None
    unit: str | None = None
    noise: float | None = None
    processes: int | None = None

    @classmethod
    def from_json(cls, data: Any, *, where: str, path: str = "baseline") -> Baseline:
        """Validate a ``baseline`` object: finite numbers, positive times (unit ``"s"``, the default)."""
        reader = _Reader(data, where, path)
        reader.only(_BASELINE_KEYS, frozenset({"median"}))
        unit = reader.string("unit") if "unit" in data else None
        times = unit in (None, TIME_UNIT)
        values: dict[str, Any] = {"unit": unit}
        values["median"] = reader.number("median", positive=times)
        for key in ("q1", "q3", "min"):
            if key in data:
                values[key] = reader.number(key, non_negative=times)
        if "iqr" in data:
            values["iqr"] = reader.number("iqr", non_negative=True)
        if "rounds" in data:
            values["rounds"] = reader.integer("rounds")
        if "noise" in data:
            values["noise"] = reader.number("noise", non_negative=True)
        if "processes" in data:
            values["processes"] = reader.integer("processes")
            if values["processes"] < 1:
                raise reader.error("processes", f"must be a positive integer, got {_show(data['processes'])}")
        return cls(**values)

    @classmethod
    def measured(
        cls, stats: Stats, unit: str, *, noise: float | None = None, processes: int | None = None
    ) -> Baseline:
        """The baseline of a measurement (rounded to 6 significant digits, the noise to 4), checked
        like a stored one; ``noise`` and ``processes`` as the class says."""
        data = stats.baseline(unit)
        if noise is not None:
            data["noise"] = float(f"{noise:.4g}")
        if processes is not None:
            data["processes"] = processes
        return cls.from_json(data, where="the measured baseline")

    def to_json(self) -> dict[str, Any]:
        """The JSON object (fields that are None are left out, as they were absent when read)."""
        items = {
            "median": self.median,
            "iqr": self.iqr,
            "q1": self.q1,
            "q3": self.q3,
            "min": self.min,
            "rounds": self.rounds,
            "unit": self.unit,
            "noise": self.noise,
            "processes": self.processes,
        }
        return {key: value for key, value in items.items() if value is not None}


@dataclass(frozen=True)
class TuningRecord:
    """How the entry was tuned: trials, trials per outcome label, strategy, seed, seconds."""

    trials: int
    counts: Mapping[str, int]
    strategy: str
    seed: int | None
    duration: float

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> TuningRecord:
        """Validate a ``tuning`` object (every key required; ``seed`` may be null)."""
        reader = _Reader(data, where, "tuning")
        reader.only(_TUNING_KEYS, _TUNING_KEYS)
        counts = _Reader(data["counts"], where, "tuning.counts")
        for label in counts.data:
            counts.integer(label)
        seed = data["seed"]
        if seed is not None:
            seed = reader.integer("seed")
        return cls(
            trials=reader.integer("trials"),
            counts=dict(counts.data),
            strategy=reader.string("strategy"),
            seed=seed,
            duration=reader.number("duration", non_negative=True),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON object."""
        return {
            "trials": self.trials,
            "counts": dict(self.counts),
            "strategy": self.strategy,
            "seed": self.seed,
            "duration": self.duration,
        }


@dataclass(frozen=True)
class StoreEntry:
    """One test's entry on one device (module docstring). ``config`` holds permutations as tuples."""

    config: Mapping[str, Any]
    space_hash: str
    baseline: Baseline | None = None
    tuning: TuningRecord | None = None
    commit_info: Mapping[str, Any] | None = None

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> StoreEntry:
        """Validate an entry object; raises :class:`DamagedEntryError` naming ``where`` and the field."""
        reader = _Reader(data, where, "")
        reader.only(_ENTRY_KEYS, frozenset({"config", "space_hash"}))
        config = _Reader(data["config"], where, "config")
        return cls(
            config={name: _config_value(config, name, value) for name, value in config.data.items()},
            space_hash=reader.string("space_hash"),
            baseline=Baseline.from_json(data["baseline"], where=where) if "baseline" in data else None,
            tuning=TuningRecord.from_json(data["tuning"], where=where) if "tuning" in data else None,
            commit_info=cls._commit_info(data["commit_info"], where) if "commit_info" in data else None,
        )

    @classmethod
    def _commit_info(cls, data: Any, where: str) -> dict[str, Any]:
        reader = _Reader(data, where, "commit_info")
        reader.only(_COMMIT_KEYS)
        for key in ("id", "branch"):
            if key in data:
                reader.string(key, empty=True)
        if "dirty" in data and not isinstance(data["dirty"], bool):
            raise reader.error("dirty", f"must be a boolean, got {_show(data['dirty'])}")
        return dict(data)

    def to_json(self) -> dict[str, Any]:
        """The JSON object (permutations as lists; absent parts left out)."""
        data: dict[str, Any] = {
            "config": {k: list(v) if isinstance(v, tuple) else v for k, v in self.config.items()},
            "space_hash": self.space_hash,
        }
        if self.baseline is not None:
            data["baseline"] = self.baseline.to_json()
        if self.tuning is not None:
            data["tuning"] = self.tuning.to_json()
        if self.commit_info is not None:
            data["commit_info"] = dict(self.commit_info)
        return data
