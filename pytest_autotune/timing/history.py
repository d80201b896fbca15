"""The ``history`` of a store entry: what tuning measured, kept compactly to warm-start others.

A :class:`History` holds a test's best trials and its failures as rows of parameter values; the
store entry (:mod:`pytest_autotune.entry`) carries one, and transfer tuning reads the histories of
other devices and sibling tests. A history this version cannot read (a newer ``version``, or
damaged) is an :class:`UnreadHistory`, kept verbatim so that nothing is lost. The value checks
shared with the entry's configurations (:func:`scalar_problem`, :func:`show`) live here, below it.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Final, cast

from pytest_autotune.outcome import FAILURE_LABELS, Label

__all__ = ["HISTORY_VERSION", "History", "UnreadHistory", "scalar_problem", "show"]


def scalar_problem(value: Any) -> str | None:
    """Why ``value`` is no configuration value (a scalar or a list of scalars, numbers finite), or None."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, str | int | float | bool | None):
            return f"must be a scalar or a list of scalars, got {show(value)}"
        if isinstance(item, float) and not math.isfinite(item):
            return f"must hold finite numbers, got {show(value)}"
    return None


def show(value: Any) -> str:
    """How an error names a JSON value: ``"a string 'x'"``, ``"a list"``, ``"null"``, ``"3"``."""
    kind = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    text = repr(value) if not isinstance(value, dict | list) and value is not None else ""
    label = kind.get(type(value), "")
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{label} {text}".strip() if label else text


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
            raise _HistoryDamage(f"expected an object, got {show(data)}")
        unknown = sorted(set(data) - _HISTORY_KEYS)
        missing = sorted(_HISTORY_KEYS - {"default"} - set(data))
        if unknown or missing:
            raise _HistoryDamage(f"unknown key {unknown[0]!r}" if unknown else f"{missing[0]!r} is missing")
        if type(data["version"]) is not int or data["version"] != HISTORY_VERSION:
            raise _HistoryDamage(f"'version' must be {HISTORY_VERSION}, got {show(data['version'])}")
        params = data["params"]
        if not isinstance(params, list) or not all(isinstance(p, str) and p for p in params):
            raise _HistoryDamage(f"'params' must be a list of names, got {show(params)}")
        if len(set(params)) != len(params):
            raise _HistoryDamage("'params' names a parameter twice")
        trials = tuple(
            (_positive(row[0], "trials"), row[1]) for row in _rows(data["trials"], params, "trials")
        )
        failures = []
        for label, values in _rows(data["failures"], params, "failures"):
            if label not in FAILURE_LABELS:
                raise _HistoryDamage(f"'failures' has an unknown label {show(label)}")
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
        raise _HistoryDamage(f"{name!r} must hold positive finite numbers, got {show(value)}")
    return value


def _rows(rows: Any, params: list[str], name: str) -> list[tuple[Any, tuple[Any, ...]]]:
    """Each row of ``rows`` split into its first element and its configuration values."""
    if not isinstance(rows, list):
        raise _HistoryDamage(f"{name!r} must be a list of rows, got {show(rows)}")
    out = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(params) + 1:
            raise _HistoryDamage(f"{name!r}: a row must list {len(params) + 1} values, got {show(row)}")
        plain = all(  # the common case, checked fast: a store may hold thousands of rows
            v is None or type(v) in (int, str, bool) or (type(v) is float and math.isfinite(v))
            for v in row[1:]
        )
        if plain:
            out.append((row[0], tuple(row[1:])))
            continue
        for value in row[1:]:
            why = scalar_problem(value)
            if why is not None:
                raise _HistoryDamage(f"{name!r}: a value {why}")
        values = tuple(tuple(v) if isinstance(v, list) else v for v in row[1:])
        out.append((row[0], values))
    return out
