"""Option values, written as text or given as Python objects: booleans, numbers, durations, sizes.

One parser per kind of value, used by the policy (command line, ini keys, environment variables,
``@tunable`` keywords and markers), by the plugin's flags and by the Bayesian engine's options
(``bo:log_transform=off``), so every place accepts the same spellings:

* a boolean: ``True``/``False``, the integers 1 and 0, or text ``true``/``false``, ``yes``/``no``,
  ``on``/``off``, ``1``/``0`` (any case, blanks around it ignored);
* an integer: an ``int`` (not a bool), a float without a fraction (``4.0``), or text of one
  (``"12"``, ``"-3"``);
* a number: an ``int`` or ``float`` (not a bool) or text of one, finite;
* a duration: text with a unit, ``"2us"``, ``"1.5ms"``, ``"90s"``, ``"5m"``/``"5min"``, ``"1h"``;
* a size: bytes, or text with a unit, ``"512MB"``, ``"1.5GiB"``, ``"2g"``.

A refused value raises :class:`BadValue` (a ``ValueError``) naming the value, the option when the
caller gives its ``name``, and what was expected. This module imports nothing of the package.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Final

__all__ = [
    "BOOLEAN_WORDS",
    "BadValue",
    "format_seconds",
    "is_number_text",
    "parse_bool",
    "parse_duration",
    "parse_float",
    "parse_int",
    "parse_size",
]

_TRUE: Final = ("true", "yes", "on", "1")
_FALSE: Final = ("false", "no", "off", "0")
#: The text spellings of a boolean, as error messages list them.
BOOLEAN_WORDS: Final = "true/false, yes/no, on/off or 1/0"

# Durations: minutes are "m" or "min", milliseconds "ms".
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
_INTEGER = re.compile(r"^\s*[-+]?[0-9]+\s*$")
#: Sizes that mean "no limit".
_OFF: Final = ("off", "none", "no", "0")


class BadValue(ValueError):
    """A value that does not parse: ``NAME=VALUE: expected WHAT`` (``VALUE: expected WHAT`` unnamed).

    ``expected`` alone lets a caller that already names the option and value (the policy) say
    what was expected without repeating them.
    """

    def __init__(self, value: object, expected: str, name: str | None = None) -> None:
        self.value, self.expected, self.name = value, expected, name
        shown = f"{name}={value!r}" if name else repr(value)
        super().__init__(f"{shown}: expected {expected}")


def parse_bool(value: object, name: str | None = None) -> bool:
    """A boolean (see the module docstring for the accepted spellings)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in (*_TRUE, *_FALSE):
        return value.strip().lower() in _TRUE
    raise BadValue(value, f"a boolean ({BOOLEAN_WORDS})", name)


def _bounds(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" within [{minimum}, {maximum}]"
    if minimum is not None:
        return f" >= {minimum}"
    return f" <= {maximum}" if maximum is not None else ""


def _within(number: float, minimum: float | None, maximum: float | None) -> bool:
    return (minimum is None or number >= minimum) and (maximum is None or number <= maximum)


def parse_int(
    value: object, name: str | None = None, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An integer within ``[minimum, maximum]`` (either bound optional)."""
    expected = "an integer" + _bounds(minimum, maximum)
    number: int | None = None
    if (
        (isinstance(value, numbers.Integral) and not isinstance(value, bool))
        or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
        or (isinstance(value, str) and _INTEGER.match(value))
    ):
        number = int(value)
    if number is None or not _within(number, minimum, maximum):
        raise BadValue(value, expected, name)
    return number


def parse_float(
    value: object, name: str | None = None, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """A finite number within ``[minimum, maximum]`` (either bound optional)."""
    expected = "a number" + _bounds(minimum, maximum)
    number: float | None = None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or not _within(number, minimum, maximum):
        raise BadValue(value, expected, name)
    return number


def is_number_text(text: str) -> bool:
    """Whether ``text`` is a plain finite number (no unit)."""
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


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


def parse_size(value: Any) -> int | None:
    """Bytes in ``1073741824``, ``"512MB"``, ``"1.5GiB"``, ``"2g"``; None for ``off``/``none``/0."""
    if value is None or (isinstance(value, str) and value.strip().lower() in _OFF):
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
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{value!r} is not a non-negative size")
    return int(number * _SIZE_UNITS[unit]) or None
