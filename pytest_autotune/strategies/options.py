"""Checking strategy options early, with errors that name the strategy and the option."""

from __future__ import annotations

import math
import numbers

__all__ = ["check_int", "check_real"]


def check_real(owner: str, name: str, value: object, *, lo: float, hi: float, open_lo: bool = False) -> float:
    """``value`` as a float in ``[lo, hi]`` (``(lo, hi]`` with ``open_lo``), else a ValueError."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(float(value)):
        raise ValueError(f"strategy {owner!r}: option {name} must be a number, got {value!r}")
    number = float(value)
    if number > hi or number < lo or (open_lo and number == lo):
        bracket = "(" if open_lo else "["
        raise ValueError(f"strategy {owner!r}: option {name}={value!r} is outside {bracket}{lo}, {hi}]")
    return number


def check_int(owner: str, name: str, value: object, *, lo: int, hi: int | None = None) -> int:
    """``value`` as an int in ``[lo, hi]``, else a ValueError."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValueError(f"strategy {owner!r}: option {name} must be an integer, got {value!r}")
    number = int(value)
    if number < lo or (hi is not None and number > hi):
        upper = "" if hi is None else f", {hi}"
        raise ValueError(f"strategy {owner!r}: option {name}={value!r} is outside [{lo}{upper}]")
    return number
