"""Model features of parameter values, vectorised (layout: :func:`feature_layout`).

Each kind computes its own features (:meth:`Param.encode_positions`, :meth:`Param.encode_values`):

* numeric kinds: one column in [0, 1], ``(v - lo) / (hi - lo)`` over the whole domain, or the
  same in log space when the parameter is log-scaled (powers of two, spans over two decades);
* categorical kinds (``Categorical``, ``Bool``, non-numeric ``Set``): the domain position;
* permutations: one column per item holding the item's position in the ordering.

The Bayesian engine encodes tens of thousands of candidates per suggestion, so every encoder
works on arrays of domain positions (or real values) without Python loops.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_autotune.space.base import FeatureBlock
from pytest_autotune.space.params.base import Param

__all__ = ["feature_layout"]


def feature_layout(params: Mapping[str, Param]) -> tuple[FeatureBlock, ...]:
    """The feature layout every space implementation uses (see :class:`FeatureBlock`)."""
    blocks: list[FeatureBlock] = []
    col = 0
    for name, p in params.items():
        kind, width = p.feature_kind, p.feature_width
        n_categories = p.size if kind == "categorical" else 0
        blocks.append(FeatureBlock(name, kind, slice(col, col + width), n_categories=n_categories))
        col += width
    return tuple(blocks)
