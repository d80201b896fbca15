"""One entry of ``autotune.json`` as typed, validated values: the only model of an entry.

An entry (one test on one device) holds the tuned ``config``, the ``space_hash`` of the declaration
it was tuned for, the ``baseline`` the plain runs are judged against, the ``tuning`` summary, the
``commit_info`` and time (``measured_at``) it was measured at and, when the test records any, its
named ``metrics`` (``autotune.metric``: numbers by name, evaluated on the baseline's median). Fields
added later are optional, so older entries load and are written back unchanged.
:meth:`StoreEntry.from_json` checks every field (types, finite numbers, positive times, known keys)
and raises :class:`DamagedEntryError` naming the entry and field, so a hand-edited or merged-wrong
value is a clear error; :meth:`StoreEntry.to_json` gives the JSON back, key for key, byte for byte.

Only :mod:`pytest_autotune.store` converts between the file's JSON and this model (and
:mod:`pytest_autotune.plugin.report.results` for the entry a result carries to the writing
process); everything else reads attributes.
"""

from __future__ import annotations

import copy
import datetime
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from pytest_autotune.outcome import FAILURE_LABELS, Label

if TYPE_CHECKING:
    from pytest_autotune.timing.measure import Stats

__all__ = [
    "HISTORY_VERSION",
    "Baseline",
    "DamagedEntryError",
    "History",
    "StoreEntry",
    "TuningRecord",
    "UnreadHistory",
    "utc_moment",
]

#: The unit of time objectives: their values are durations and must be positive.
TIME_UNIT: Final = "s"
_ENTRY_KEYS: Final = frozenset(
    {"config", "space_hash", "baseline", "tuning", "commit_info", "metrics", "history", "measured_at"}
)
#: How ``measured_at`` is written: UTC to the second (such strings sort by time).
MOMENT_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"
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

    def moment(self, key: str) -> str:
        value = self.data[key]
        try:  # strptime is slow on a store of thousands of entries; this round trip is as strict
            ok = datetime.datetime.fromisoformat(value[:-1]).strftime(MOMENT_FORMAT) == value
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise self.error(key, f"must be a UTC time like '2026-01-31T12:00:00Z', got {_show(value)}")
        return str(value)


def utc_moment(now: datetime.datetime | None = None) -> str:
    """``now`` (default: the current time) as ``measured_at`` holds it: ``"2026-01-31T12:00:00Z"``."""
    return (now or datetime.datetime.now(datetime.UTC)).strftime(MOMENT_FORMAT)


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
        for key in ("q1", "q3", "min", "iqr", "noise"):  # a spread is never negative
            if key in data:
                values[key] = reader.number(key, non_negative=times or key in ("iqr", "noise"))
        if "rounds" in data:
            values["rounds"] = reader.integer("rounds")
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
        return {key: value for key, value in asdict(self).items() if value is not None}


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
        return asdict(self)


@dataclass(frozen=True)
class StoreEntry:
    """One test's entry on one device (module docstring). ``config`` holds permutations as tuples."""

    config: Mapping[str, Any]
    space_hash: str
    baseline: Baseline | None = None
    tuning: TuningRecord | None = None
    commit_info: Mapping[str, Any] | None = None
    metrics: Mapping[str, float] | None = None
    history: History | UnreadHistory | None = None
    #: When the writing run measured it (:func:`utc_moment`); None in entries older than the field.
    measured_at: str | None = None

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
            metrics=cls._metrics(data["metrics"], where) if "metrics" in data else None,
            history=History.read(data["history"]) if "history" in data else None,
            measured_at=reader.moment("measured_at") if "measured_at" in data else None,
        )

    @classmethod
    def _metrics(cls, data: Any, where: str) -> dict[str, float]:
        """``metrics``: an object of finite numbers by non-empty name."""
        reader = _Reader(data, where, "metrics")
        for name in reader.data:
            if not name.strip():
                raise reader.error(name, "is not a metric name (an empty name)")
            reader.number(name)
        return dict(reader.data)

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
        if self.metrics is not None:
            data["metrics"] = dict(self.metrics)
        if self.history is not None:
            data["history"] = self.history.to_json()
        if self.measured_at is not None:
            data["measured_at"] = self.measured_at
        return data


#: Version of the ``history`` record written and read here; a newer one is kept but not read.
HISTORY_VERSION: Final = 1
_HISTORY_KEYS: Final = frozenset({"version", "params", "best", "default", "trials", "failures"})


class _HistoryDamage(ValueError):
    """Why a ``history`` object cannot be read (kept as :attr:`UnreadHistory.why`)."""


@dataclass(frozen=True)
class History:
    """What tuning measured, compactly: the source of a warm start on another device or sibling.

    ``params`` names the values of each row; ``trials`` holds the best trials as (value relative to
    ``best``, values), best first; ``best`` is the best trial's value (the baseline's unit);
    ``failures`` holds failed configurations as (label, values); ``default`` is the declared
    default's value relative to the chosen configuration, measured side by side in the finalist
    rounds (the speedup over the default), None when it was not measured.
    """

    params: tuple[str, ...]
    best: float
    trials: tuple[tuple[float, tuple[Any, ...]], ...]
    failures: tuple[tuple[Label, tuple[Any, ...]], ...] = ()
    default: float | None = None

    @classmethod
    def read(cls, data: Any) -> History | UnreadHistory:
        """The history, or an :class:`UnreadHistory` (newer version or damaged) keeping ``data``."""
        version = data.get("version") if isinstance(data, dict) else None
        if isinstance(version, int) and not isinstance(version, bool) and version > HISTORY_VERSION:
            why = f"its version {version} is newer than this pytest-autotune reads ({HISTORY_VERSION})"
            return UnreadHistory(copy.deepcopy(data), why, newer=True)
        try:
            return cls._parse(data)
        except _HistoryDamage as exc:
            return UnreadHistory(copy.deepcopy(data), f"it is damaged: {exc}", newer=False)

    @classmethod
    def _parse(cls, data: Any) -> History:
        if not isinstance(data, dict):
            raise _HistoryDamage(f"expected an object, got {_show(data)}")
        unknown = sorted(set(data) - _HISTORY_KEYS)
        missing = sorted(_HISTORY_KEYS - {"default"} - set(data))
        if unknown or missing:
            raise _HistoryDamage(f"unknown key {unknown[0]!r}" if unknown else f"{missing[0]!r} is missing")
        if type(data["version"]) is not int or data["version"] != HISTORY_VERSION:
            raise _HistoryDamage(f"'version' must be {HISTORY_VERSION}, got {_show(data['version'])}")
        params = data["params"]
        if not isinstance(params, list) or not all(isinstance(p, str) and p for p in params):
            raise _HistoryDamage(f"'params' must be a list of names, got {_show(params)}")
        if len(set(params)) != len(params):
            raise _HistoryDamage("'params' names a parameter twice")
        trials = tuple(
            (_positive(row[0], "trials"), row[1]) for row in _rows(data["trials"], params, "trials")
        )
        failures = []
        for label, values in _rows(data["failures"], params, "failures"):
            if label not in FAILURE_LABELS:
                raise _HistoryDamage(f"'failures' has an unknown label {_show(label)}")
            failures.append((cast(Label, label), values))
        default = data.get("default")
        return cls(
            tuple(params),
            _positive(data["best"], "best"),
            trials,
            tuple(failures),
            None if default is None else _positive(default, "default"),
        )

    def config(self, values: tuple[Any, ...]) -> dict[str, Any]:
        """The values of a row as a configuration (parameter name to value)."""
        return dict(zip(self.params, values, strict=True))

    def to_json(self) -> dict[str, Any]:
        """The JSON object (rows as lists: the value or label first, then the values)."""

        def row(first: Any, values: tuple[Any, ...]) -> list[Any]:
            return [first, *(list(v) if isinstance(v, tuple) else v for v in values)]

        data: dict[str, Any] = {
            "version": HISTORY_VERSION,
            "params": list(self.params),
            "best": self.best,
            "trials": [row(value, values) for value, values in self.trials],
            "failures": [row(label, values) for label, values in self.failures],
        }
        if self.default is not None:
            data["default"] = self.default
        return data


@dataclass(frozen=True)
class UnreadHistory:
    """A ``history`` this version does not read (``newer`` version or damaged), kept verbatim."""

    raw: Any
    why: str
    newer: bool

    def to_json(self) -> Any:
        """The object as it was read."""
        return copy.deepcopy(self.raw)


def _positive(value: Any, name: str) -> float:
    """``value`` unchanged (an int stays one, so the JSON reads back the same) when positive and finite."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
        raise _HistoryDamage(f"{name!r} must hold positive finite numbers, got {_show(value)}")
    return value


def _rows(rows: Any, params: list[str], name: str) -> list[tuple[Any, tuple[Any, ...]]]:
    """Each row of ``rows`` split into its first element and its configuration values."""
    if not isinstance(rows, list):
        raise _HistoryDamage(f"{name!r} must be a list of rows, got {_show(rows)}")
    reader = _Reader({}, "", name)
    out = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(params) + 1:
            raise _HistoryDamage(f"{name!r}: a row must list {len(params) + 1} values, got {_show(row)}")
        plain = all(
            v is None or type(v) in (int, str, bool) or (type(v) is float and math.isfinite(v))
            for v in row[1:]
        )
        try:
            values = tuple(row[1:]) if plain else tuple(_config_value(reader, name, v) for v in row[1:])
        except DamagedEntryError as exc:
            raise _HistoryDamage(f"{name!r}: a value {exc.why}") from None
        out.append((row[0], values))
    return out
