"""Bayesian optimization engine (strategy ``bo``, the default).

Importing this package is cheap: torch, gpytorch and scikit-learn load when
:class:`BayesianOptimization` is instantiated.
"""

from __future__ import annotations

from pytest_autotune.strategies.bo.options import BOOptions
from pytest_autotune.strategies.bo.strategy import BayesianOptimization

__all__ = ["BOOptions", "BayesianOptimization"]
