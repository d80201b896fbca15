"""Per-test tuning and checking policy: the keys, how each value is parsed, how layers merge.

A policy value comes from, lowest precedence first: the built-in default, an ini key, a
``PYTEST_AUTOTUNE_*`` environment variable, the command line, ``@tunable(...)`` keywords and
``@pytest.mark.autotune(...)``. Values from the first three layers arrive as text and values from the
decorators as Python objects; every parser here accepts both and raises :class:`PolicyError` naming
the key and where the value came from. This module knows nothing of pytest and imports nothing heavy
(abort conditions load only when a budget string combines several conditions).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, Final

__all__ = [
    "DEFAULT_POLICY",
    "POLICY_KEYS",
    "Policy",
    "PolicyError",
    "format_seconds",
    "merge_policy",
    "parse_budget",
    "parse_duration",
    "parse_size",
    "parse_strategy",
    "parse_tolerance_spec",
    "validate_policy",
]


class PolicyError(ValueError):
    """A policy value (option, ini key, environment variable or decorator keyword) is invalid."""


CHECK_CHOICES: Final = ("fail", "warn", "off")
MISSING_CHOICES: Final = ("warn", "fail")
ISOLATE_CHOICES: Final = ("auto", "process", "none")
#: Default limit of one isolated trial (seconds); a trial running longer is labelled ``timeout``.
DEFAULT_TRIAL_TIMEOUT: Final = 120.0
#: Default growth of an isolated trial worker's memory (bytes) after which it is restarted.
DEFAULT_WORKER_MEMORY: Final = 1 << 30
_OFF: Final = ("off", "none", "no", "0")
_SIZE_UNITS: Final[dict[str, int]] = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1 << 10,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1 << 20,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1 << 30,
}
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$")

# Budgets and floors accept durations with a unit; minutes are "m" or "min", milliseconds "ms".
_UNITS: Final[dict[str, float]] = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ns|us|µs|ms|s|min|m|h)\s*$")


@dataclass(frozen=True)
class Policy:
    """How one tunable test is tuned and checked (see the module docstring for precedence).

    ``budget`` is anything :class:`pytest_autotune.tuning.tuner.Tuner` accepts as ``abort`` (None: the
    tuner's default). ``tolerance`` is relative (0.1 = 10%), ``floor`` absolute in the objective's
    unit, ``noise_k`` multiplies the interquartile range. ``repeat`` None means the mode's default
    number of timed calls per :meth:`measure`. ``isolate`` says where tuning trials run
    (``process``: a worker subprocess per test, see :mod:`pytest_autotune.plugin.worker_parent`; ``none``:
    in the pytest process; ``auto``: ``process`` on POSIX systems); ``trial_timeout`` (seconds, None
    for no limit) and ``worker_memory`` (bytes of growth before the worker is restarted, None for no
    limit) apply to isolated trials only. ``explicit`` lists the keys set by any layer other than the
    built-in defaults.
    """

    budget: Any = None
    strategy: str = "bo"
    strategy_options: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    objective: str = "time"
    maximize: bool = False
    tolerance: float = 0.10
    noise_k: float = 1.5
    floor: float | None = None
    finalists: int = 3
    check: str = "fail"
    missing: str = "warn"
    repeat: int | None = None
    warmup: int = 1
    isolate: str = "auto"
    trial_timeout: float | None = DEFAULT_TRIAL_TIMEOUT
    worker_memory: int | None = DEFAULT_WORKER_MEMORY
    explicit: frozenset[str] = frozenset()

    @property
    def effective_floor(self) -> float:
        """The absolute floor: 2 microseconds for time, 0 for other objectives, unless set."""
        if self.floor is not None:
            return self.floor
        return 2e-6 if self.objective == "time" else 0.0

    @property
    def unit(self) -> str:
        """Unit of the objective's values ("s" for time, else the objective's name)."""
        return "s" if self.objective == "time" else self.objective

    @property
    def isolated(self) -> bool:
        """Whether tuning trials run in a worker process (``auto``: yes on POSIX systems)."""
        return self.isolate == "process" or (self.isolate == "auto" and os.name == "posix")


DEFAULT_POLICY: Final = Policy()


# -- value parsers -------------------------------------------------------------------------------------
def _fail(key: str, source: str, value: Any, expected: str) -> PolicyError:
    return PolicyError(f"{source}: invalid {key}={value!r}: expected {expected}")


def parse_duration(text: str) -> float:
    """Seconds in ``"2us"``, ``"1.5ms"``, ``"90s"``, ``"5m"``/``"5min"``, ``"1h"`` (raises ValueError)."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a duration such as 2us, 1.5ms, 90s, 5min or 1h")
    return float(match.group(1)) * _UNITS[match.group(2)]


def format_seconds(seconds: float) -> str:
    """Short human form of a duration with an adapted unit (``"12.3us"``, ``"4.56ms"``)."""
    magnitude = abs(seconds)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if magnitude >= scale:
            return f"{seconds / scale:.3g}{unit}"
    return f"{seconds / 1e-9:.3g}ns"


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _budget_term(term: str) -> Any:
    term = term.strip()
    if term.isdigit():
        count = int(term)
        if count <= 0:
            raise ValueError(f"{term!r}: a number of evaluations must be positive")
        return count
    seconds = parse_duration(term)
    if seconds <= 0:
        raise ValueError(f"{term!r}: a duration must be positive")
    return timedelta(seconds=seconds)


def _as_condition(term: Any) -> Any:
    from pytest_autotune.tuning.abort import as_abort

    return as_abort(term)


def parse_budget(value: Any) -> Any:
    """A budget as the tuner's ``abort=`` expects it.

    Accepts a positive int (evaluations), a ``timedelta``, an abort condition object, or text:
    ``"60"``, ``"90s"``, ``"10min"``, and combinations ``"60|10min"`` (whichever comes first) or
    ``"60&10min"`` (both), ``&`` binding tighter than ``|``.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a budget cannot be a boolean")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{value}: a number of evaluations must be positive")
        return value
    if isinstance(value, timedelta):
        if value.total_seconds() <= 0:
            raise ValueError(f"{value}: a duration must be positive")
        return value
    if isinstance(value, str):
        alternatives = []
        for alternative in value.split("|"):
            terms = [_budget_term(t) for t in alternative.split("&")]
            if len(terms) == 1:
                alternatives.append(terms[0])
                continue
            combined = _as_condition(terms[0])
            for term in terms[1:]:
                combined = combined & _as_condition(term)
            alternatives.append(combined)
        if len(alternatives) == 1:
            return alternatives[0]
        result = _as_condition(alternatives[0])
        for alternative in alternatives[1:]:
            result = result | _as_condition(alternative)
        return result
    from pytest_autotune.tuning.abort import AbortCondition

    if isinstance(value, AbortCondition):
        return value
    raise ValueError(f"{value!r}: expected evaluations (int), a timedelta, a duration text or a condition")


def parse_strategy(value: str) -> tuple[str, dict[str, Any]]:
    """``"bo"`` or ``"bo:initial=10"`` -> (name, options); the name must be a registered strategy."""
    from pytest_autotune.strategies import available_strategies, parse_strategy_spec

    name, options = parse_strategy_spec(value)
    if name not in available_strategies():
        raise ValueError(f"unknown strategy {name!r} (available: {', '.join(available_strategies())})")
    return name, options


def parse_tolerance_spec(value: str) -> dict[str, float]:
    """pytest-benchmark style ``"median:10%"`` (relative) or ``"median:2us"`` (an absolute floor).

    A bare number (``"10"``, ``"median:0.000002"``) is refused: it could mean a percentage, a
    fraction or seconds, so it needs ``%`` or a time unit. Several specs may be joined with commas.
    Returns ``{"tolerance": ...}`` and/or ``{"floor": ...}``.
    Only ``median`` is accepted: the regression rule compares medians.
    """
    result: dict[str, float] = {}
    for spec in filter(None, (part.strip() for part in value.split(","))):
        stat, sep, amount = spec.partition(":")
        if not sep:
            stat, amount = "median", spec
        if stat.strip() != "median":
            raise ValueError(f"{spec!r}: only 'median' is supported (the regression rule compares medians)")
        amount = amount.strip()
        if amount.endswith("%"):
            percent = _number(amount[:-1])
            if percent is None or percent < 0:
                raise ValueError(f"{spec!r}: {amount!r} is not a non-negative percentage")
            result["tolerance"] = percent / 100.0
            continue
        if _number(amount) is not None:
            raise ValueError(
                f"{spec!r}: {amount!r} has no unit; write a percentage (median:{amount}%) "
                f"or a duration (median:{amount}us)"
            )
        seconds = parse_duration(amount)
        if seconds < 0:
            raise ValueError(f"{spec!r}: a floor cannot be negative")
        result["floor"] = seconds
    if not result:
        raise ValueError(f"{value!r}: expected median:N% or median:<duration>")
    return result


def _relative(value: Any) -> float:
    """A fraction: text needs ``%`` (``"10%"``); a Python number is the fraction itself (0.1)."""
    if isinstance(value, str):
        number = _number(value.strip()[:-1]) if value.strip().endswith("%") else None
        if number is None or number < 0:
            raise ValueError(f"{value!r} is not a non-negative percentage such as 10%")
        return number / 100.0
    return _non_negative(value)


def _non_negative(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("expected a number, got a boolean")
    number = _number(value) if isinstance(value, str) else float(value)
    if number is None or not math.isfinite(number) or number < 0:
        raise ValueError(f"{value!r} is not a non-negative number")
    return number


def _floor(value: Any) -> float:
    """Text needs a time unit (``"2us"``); a Python number is in the objective's unit."""
    if isinstance(value, str):
        if _number(value) is not None:
            raise ValueError(f"{value!r} has no unit; write a duration such as {value.strip()}us")
        return parse_duration(value)
    return _non_negative(value)


def _int_at_least(minimum: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError("expected an integer, got a boolean")
        number = int(value) if isinstance(value, str) and value.strip().lstrip("-").isdigit() else value
        if not isinstance(number, int) or number < minimum:
            raise ValueError(f"{value!r} is not an integer >= {minimum}")
        return number

    return parse


def _seed(value: Any) -> int | None:
    return None if value is None else _int_at_least(0)(value)


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in (
        "1",
        "true",
        "yes",
        "on",
        "0",
        "false",
        "no",
        "off",
    ):
        return value.strip().lower() in ("1", "true", "yes", "on")
    raise ValueError(f"{value!r} is not a boolean")


def _choice(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        if not isinstance(value, str) or value.strip() not in choices:
            raise ValueError(f"{value!r} is not one of {', '.join(choices)}")
        return value.strip()

    return parse


def _isolate(value: Any) -> str:
    choice = _choice(ISOLATE_CHOICES)(value)
    if choice == "process" and os.name != "posix":
        raise ValueError("process isolation needs a POSIX system (use auto or none)")
    return choice


def _is_off(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in _OFF)


def _trial_timeout(value: Any) -> float | None:
    """Positive seconds (a number or a duration such as ``"90s"``), or None for ``off``/``none``.

    Zero is refused rather than read as "no limit": ``off`` says that unambiguously.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() in ("off", "none")):
        return None
    plain = isinstance(value, str) and _number(value) is not None  # the option's unit is seconds
    seconds = _non_negative(value) if plain else _floor(value)
    if not seconds > 0:
        raise ValueError(f"{value!r} is not a positive duration (use off for no limit)")
    return seconds


def parse_size(value: Any) -> int | None:
    """Bytes in ``1073741824``, ``"512MB"``, ``"1.5GiB"``, ``"2g"``; None for ``off``/``none``/0."""
    if _is_off(value):
        return None
    if isinstance(value, bool):
        raise ValueError("expected a size, got a boolean")
    if isinstance(value, (int, float)):
        number, unit = float(value), ""
    else:
        match = _SIZE.match(str(value).lower())
        if match is None or match.group(2) not in _SIZE_UNITS:
            raise ValueError(f"{value!r} is not a size such as 512MB, 2GB or 1GiB")
        number, unit = float(match.group(1)), match.group(2)
    size = int(number * _SIZE_UNITS[unit])
    if not math.isfinite(number) or size < 0:
        raise ValueError(f"{value!r} is not a non-negative size")
    return size or None


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a non-empty string")
    return value.strip()


def _strategy_options(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{value!r} is not a mapping of option names to values")
    return dict(value)


#: Policy key -> parser of one value (text or Python object) into the :class:`Policy` field's type.
POLICY_KEYS: Final[dict[str, Callable[[Any], Any]]] = {
    "budget": parse_budget,
    "strategy": _text,
    "strategy_options": _strategy_options,
    "seed": _seed,
    "objective": _text,
    "maximize": _boolean,
    "tolerance": _relative,
    "noise_k": _non_negative,
    "floor": _floor,
    "finalists": _int_at_least(1),
    "check": _choice(CHECK_CHOICES),
    "missing": _choice(MISSING_CHOICES),
    "repeat": _int_at_least(1),
    "warmup": _int_at_least(0),
    "isolate": _isolate,
    "trial_timeout": _trial_timeout,
    "worker_memory": parse_size,
}


def validate_policy(values: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """Parse every value of ``values`` (policy key -> raw value); errors name ``source`` and the key.

    A ``strategy`` given as ``"name:key=value"`` is split into ``strategy`` and ``strategy_options``.
    """
    parsed: dict[str, Any] = {}
    for key, raw in values.items():
        parser = POLICY_KEYS.get(key)
        if parser is None:
            raise PolicyError(
                f"{source}: unknown policy key {key!r} (known: {', '.join(sorted(POLICY_KEYS))})"
            )
        try:
            value = parser(raw)
        except (TypeError, ValueError) as exc:
            raise _fail(key, source, raw, str(exc)) from exc
        if key == "strategy":
            try:
                value, options = parse_strategy(value)
            except ValueError as exc:
                raise _fail(key, source, raw, str(exc)) from exc
            if options:
                parsed["strategy_options"] = {**parsed.get("strategy_options", {}), **options}
        parsed[key] = value
    if parsed.get("strategy_options") and "strategy" in parsed:
        _check_strategy_options(parsed["strategy"], parsed["strategy_options"], source)
    return parsed


def _check_strategy_options(name: str, options: Mapping[str, Any], source: str) -> None:
    """Validate a strategy's options against the strategy itself now, not at the first trial."""
    from pytest_autotune.strategies import check_strategy_options

    try:
        check_strategy_options(name, options)
    except (TypeError, ValueError, ImportError) as exc:
        shown = ",".join(f"{k}={v}" for k, v in options.items())
        raise _fail("strategy", source, f"{name}:{shown}", str(exc)) from exc


def merge_policy(layers: Iterable[Mapping[str, Any]], base: Policy = DEFAULT_POLICY) -> Policy:
    """Apply validated layers (lowest precedence first) on top of ``base``."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if "strategy" in layer:
            merged["strategy_options"] = {}  # options of another layer's strategy do not carry over
        for key, value in layer.items():
            if key == "strategy_options":
                merged[key] = {**merged.get(key, {}), **value}
            else:
                merged[key] = value
    explicit = base.explicit | frozenset(merged)
    return replace(base, **merged, explicit=explicit)
