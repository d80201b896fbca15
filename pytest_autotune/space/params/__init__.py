"""Parameter kinds of a search space.

A parameter is a domain of values (integers, reals, categories, permutations)
plus an optional known constraint ``where=`` and an optional ``default=``.
Domains are described, not materialised: ``Interval(1, 2**40)`` costs nothing
until a chunk of its values is asked for with :meth:`Param.values`.

Domain order is the order in which :meth:`Param.values` yields values; for
ordered (numeric) kinds it is ascending by value, which the search space uses
for neighbourhoods and for the feature encoding.

Each kind owns its behaviour (:mod:`~pytest_autotune.space.params.base` lists
the methods), so a new kind is one class in one module of this package:
:mod:`~pytest_autotune.space.params.numeric` (``Interval``, ``Pow2``, ``Real``),
:mod:`~pytest_autotune.space.params.choice` (``Set``, ``Categorical``, ``Bool``),
:mod:`~pytest_autotune.space.params.permutation` (``Permutation``).
"""

from __future__ import annotations

from pytest_autotune.space.params.base import LOG_SPAN_RATIO, NO_DEFAULT, FeatureKind, Param, to_python
from pytest_autotune.space.params.choice import Bool, Categorical, Set
from pytest_autotune.space.params.numeric import Interval, Pow2, Real
from pytest_autotune.space.params.permutation import Permutation

__all__ = [
    "LOG_SPAN_RATIO",
    "NO_DEFAULT",
    "Bool",
    "Categorical",
    "FeatureKind",
    "Interval",
    "Param",
    "Permutation",
    "Pow2",
    "Real",
    "Set",
    "to_python",
]
