"""Which stored problem-size key stands in for the application's: the exact one, else the nearest.

A key is a mapping of names to values (``{"M": 512, "N": 512, "K": 256}``), the same names in
every entry of a kernel. **Nearest** means the smallest :func:`distance`: the sum over the key's
dimensions of ``|log2(wanted / stored)|``, so doubling one dimension costs 1 whatever its size
(512 -> 1024 is as far as 16 -> 32), and a key twice as large in one dimension and half as large in
another is 2 away. A dimension that is not a positive number (a string such as a dtype, a boolean,
zero or a negative number) must be equal, else the stored key is not a candidate at all. Ties go
to the **larger** stored key (the larger sum of ``log2`` of its numbers): a configuration tuned
for a larger problem fills the device, one tuned for a smaller problem may leave it idle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final, Literal

__all__ = ["SizeLevel", "distance", "magnitude", "scalar_kind"]

#: How a stored key matches the application's: the same values, or the nearest ones.
SizeLevel = Literal["exact", "nearest"]
INFINITE: Final = math.inf


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def scalar_kind(value: Any) -> str:
    """``"number"``, ``"string"`` or ``"boolean"``: values of one dimension must share a kind."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string" if isinstance(value, str) else type(value).__name__


def distance(wanted: Mapping[str, Any], stored: Mapping[str, Any]) -> float:
    """How far ``stored`` is from ``wanted`` (module docstring); ``inf`` when it cannot stand in."""
    total = 0.0
    for name, value in wanted.items():
        other = stored[name]
        if value == other and type(value) is type(other):
            continue
        if _positive_number(value) and _positive_number(other):
            total += abs(math.log2(value / other))
        else:
            return INFINITE
    return total


def magnitude(stored: Mapping[str, Any]) -> float:
    """The size of a key for breaking ties (the sum of ``log2`` of its positive numbers)."""
    return sum(math.log2(v) for v in stored.values() if _positive_number(v))
