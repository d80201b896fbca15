"""Strategy options: checked early, with errors that name the strategy and the option, and read in
Kernel Tuner's spellings.

Kernel Tuner's ``strategy_options`` partly mean the same as an option here under another name
(:data:`OPTION_ALIASES`: ``popsize`` -> ``population``, ``T`` -> ``t_start``, ...), and partly are the
tuning budget here (:data:`BUDGET_OPTIONS`: ``max_fevals``, ``time_limit``), not an option of one
strategy: :func:`translate_options` and :func:`budget_from_options` read them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "BUDGET_OPTIONS",
    "OPTION_ALIASES",
    "budget_from_options",
    "check_int",
    "check_real",
    "translate_options",
]

#: Kernel Tuner ``strategy_options`` that are the tuning budget here (``budget=``), not a strategy option.
BUDGET_OPTIONS: Final = ("max_fevals", "time_limit")

#: Registered strategy -> {Kernel Tuner option name: its option name here}.
OPTION_ALIASES: Final[Mapping[str, Mapping[str, str]]] = {
    "genetic": {"popsize": "population"},
    "diff_evo": {"popsize": "population", "F": "f", "CR": "cr"},
    "anneal": {"T": "t_start", "T_min": "t_end"},
}


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
        if hi is None:
            raise ValueError(f"strategy {owner!r}: option {name}={value!r} must be at least {lo}")
        raise ValueError(f"strategy {owner!r}: option {name}={value!r} is outside [{lo}, {hi}]")
    return number


def translate_options(strategy: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with Kernel Tuner's option names for ``strategy`` (a registered name) renamed.

    Raises ``ValueError`` when an option is given under both spellings. Budget options
    (:data:`BUDGET_OPTIONS`) are left in place: see :func:`budget_from_options`.
    """
    renames = OPTION_ALIASES.get(strategy, {})
    translated: dict[str, Any] = {}
    for key, value in options.items():
        name = renames.get(key, key)
        if name in translated:
            raise ValueError(f"strategy option {name!r} is given twice (once as Kernel Tuner's {key!r})")
        translated[name] = value
    return translated


_BUDGET_MEANING: Final = {
    "max_fevals": "a positive whole number of evaluations",
    "time_limit": "a positive number of seconds",
}


def _check_budget_option(key: str, value: object) -> None:
    """A ValueError echoing ``key=value`` as the user wrote it when it is no budget (strings are
    left to the budget parser: ``time_limit="90s"``)."""
    meaning = _BUDGET_MEANING[key]
    if value is None:
        raise ValueError(f"{key}=None: {key} needs a value ({meaning}); leave it out for the default budget")
    if isinstance(value, str):
        return
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    whole = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    good = whole if key == "max_fevals" else number and math.isfinite(float(value))  # type: ignore[arg-type]
    if not good or float(value) <= 0:  # type: ignore[arg-type]
        raise ValueError(f"{key}={value!r} is not {meaning}")


def budget_from_options(options: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Split Kernel Tuner's budget options off ``options``: (budget value or None, the other options).

    ``max_fevals=N`` is ``N`` evaluations, ``time_limit=S`` is ``S`` seconds (``"Ss"``); both together
    stop at whichever comes first (``"N|Ss"``), as in Kernel Tuner. The budget value is parsed by
    the policy's budget parser afterwards, so a bad value is reported there, naming ``budget``; a
    value that is no budget at all (``None``, ``nan``, ``0``) is a ``ValueError`` here, echoing
    ``key=value`` as written.
    """
    rest = {k: v for k, v in options.items() if k not in BUDGET_OPTIONS}
    for key in BUDGET_OPTIONS:
        if key in options:
            _check_budget_option(key, options[key])
    fevals, seconds = options.get("max_fevals"), options.get("time_limit")
    if fevals is None and seconds is None:
        return None, rest
    if seconds is None:
        return fevals, rest
    duration = (
        f"{seconds}s" if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else seconds
    )
    if fevals is None:
        return duration, rest
    return f"{fevals}|{duration}", rest
