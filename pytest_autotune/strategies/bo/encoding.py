"""Which parameters the models see, and how each one is compared.

The space gives raw features per parameter (:meth:`Space.features`, laid out
by :attr:`Space.feature_blocks`). This module picks the blocks worth
modelling (a parameter with a single value carries no information and would
only add a useless lengthscale) and chooses the distance module of each
block, honouring the ``permutation_distance`` option. It imports no torch;
the kernel modules are created by :meth:`Encoding.make_block_distances`.

Ordinal numbers (option ``ordinal``): a numeric parameter declared as an
explicit list of values (``Set``, or ``Interval`` with a generator) is
modelled by its position in the list, scaled to [0, 1], rather than by its
value. Tuning parameters are listed at the steps their author considers
meaningful (``1, 2, 4, 8, 16``; ``16, 32, 48, ...``), so the position is the
natural distance; on such a list of powers of two it equals the log scale,
which the space applies only above a 100x span.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import FeatureBlock, Points, Space
from pytest_autotune.space.params import Interval, Param, Set
from pytest_autotune.strategies.bo.options import PermutationDistance

if TYPE_CHECKING:
    from pytest_autotune.strategies.bo.kernels import BlockDistance

__all__ = ["Encoding"]


#: Longest explicit value list given an ordinal encoding.
MAX_ORDINAL_VALUES = 65_536


def _is_constant(space: Space, block: FeatureBlock) -> bool:
    param = space.params[block.name]
    if param.is_continuous:
        return False
    return param.size <= 1


def _listed_feature_values(param: Param) -> NDArray[np.float64] | None:
    """The numeric features of every listed value (ascending), as the space computes them.

    ``FeatureBlock`` documents numeric features as the value scaled to [0, 1]
    over the domain, in log space when ``param.log_scale``. None when the
    parameter is not an explicit numeric list.
    """
    listed = isinstance(param, Set) or (isinstance(param, Interval) and param.generator is not None)
    if not listed or not param.is_numeric or not 1 < param.size <= MAX_ORDINAL_VALUES:
        return None
    values = np.asarray(param.values(), dtype=np.float64)
    lo, hi = float(values.min()), float(values.max())
    if param.log_scale:
        values, lo, hi = np.log(values), float(np.log(lo)), float(np.log(hi))
    return np.sort((values - lo) / (hi - lo))


@dataclass(frozen=True)
class Encoding:
    """The modelled blocks of a space and how permutations are compared."""

    space: Space
    blocks: tuple[FeatureBlock, ...]
    permutation_distance: PermutationDistance
    #: (feature column, ascending features of the listed values) per ordinal parameter
    ordinals: tuple[tuple[int, NDArray[np.float64]], ...] = ()

    @classmethod
    def of(
        cls, space: Space, permutation_distance: PermutationDistance = "spearman", *, ordinal: bool = True
    ) -> Encoding:
        """Model every parameter of ``space`` that can take more than one value."""
        active = tuple(b for b in space.feature_blocks if not _is_constant(space, b))
        if not active:
            # A space of one configuration: keep one block so models stay well-defined.
            active = space.feature_blocks[:1]
        ordinals: list[tuple[int, NDArray[np.float64]]] = []
        if ordinal:
            for block in active:
                listed = _listed_feature_values(space.params[block.name]) if block.kind == "numeric" else None
                if listed is not None:
                    ordinals.append((block.columns.start, listed))
        return cls(space, active, permutation_distance, tuple(ordinals))

    @property
    def dimension(self) -> int:
        """Number of modelled parameters."""
        return len(self.blocks)

    def features(self, points: Points) -> NDArray[np.float64]:
        """Model features of ``points``: the space's columns, ordinal ones replaced by positions."""
        features = np.array(self.space.features(points), dtype=np.float64, order="C")
        for column, listed in self.ordinals:
            raw = features[:, column]
            above = np.searchsorted(listed, raw).clip(1, len(listed) - 1)
            nearest = np.where(raw - listed[above - 1] <= listed[above] - raw, above - 1, above)
            features[:, column] = nearest / (len(listed) - 1)
        return features

    def grid_spacing(self) -> NDArray[np.float64]:
        """Per modelled block, the smallest gap between two of its encoded values (0: no grid).

        Numeric parameters with a finite list of values have one (an ordinal
        position has ``1 / (n - 1)``); continuous, categorical and permutation
        blocks report 0. The surrogate keeps lengthscales from shrinking far
        below it: shorter, neighbouring values would look unrelated, and the
        model would treat an ordered parameter like a categorical one.
        """
        ordinal_columns = dict(self.ordinals)
        spacing = np.zeros(len(self.blocks), dtype=np.float64)
        for i, block in enumerate(self.blocks):
            if block.kind != "numeric":
                continue
            listed = ordinal_columns.get(block.columns.start)
            if listed is not None:
                spacing[i] = 1.0 / (len(listed) - 1)
                continue
            param = self.space.params[block.name]
            if param.is_continuous or not 1 < param.size <= MAX_ORDINAL_VALUES:
                continue
            values = np.unique(np.asarray(param.values(), dtype=np.float64))
            if param.log_scale:
                values = np.log(values)
            gaps = np.diff(values) / (values[-1] - values[0])
            spacing[i] = float(gaps.min())
        return spacing

    def discrete_blocks(self) -> list[slice]:
        """Feature columns of each modelled parameter with finitely many values (not continuous)."""
        return [b.columns for b in self.blocks if not self.space.params[b.name].is_continuous]

    def active_columns(self) -> NDArray[np.int64]:
        """Feature columns of the modelled blocks (for models that take plain columns)."""
        cols = [np.arange(b.columns.start, b.columns.stop) for b in self.blocks]
        return np.concatenate(cols).astype(np.int64)

    def make_block_distances(self) -> list[BlockDistance]:
        """One distance module per modelled block (imports torch)."""
        from pytest_autotune.strategies.bo import kernels

        modules: list[BlockDistance] = []
        for block in self.blocks:
            if block.kind == "numeric":
                modules.append(kernels.NumericDistance(block.columns))
            elif block.kind == "categorical":
                modules.append(kernels.CategoricalDistance(block.columns, max(1, block.n_categories)))
            elif self.permutation_distance == "spearman":
                modules.append(kernels.SpearmanDistance(block.columns))
            elif self.permutation_distance == "kendall":
                modules.append(kernels.KendallDistance(block.columns))
            elif self.permutation_distance == "hamming":
                modules.append(kernels.HammingPermutationDistance(block.columns))
            else:
                modules.append(kernels.PermutationMatchDistance(block.columns))
        return modules
