"""The registry of search strategies, by the name users give (``--autotune-strategy``).

The registry maps a name to ``"module:Class"`` and imports the module only
when the strategy is asked for, so importing it costs nothing
(no numpy, no torch). Strategy options can be given as a spec string,
``"name:key=value,key=value"``, parsed by :func:`parse_strategy_spec`. Kernel Tuner's strategy names
are aliases of the registered strategy of the same kind (:data:`KERNEL_TUNER_ALIASES`,
:func:`canonical_strategy`), so a ``tune_kernel(strategy="genetic_algorithm")`` call moves over as it is.
It is a module of its own, re-exported by the package, so that a strategy that runs others
(:mod:`~pytest_autotune.strategies.classic.bandit`) imports it rather than its folder's front door.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import numpy as np

    from pytest_autotune.space.base import Space
    from pytest_autotune.strategies.base import Strategy

__all__ = [
    "KERNEL_TUNER_ALIASES",
    "KERNEL_TUNER_ONLY",
    "available_strategies",
    "canonical_strategy",
    "get_strategy",
    "make_strategy",
    "parse_strategy_spec",
    "register_strategy",
]

_REGISTRY: dict[str, str] = {
    "random": "pytest_autotune.strategies.classic.random_search:RandomSearch",
    "exhaustive": "pytest_autotune.strategies.classic.exhaustive:Exhaustive",
    "anneal": "pytest_autotune.strategies.classic.anneal:SimulatedAnnealing",
    "genetic": "pytest_autotune.strategies.classic.genetic:GeneticAlgorithm",
    "diff_evo": "pytest_autotune.strategies.classic.diff_evo:DifferentialEvolution",
    "pattern": "pytest_autotune.strategies.classic.pattern:PatternSearch",
    "local": "pytest_autotune.strategies.classic.local:LocalSearch",
    "bandit": "pytest_autotune.strategies.classic.bandit:AUCBandit",
    "bo": "pytest_autotune.strategies.bo:BayesianOptimization",
}

#: Kernel Tuner strategy name -> the registered strategy of the same kind.
KERNEL_TUNER_ALIASES: Final[Mapping[str, str]] = {
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
KERNEL_TUNER_ONLY: Final[Mapping[str, str]] = {
    "basinhopping": "local",
    "minimize": "pattern",
    "dual_annealing": "anneal",
    "firefly_algorithm": "genetic",
    "pso": "genetic",
}


def canonical_strategy(name: str) -> str:
    """The registered name for ``name``: a Kernel Tuner alias is translated, any other name is kept.

    A Kernel Tuner name without a counterpart raises ``ValueError`` naming the strategy to use.
    """
    if name in KERNEL_TUNER_ONLY:
        instead = KERNEL_TUNER_ONLY[name]
        raise ValueError(
            f"Kernel Tuner's {name!r} has no counterpart here: use {instead!r}, or 'bo', the default"
        )
    return KERNEL_TUNER_ALIASES.get(name, name)


def available_strategies() -> list[str]:
    """Registered strategy names, sorted (``bo`` is listed even if its dependencies are missing)."""
    return sorted(_REGISTRY)


def register_strategy(name: str, target: str | type[Strategy]) -> None:
    """Register a strategy class (or its ``"module:Class"`` path) under ``name``."""
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"strategy name {name!r}: use letters, digits and underscores")
    if isinstance(target, str):
        if target.count(":") != 1:
            raise ValueError(f"strategy {name!r}: target {target!r} must look like 'package.module:Class'")
        _REGISTRY[name] = target
    else:
        _REGISTRY[name] = f"{target.__module__}:{target.__qualname__}"


def get_strategy(name: str) -> type[Strategy]:
    """The strategy class registered as ``name``; a clear error when unknown or not importable."""
    target = _REGISTRY.get(name)
    if target is None:
        raise ValueError(f"unknown strategy {name!r}; available: {', '.join(available_strategies())}")
    module_name, _, class_name = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"strategy {name!r} cannot be loaded ({exc}); "
            + (
                "the Bayesian engine needs torch, gpytorch and scikit-learn installed; "
                if name == "bo"
                else ""
            )
            + f"choose another one: {', '.join(n for n in available_strategies() if n != name)}"
        ) from exc
    cls: type[Strategy] = getattr(module, class_name)
    return cls


def make_strategy(name: str, space: Space, rng: np.random.Generator, options: Mapping[str, Any]) -> Strategy:
    """Instantiate a registered strategy, checking option names against its constructor first."""
    cls = get_strategy(name)
    parameters = inspect.signature(cls.__init__).parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        accepted = sorted(
            p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name != "rng"
        )
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise ValueError(
                f"strategy {name!r}: unknown option(s) {', '.join(unknown)}; "
                f"accepted: {', '.join(accepted) or 'none'}"
            )
    return cls(space, rng=rng, **options)


def _option_value(text: str) -> Any:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip()


def parse_strategy_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the name and its options.

    Values are Python literals when they parse as one (``0.9``, ``20``,
    ``True``/``true``, ``None``), otherwise strings. The name is not checked
    here (see :func:`get_strategy`).
    """
    name, _, rest = spec.strip().partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"strategy spec {spec!r}: missing the strategy name")
    options: dict[str, Any] = {}
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key.isidentifier():
                raise ValueError(f"strategy spec {spec!r}: expected key=value, got {item.strip()!r}")
            if key in options:
                raise ValueError(f"strategy spec {spec!r}: option {key!r} given twice")
            options[key] = _option_value(value)
    return name, options
