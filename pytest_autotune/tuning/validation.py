"""Policy values checked in full: the one entry point that parses every policy value.

:func:`validate_policy` parses ``@tunable`` keywords (when the decorator runs), ``@pytest.mark.autotune``
keywords (at collection) and options, ini keys and environment variables (at start-up, where a bad
value is a usage error): the keys that :mod:`pytest_autotune.policy` parses itself
(:data:`~pytest_autotune.policy.VALUE_PARSERS`), a ``budget`` into what the tuner's ``abort=``
takes (:func:`parse_budget`), a ``strategy`` against the registry (:func:`parse_strategy`) and a
strategy's options by building the strategy once. It lives here, above the policy, so that the
policy imports neither the abort conditions nor the strategies; they load only when a value needs
them (a budget text that combines conditions, a strategy spec), so loading the plugin stays light.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.policy import VALUE_PARSERS, PolicyError, invalid_value, parse_policy_values, text_value
from pytest_autotune.values import BadValue, parse_duration

if TYPE_CHECKING:
    from pytest_autotune.space.base import Space

__all__ = ["PARSERS", "parse_budget", "parse_strategy", "translate_strategy_options", "validate_policy"]


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
    """``"bo"`` or ``"bo:initial=10"`` -> (name, options); the name must be a registered strategy.

    Kernel Tuner's strategy and option names are accepted and translated
    (:mod:`pytest_autotune.strategies.options`): ``genetic_algorithm:popsize=20`` is
    ``genetic`` with ``population=20``.
    """
    from pytest_autotune.strategies import available_strategies, canonical_strategy, parse_strategy_spec
    from pytest_autotune.strategies.options import translate_options

    given, options = parse_strategy_spec(value)
    known = ", ".join(available_strategies())
    try:
        name = canonical_strategy(given)
    except ValueError as exc:  # a Kernel Tuner name with no counterpart here
        raise BadValue(value, f"one of the strategies {known} ({exc})") from exc
    if name not in available_strategies():
        raise BadValue(value, f"one of the strategies {known}, or a Kernel Tuner strategy name")
    return name, translate_options(name, options)


def _strategy(value: Any) -> tuple[str, dict[str, Any]]:
    return parse_strategy(text_value(value))


#: A parser for every policy key.
PARSERS: Final[dict[str, Callable[[Any], Any]]] = {
    "budget": parse_budget,
    "strategy": _strategy,
    **VALUE_PARSERS,
}


def validate_policy(values: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """Parse every value of ``values`` (policy key -> raw value); errors name ``source`` and the key.

    A ``strategy`` given as ``"name:key=value"`` is split into ``strategy`` and ``strategy_options``,
    and the options are checked by the strategy itself now, not at the first trial.
    """
    parsed = parse_policy_values(values, source=source, parsers=PARSERS)
    if parsed.get("strategy_options"):
        _take_budget_options(parsed, source)
        if "strategy" in parsed:
            renamed = translate_strategy_options(parsed["strategy"], parsed["strategy_options"], source)
            parsed["strategy_options"] = renamed
            _check_strategy_options(parsed["strategy"], renamed, source)
    return parsed


def translate_strategy_options(name: str, options: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``options`` of strategy ``name`` with Kernel Tuner's option names translated.

    Errors name ``source``.
    """
    from pytest_autotune.strategies.options import translate_options

    try:
        return translate_options(name, options)
    except ValueError as exc:
        raise invalid_value("strategy_options", source, dict(options), exc) from exc


def _take_budget_options(parsed: dict[str, Any], source: str) -> None:
    """Move Kernel Tuner's ``max_fevals``/``time_limit`` strategy options into ``budget`` (in place)."""
    from pytest_autotune.strategies.options import BUDGET_OPTIONS, budget_from_options

    given_values = {
        k: parsed["strategy_options"][k] for k in BUDGET_OPTIONS if k in parsed["strategy_options"]
    }
    try:
        budget, rest = budget_from_options(parsed["strategy_options"])
    except ValueError as exc:  # None, nan, 0: echoed as the user wrote it
        raise PolicyError(f"{source}: invalid strategy_options: {exc}") from exc
    if budget is None:
        return
    given = ", ".join(given_values)
    if "budget" in parsed:
        raise PolicyError(
            f"{source}: strategy_options {given} and budget= both set the tuning budget; keep budget= only"
        )
    try:
        parsed["budget"] = parse_budget(budget)
    except (TypeError, ValueError) as exc:
        raise invalid_value("strategy_options", source, given_values, exc) from exc
    parsed["strategy_options"] = rest


def check_strategy_options(name: str, options: Mapping[str, Any]) -> None:
    """Raise ``ValueError``/``TypeError`` naming the option when ``options`` do not suit strategy ``name``.

    The strategy validates its own options: it is built once on a small probe space (two integer
    parameters of 8 values), so a bad value (``bo:initial=abc``) or an unknown name is a usage
    error before any tuning starts, not a failure of every tunable test. It lives here, not in the
    strategy registry, so that the registry does not depend on building spaces. A spec that passed
    is not checked again in this process (every ``@tunable`` and marker naming it would otherwise
    build the strategy anew).
    """
    key = (name, repr(sorted(options.items())))
    if key in _ACCEPTED:
        return
    import numpy as np

    from pytest_autotune.strategies import make_strategy

    make_strategy(name, _probe_space(), np.random.default_rng(0), options)
    _ACCEPTED.add(key)


#: (strategy name, repr of its sorted options) of the specs :func:`check_strategy_options` accepted.
_ACCEPTED: set[tuple[str, str]] = set()


@functools.cache
def _probe_space() -> Space:
    """The small space strategies are built on to check their options (built once per process)."""
    from pytest_autotune.space.chain import build_space
    from pytest_autotune.space.params import Interval

    return build_space({"a": Interval(1, 8), "b": Interval(1, 8)})


def _check_strategy_options(name: str, options: Mapping[str, Any], source: str) -> None:
    try:
        check_strategy_options(name, options)
    except (TypeError, ValueError, ImportError) as exc:
        shown = ",".join(f"{k}={v}" for k, v in options.items())
        raise invalid_value("strategy", source, f"{name}:{shown}", exc) from exc
