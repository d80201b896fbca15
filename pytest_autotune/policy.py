"""Per-test tuning and checking policy: the keys, how each value is parsed, how layers merge.

A policy value comes from, lowest precedence first: the built-in default, an ini key, a
``PYTEST_AUTOTUNE_*`` environment variable, the command line, ``@tunable(...)`` keywords and
``@pytest.mark.autotune(...)``. Values from the first three layers arrive as text and values from the
decorators as Python objects; every parser here accepts both and raises :class:`PolicyError` naming
the key and where the value came from. The kinds of value (booleans, numbers, durations, sizes) are
parsed by :mod:`pytest_autotune.values`; ``budget`` and ``strategy``, which need the abort
conditions and the strategy registry, by :mod:`pytest_autotune.tuning.validation`, whose
``validate_policy`` parses every key. This module knows nothing of pytest, the tuner or the
strategies: it imports only the values and the regression rule's defaults.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

from pytest_autotune.timing.regression import NOISE_K, NOISE_TOLERANCE_K, TIME_FLOOR, TOLERANCE, Rule
from pytest_autotune.values import (
    BadValue,
    is_number_text,
    parse_bool,
    parse_duration,
    parse_float,
    parse_int,
    parse_size,
)

__all__ = [
    "COMPARE_TOLERANCE",
    "DEFAULT_POLICY",
    "POLICY_KEYS",
    "VALUE_PARSERS",
    "Policy",
    "PolicyError",
    "invalid_value",
    "merge_policy",
    "parse_policy_values",
    "parse_tolerance_spec",
    "text_value",
]


class PolicyError(ValueError):
    """A policy value (option, ini key, environment variable or decorator keyword) is invalid."""


CHECK_CHOICES: Final = ("fail", "warn", "off")
MISSING_CHOICES: Final = ("warn", "fail")
ISOLATE_CHOICES: Final = ("auto", "process", "none")
#: Default of ``compare_tolerance``: the slowdown over the reference that ``--autotune-compare`` accepts.
COMPARE_TOLERANCE: Final = 0.05
#: Default limit of one isolated trial (seconds); a trial running longer is labelled ``timeout``.
DEFAULT_TRIAL_TIMEOUT: Final = 120.0
#: Default growth of an isolated trial worker's memory (bytes) after which it is restarted.
DEFAULT_WORKER_MEMORY: Final = 1 << 30


@dataclass(frozen=True)
class Policy:
    """How one tunable test is tuned and checked (see the module docstring for precedence).

    ``budget`` is anything :class:`pytest_autotune.tuning.tuner.Tuner` accepts as ``abort`` (None: the
    tuner's default). ``tolerance``, ``noise_k`` and ``floor`` are the regression rule's parameters
    (:attr:`rule`, :mod:`pytest_autotune.timing.regression`). ``repeat`` None means the mode's default
    number of timed calls per :meth:`measure`. ``isolate`` says where tuning trials run
    (``process``: a worker subprocess per test, see :mod:`pytest_autotune.plugin.workers.parent`; ``none``:
    in the pytest process; ``auto``: ``process`` on POSIX systems); ``trial_timeout`` (seconds, None
    for no limit) and ``worker_memory`` (bytes of growth before the worker is restarted, None for no
    limit) apply to isolated trials only. ``compare_tolerance`` is the slowdown over the reference
    commit that ``--autotune-compare`` accepts. ``explicit`` lists the keys set by any layer other
    than the built-in defaults.
    """

    budget: Any = None
    strategy: str = "bo"
    strategy_options: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    objective: str = "time"
    maximize: bool = False
    tolerance: float = TOLERANCE
    noise_k: float = NOISE_K
    floor: float | None = None
    finalists: int = 3
    check: str = "fail"
    missing: str = "warn"
    repeat: int | None = None
    warmup: int = 1
    isolate: str = "auto"
    trial_timeout: float | None = DEFAULT_TRIAL_TIMEOUT
    worker_memory: int | None = DEFAULT_WORKER_MEMORY
    compare_tolerance: float = COMPARE_TOLERANCE
    explicit: frozenset[str] = frozenset()

    @property
    def effective_floor(self) -> float:
        """The absolute floor: 2 microseconds for time, 0 for other objectives, unless set."""
        if self.floor is not None:
            return self.floor
        return TIME_FLOOR if self.objective == "time" else 0.0

    @property
    def rule(self) -> Rule:
        """The regression rule with this policy's parameters: a tolerance set by any layer wins
        over the one derived from a baseline's noise (:meth:`.Rule.tolerance_for`)."""
        noise_scale = None if "tolerance" in self.explicit else NOISE_TOLERANCE_K
        return Rule(self.tolerance, self.noise_k, self.effective_floor, self.maximize, self.unit, noise_scale)

    @property
    def unit(self) -> str:
        """Unit of the objective's values ("s" for time, else the objective's name)."""
        return "s" if self.objective == "time" else self.objective

    @property
    def isolated(self) -> bool:
        """Whether tuning trials run in a worker process (``auto``: yes on POSIX systems)."""
        return self.isolate == "process" or (self.isolate == "auto" and os.name == "posix")


DEFAULT_POLICY: Final = Policy()


# -- value parsers (the kinds of value themselves: pytest_autotune.values) ----------------------------
def invalid_value(key: str, source: str, value: Any, exc: Exception | str) -> PolicyError:
    """``SOURCE: invalid KEY=VALUE: expected ...`` from a :class:`BadValue` (an unnamed one repeats
    the value: only what it expected is said), or ``SOURCE: invalid KEY=VALUE: why`` from any
    other error, whose text says what is wrong itself (``'abc' is not a duration ...``)."""
    if isinstance(exc, Exception) and not isinstance(exc, BadValue):
        return PolicyError(f"{source}: invalid {key}={value!r}: {exc}")
    expected = exc.expected if isinstance(exc, BadValue) and exc.name is None else str(exc)
    return PolicyError(f"{source}: invalid {key}={value!r}: expected {expected}")


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
            fraction = _percent(amount)
            if fraction is None:
                raise ValueError(f"{spec!r}: {amount!r} is not a non-negative percentage")
            result["tolerance"] = fraction
            continue
        if is_number_text(amount):
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


def _percent(text: str) -> float | None:
    """A non-negative percentage (``"10%"``) as a fraction, else None."""
    text = text.strip()
    if not text.endswith("%"):
        return None
    try:
        return parse_float(text[:-1], minimum=0.0) / 100.0
    except BadValue:
        return None


def _relative(value: Any) -> float:
    """A fraction: text needs ``%`` (``"10%"``); a Python number is the fraction itself (0.1)."""
    if isinstance(value, str):
        fraction = _percent(value)
        if fraction is None:
            raise ValueError(f"{value!r} is not a non-negative percentage such as 10%")
        return fraction
    return _non_negative(value)


def _slowdown(value: Any) -> float:
    """A compare tolerance: :func:`_relative`, below 100% (a limit ratio below 2; the paired judge
    also reads ``1 - tolerance`` as "confidently faster", which a tolerance of 100% would make 0)."""
    fraction = _relative(value)
    if not fraction < 1:
        raise ValueError(f"{value!r} is not a percentage below 100% (e.g. 5%, or 0.05)")
    return fraction


def _non_negative(value: Any) -> float:
    return parse_float(value, minimum=0.0)


def _floor(value: Any) -> float:
    """Text needs a time unit (``"2us"``); a Python number is in the objective's unit."""
    if isinstance(value, str):
        if is_number_text(value):
            raise ValueError(f"{value!r} has no unit; write a duration such as {value.strip()}us")
        return parse_duration(value)
    return _non_negative(value)


def _int_at_least(minimum: int) -> Callable[[Any], int]:
    return lambda value: parse_int(value, minimum=minimum)


def _seed(value: Any) -> int | None:
    return None if value is None else parse_int(value, minimum=0)


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


def _trial_timeout(value: Any) -> float | None:
    """Positive seconds (a number or a duration such as ``"90s"``), or None for ``off``/``none``.

    Zero is refused rather than read as "no limit": ``off`` says that unambiguously.
    """
    if value is None or (isinstance(value, str) and value.strip().lower() in ("off", "none")):
        return None
    plain = isinstance(value, str) and is_number_text(value)  # the option's unit is seconds
    seconds = _non_negative(value) if plain else _floor(value)
    if not seconds > 0:
        raise ValueError(f"{value!r} is not a positive duration (use off for no limit)")
    return seconds


def text_value(value: Any) -> str:
    """A non-empty string, stripped."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a non-empty string")
    return value.strip()


def _strategy_options(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError(f"{value!r} is not a mapping of option names to values")
    return dict(value)


#: Parsers of the policy keys whose values need nothing above this module: key -> parser of one value
#: (text or Python object) into the :class:`Policy` field's type. ``budget`` (abort conditions) and
#: ``strategy`` (the strategy registry) are parsed by :mod:`pytest_autotune.tuning.validation`.
VALUE_PARSERS: Final[dict[str, Callable[[Any], Any]]] = {
    "strategy_options": _strategy_options,
    "seed": _seed,
    "objective": text_value,
    "maximize": parse_bool,
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
    "compare_tolerance": _slowdown,
}
#: The policy keys: the fields of :class:`Policy` but ``explicit``.
POLICY_KEYS: Final = frozenset(f.name for f in fields(Policy)) - {"explicit"}


def parse_policy_values(
    values: Mapping[str, Any], *, source: str, parsers: Mapping[str, Callable[[Any], Any]]
) -> dict[str, Any]:
    """Parse every value of ``values`` (policy key -> raw value) with ``parsers`` (one per key, as
    :func:`pytest_autotune.tuning.validation.validate_policy` gives them); errors name ``source`` and
    the key.

    The ``strategy`` parser returns the name and the options of a ``"name:key=value"`` spec; the
    options are merged into ``strategy_options``.
    """
    parsed: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in POLICY_KEYS:
            raise PolicyError(
                f"{source}: unknown policy key {key!r} (known: {', '.join(sorted(POLICY_KEYS))})"
            )
        try:
            value = parsers[key](raw)
        except (TypeError, ValueError) as exc:
            raise invalid_value(key, source, raw, exc) from exc
        if key == "strategy":
            value, options = value
            if options:
                parsed["strategy_options"] = {**parsed.get("strategy_options", {}), **options}
        parsed[key] = value
    return parsed


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
