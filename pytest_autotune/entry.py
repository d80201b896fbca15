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

import datetime
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.timing.history import HISTORY_VERSION, History, UnreadHistory, scalar_problem
from pytest_autotune.timing.history import show as _show

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
    [
        "config",
        "space_hash",
        "baseline",
        "tuning",
        "commit_info",
        "metrics",
        "history",
        "measured_at",
        "kernel",
        "key",
    ]
)
#: How ``measured_at`` is written: UTC to the second (such strings sort by time).
MOMENT_FORMAT: Final = "%Y-%m-%dT%H:%M:%SZ"
_BASELINE_KEYS: Final = frozenset(
    {"median", "iqr", "q1", "q3", "min", "rounds", "unit", "noise", "processes", "clock", "cpu"}
) | {"parallelism", "parallelism_noise"}
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


def _config_value(reader: _Reader, name: str, value: Any) -> Any:
    why = scalar_problem(value)
    if why is not None:
        raise reader.error(name, why)
    return tuple(value) if isinstance(value, list) else value


def _values(data: Any, where: str, path: str) -> dict[str, Any]:
    """A configuration (or key): scalars or lists of scalars (permutations, made tuples) by name."""
    reader = _Reader(data, where, path)
    return {name: _config_value(reader, name, value) for name, value in reader.data.items()}


def _listed(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` as JSON holds them: tuples (permutations) as lists."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


@dataclass(frozen=True)
class Baseline:
    """The measurement plain runs are judged against (in ``unit``; None: an older entry lacked it).

    ``noise`` is the relative spread between the fresh processes that measured it (``0.12`` = their
    medians spread over 12% of the baseline; :func:`pytest_autotune.timing.regression.between_process_noise`)
    and ``processes`` their number; both None for a baseline measured in one process (older entries,
    ``--autotune-isolate=none``), which the rule judges with its plain tolerance.
    All of it is the wall clock's; ``cpu`` the same on the CPU clock, ``clock`` the one its run judged on.
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
    clock: str | None = None
    cpu: Baseline | None = None
    parallelism: float | None = None
    parallelism_noise: float | None = None

    @classmethod
    def from_json(cls, data: Any, *, where: str, path: str = "baseline") -> Baseline:
        """Validate a ``baseline`` object: finite numbers, positive times (unit ``"s"``, the default)."""
        reader = _Reader(data, where, path)
        reader.only(_BASELINE_KEYS, frozenset({"median"}))
        unit = reader.string("unit") if "unit" in data else None
        times = unit in (None, TIME_UNIT)
        values: dict[str, Any] = {"unit": unit, "clock": data.get("clock")}
        values["median"] = reader.number("median", positive=times)
        for key in ("q1", "q3", "min", "iqr", "noise", "parallelism", "parallelism_noise"):
            if key in data:  # a spread is never negative
                values[key] = reader.number(key, non_negative=times or key not in ("q1", "q3", "min"))
        if "rounds" in data:
            values["rounds"] = reader.integer("rounds")
        if "processes" in data:
            values["processes"] = reader.integer("processes")
            if values["processes"] < 1:
                raise reader.error("processes", f"must be a positive integer, got {_show(data['processes'])}")
        if data.get("clock", "wall") not in ("wall", "cpu"):
            raise reader.error("clock", f"must be 'wall' or 'cpu', got {_show(data['clock'])}")
        if "cpu" in data and (not times or path != "baseline"):
            raise reader.error("cpu", "is only for a time baseline, not inside its own cpu block")
        values["cpu"] = cls.from_json(data["cpu"], where=where, path=f"{path}.cpu") if "cpu" in data else None
        return cls(**values)

    @classmethod
    def measured(
        cls, stats: Stats, unit: str, *, noise: float | None = None, processes: int | None = None
    ) -> Baseline:
        """The baseline of a measurement (rounded to 6 significant digits, the noise to 4), checked
        like a stored one; ``noise`` and ``processes`` as the class says."""
        data = {**stats.baseline(unit), "noise": noise and float(f"{noise:.4g}"), "processes": processes}
        return cls.from_json({k: v for k, v in data.items() if v is not None}, where="the measured baseline")

    def to_json(self) -> dict[str, Any]:
        """The JSON object (fields that are None are left out, as they were absent when read)."""
        return {k: v.to_json() if k == "cpu" else v for k, v in vars(self).items() if v is not None}


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
    #: The kernel's stable name (``@tunable(kernel=...)``), and its problem-size key: values by name
    #: from the test's parametrization (``@tunable(key=...)``); None for tests that declare neither.
    kernel: str | None = None
    key: Mapping[str, Any] | None = None

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> StoreEntry:
        """Validate an entry object; raises :class:`DamagedEntryError` naming ``where`` and the field."""
        reader = _Reader(data, where, "")
        reader.only(_ENTRY_KEYS, frozenset({"config", "space_hash"}))
        return cls(
            config=_values(data["config"], where, "config"),
            space_hash=reader.string("space_hash"),
            baseline=Baseline.from_json(data["baseline"], where=where) if "baseline" in data else None,
            tuning=TuningRecord.from_json(data["tuning"], where=where) if "tuning" in data else None,
            commit_info=cls._commit_info(data["commit_info"], where) if "commit_info" in data else None,
            metrics=cls._metrics(data["metrics"], where) if "metrics" in data else None,
            history=History.read(data["history"]) if "history" in data else None,
            measured_at=reader.moment("measured_at") if "measured_at" in data else None,
            kernel=reader.string("kernel") if "kernel" in data else None,
            key=_values(data["key"], where, "key") if "key" in data else None,
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
        data: dict[str, Any] = {"config": _listed(self.config), "space_hash": self.space_hash}
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
        optional = {"measured_at": self.measured_at, "kernel": self.kernel, "key": self.key}
        data.update(
            (k, v if isinstance(v, str) else _listed(v)) for k, v in optional.items() if v is not None
        )
        return data
