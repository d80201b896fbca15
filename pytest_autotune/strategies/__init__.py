"""Search strategies behind one ask/tell protocol, and the registry that names them.

Every strategy subclasses :class:`~pytest_autotune.strategies.base.Strategy`; the classic ones live
in :mod:`~pytest_autotune.strategies.classic`, the Bayesian engine in
:mod:`~pytest_autotune.strategies.bo`. Users name a strategy (``--autotune-strategy``,
``@tunable(strategy=)``) through the registry, :mod:`~pytest_autotune.strategies.registry`, which
imports a strategy's module only when it is asked for: importing this package costs nothing (no
numpy, no torch).

This package re-exports the registry's names, so ``from pytest_autotune.strategies import
register_strategy`` is the short spelling; modules of this package import from the module that
defines a name.
"""

from __future__ import annotations

from pytest_autotune.strategies.registry import (
    KERNEL_TUNER_ALIASES,
    KERNEL_TUNER_ONLY,
    available_strategies,
    canonical_strategy,
    get_strategy,
    make_strategy,
    parse_strategy_spec,
    register_strategy,
)

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
