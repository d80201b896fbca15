"""Kernel Tuner's strategy names and ``strategy_options``, read as this project's spellings.

Someone moving a ``tune_kernel(..., strategy="genetic_algorithm", strategy_options={"max_fevals":
100})`` call to ``@tunable`` should not have to learn new names first. This module holds the one
translation table:

* :data:`STRATEGY_ALIASES`: a Kernel Tuner strategy name -> the registered strategy that does the
  same kind of search (``brute_force`` -> ``exhaustive``, ``genetic_algorithm`` -> ``genetic``, ...);
* :data:`NO_COUNTERPART`: Kernel Tuner names with no strategy of the same kind here, each with the
  registered strategy to use instead (a usage error names it, rather than a silent substitute);
* :data:`BUDGET_OPTIONS`: ``max_fevals`` and ``time_limit``, which are the tuning budget here, not an
  option of one strategy (:func:`budget_from_options` turns them into a ``budget`` value);
* :data:`OPTION_ALIASES`: per registered strategy, Kernel Tuner's option names that mean the same as
  one of its options (``popsize`` -> ``population``, ``T`` -> ``t_start``, ...).

Pure data and small functions: importing it costs nothing (no numpy, no strategy module).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "BUDGET_OPTIONS",
    "NO_COUNTERPART",
    "OPTION_ALIASES",
    "STRATEGY_ALIASES",
    "budget_from_options",
    "canonical_strategy",
    "translate_options",
]

#: Kernel Tuner strategy name -> the registered strategy of the same kind.
STRATEGY_ALIASES: Final[Mapping[str, str]] = {
    "brute_force": "exhaustive",
    "random_sample": "random",
    "genetic_algorithm": "genetic",
    "simulated_annealing": "anneal",
    "bayes_opt": "bo",
    "mls": "local",
    "greedy_mls": "local",
    "ordered_greedy_mls": "local",
    "greedy_ils": "local",
}

#: Kernel Tuner strategy names with no counterpart here -> the registered strategy to use instead.
NO_COUNTERPART: Final[Mapping[str, str]] = {
    "basinhopping": "local",
    "minimize": "pattern",
    "dual_annealing": "anneal",
    "firefly_algorithm": "genetic",
    "pso": "genetic",
}

#: Kernel Tuner ``strategy_options`` that are the tuning budget here (``budget=``), not a strategy option.
BUDGET_OPTIONS: Final = ("max_fevals", "time_limit")

#: Registered strategy -> {Kernel Tuner option name: its option name here}.
OPTION_ALIASES: Final[Mapping[str, Mapping[str, str]]] = {
    "genetic": {"popsize": "population"},
    "diff_evo": {"popsize": "population", "F": "f", "CR": "cr"},
    "anneal": {"T": "t_start", "T_min": "t_end"},
}


def canonical_strategy(name: str) -> str:
    """The registered name for ``name``: a Kernel Tuner alias is translated, any other name is kept.

    A Kernel Tuner name without a counterpart raises ``ValueError`` naming the strategy to use.
    """
    if name in NO_COUNTERPART:
        instead = NO_COUNTERPART[name]
        raise ValueError(
            f"Kernel Tuner's {name!r} has no counterpart here: use {instead!r}, or 'bo', the default"
        )
    return STRATEGY_ALIASES.get(name, name)


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


def budget_from_options(options: Mapping[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Split Kernel Tuner's budget options off ``options``: (budget value or None, the other options).

    ``max_fevals=N`` is ``N`` evaluations, ``time_limit=S`` is ``S`` seconds (``"Ss"``); both together
    stop at whichever comes first (``"N|Ss"``), as in Kernel Tuner. The budget value is parsed by
    the policy's budget parser afterwards, so a bad value is reported there, naming ``budget``.
    """
    rest = {k: v for k, v in options.items() if k not in BUDGET_OPTIONS}
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
