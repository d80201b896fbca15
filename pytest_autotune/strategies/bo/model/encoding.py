"""Which parameters the models see, and how each one is compared.

The space gives raw features per parameter (:meth:`Space.features`, laid out
by :attr:`Space.feature_blocks`). This module picks the blocks worth
modelling (a parameter with a single value carries no information and would
only add a useless lengthscale) and chooses the distance module of each
block, honouring the ``permutation_distance`` option. It imports no torch;
the kernel modules are created by :meth:`Encoding.make_block_distances`.

Ordinal numbers (option ``ordinal``): a numeric parameter declared as an
explicit list of values (``Param.is_listed``: ``Set``, or ``Interval`` with a generator) is
modelled by its position in the list, scaled to [0, 1], rather than by its
value. Tuning parameters are listed at the steps their author considers
meaningful (``1, 2, 4, 8, 16``; ``16, 32, 48, ...``), so the position is the
natural distance; on such a list of powers of two it equals the log scale,
which the space applies only above a 100x span.

Power-of-two flags (option ``power_of_two``): an explicit list of positive
integers that mixes powers of two with other values (``16, 32, 48, ...,
256``; tile sizes ``1, 2, 3, 4``) also gets a derived two-valued block, 1 for
a power of two. On GPUs such values are often special (warps and wavefronts,
memory transactions, vector lanes): on the AMD convolution spaces every block
width that is not a power of two is 30 to 100 times slower, and so is a tile
of 3. The flag lets the model carry what it learnt about 48 and 80 over to
144 and 240 without measuring them, and tell 32 from 48 although they are
neighbours. Like any block it has its own lengthscale and additive effect,
so where powers of two are not special it is fitted away. Derived blocks
come after the parameters' blocks, in columns after the space's own.

Product features (option ``products``): tuning parameters often act
through their products (threads per block ``block_size_x * block_size_y``,
outputs per thread ``tile_size_x * tile_size_y``, their product the work of
a block). A Matern kernel with one lengthscale per parameter sees such a
ridge only as a wiggle along each axis. ``"pairs"`` adds one numeric block
per pair of *sized* parameters (explicit lists of at least three positive
integers), the logarithm of their product scaled to [0, 1]; ``"all"`` one
block, the logarithm of the product of every sized parameter; ``"both"``
the pairs and the whole product. Pairs are added only while there are at most
:data:`MAX_PRODUCT_PARAMS` sized parameters (a wider space would get dozens of
extra lengthscales); above it, ``"pairs"`` and ``"both"`` fall back to the
whole product. Product blocks follow the power-of-two flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from pytest_autotune.space.base import FeatureBlock, Points, Space
from pytest_autotune.space.params.base import Param
from pytest_autotune.strategies.bo.options import PermutationDistance, ProductKind

if TYPE_CHECKING:
    from pytest_autotune.strategies.bo.model.kernels import BlockDistance

__all__ = ["Encoding"]


#: Longest explicit value list given an ordinal encoding.
MAX_ORDINAL_VALUES = 65_536
#: Most sized parameters for which every pair gets a product block (option ``products``).
MAX_PRODUCT_PARAMS = 6


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
    if not param.is_listed or not param.is_numeric or not 1 < param.size <= MAX_ORDINAL_VALUES:
        return None
    values = np.asarray(param.values(), dtype=np.float64)
    lo, hi = float(values.min()), float(values.max())
    if param.log_scale:
        values, lo, hi = np.log(values), float(np.log(lo)), float(np.log(hi))
    return np.sort((values - lo) / (hi - lo))


def _power_of_two_flags(param: Param) -> NDArray[np.float64] | None:
    """Per listed value (ascending), 1.0 when it is a power of two; None when that tells nothing.

    Only for explicit lists of positive integers that mix powers of two with
    other values (a list of all powers of two, or of none, gains nothing).
    """
    values = sorted(param.values())
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0 for v in values):
        return None
    flags = np.array([float(int(v) & (int(v) - 1) == 0) for v in values], dtype=np.float64)
    if flags.min() == flags.max():
        return None
    return flags


def _log_sizes(param: Param) -> NDArray[np.float64] | None:
    """Per listed value (ascending), its logarithm; None unless a list of at least three positive integers."""
    values = sorted(param.values())
    if len(values) < 3:
        return None
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v > 0 for v in values):
        return None
    return np.log(np.asarray(values, dtype=np.float64))


def _product_groups(sized: int, products: ProductKind) -> list[tuple[int, ...]]:
    """Which of ``sized`` parameters (by position) each product block multiplies."""
    if products == "off" or sized < 2:
        return []
    pairs: list[tuple[int, ...]] = [(i, j) for i in range(sized) for j in range(i + 1, sized)]
    whole: list[tuple[int, ...]] = [tuple(range(sized))] if sized > 2 else []
    if products == "all" or sized > MAX_PRODUCT_PARAMS:
        return whole or pairs
    return pairs + whole if products == "both" else pairs


@dataclass(frozen=True)
class Product:
    """A derived product block: the scaled log of the product of some listed parameters' values."""

    #: (source column, ascending listed features, log of each listed value) per factor
    factors: tuple[tuple[int, NDArray[np.float64], NDArray[np.float64]], ...]

    @property
    def low(self) -> float:
        """Smallest log product (of every factor's smallest value)."""
        return float(sum(logs[0] for _, _, logs in self.factors))

    @property
    def span(self) -> float:
        """Largest minus smallest log product."""
        return float(sum(logs[-1] - logs[0] for _, _, logs in self.factors))

    def spacing(self) -> float:
        """Smallest step of the scaled feature: the smallest gap of one factor's log values."""
        return float(min(np.diff(logs).min() for _, _, logs in self.factors)) / self.span

    def values(self, nearest: dict[int, NDArray[np.intp]]) -> NDArray[np.float64]:
        """The scaled feature of every row, given each source column's listed position per row."""
        total = sum(logs[nearest[column]] for column, _, logs in self.factors)
        return (np.asarray(total, dtype=np.float64) - self.low) / self.span


def _nearest(raw: NDArray[np.float64], listed: NDArray[np.float64]) -> NDArray[np.intp]:
    """Index of the listed feature nearest to each raw feature."""
    above = np.searchsorted(listed, raw).clip(1, len(listed) - 1)
    return np.where(raw - listed[above - 1] <= listed[above] - raw, above - 1, above)


@dataclass(frozen=True)
class Encoding:
    """The modelled blocks of a space and how permutations are compared."""

    space: Space
    blocks: tuple[FeatureBlock, ...]
    permutation_distance: PermutationDistance
    #: (feature column, ascending features of the listed values) per ordinal parameter
    ordinals: tuple[tuple[int, NDArray[np.float64]], ...] = ()
    #: (source column, ascending listed features, power-of-two flag per listed value) per derived
    #: block; derived blocks are the last ones of ``blocks``, their columns follow the space's own
    derived: tuple[tuple[int, NDArray[np.float64], NDArray[np.float64]], ...] = ()
    #: product blocks (option ``products``), the last blocks, in the columns after the flags'
    products: tuple[Product, ...] = ()

    @classmethod
    def of(
        cls,
        space: Space,
        permutation_distance: PermutationDistance = "spearman",
        *,
        ordinal: bool = True,
        power_of_two: bool = False,
        products: ProductKind = "off",
    ) -> Encoding:
        """Model every parameter of ``space`` that can take more than one value.

        ``power_of_two`` adds the derived power-of-two blocks described in the module docstring
        (off here; the ``bo`` strategy's option of that name turns it on by default), ``products``
        the product blocks described there.
        """
        active = tuple(b for b in space.feature_blocks if not _is_constant(space, b))
        if not active:
            # A space of one configuration: keep one block so models stay well-defined.
            active = space.feature_blocks[:1]
        # (block, ascending features of its listed values) per explicit numeric list
        lists = [
            (block, listed)
            for block in active
            if block.kind == "numeric"
            and (listed := _listed_feature_values(space.params[block.name])) is not None
        ]
        ordinals = tuple((block.columns.start, listed) for block, listed in lists) if ordinal else ()
        width = max(b.columns.stop for b in space.feature_blocks)
        derived: list[tuple[int, NDArray[np.float64], NDArray[np.float64]]] = []
        extra: list[FeatureBlock] = []
        for block, listed in lists if power_of_two else ():
            flags = _power_of_two_flags(space.params[block.name])
            if flags is not None:
                column = width + len(derived)
                derived.append((block.columns.start, listed, flags))
                extra.append(FeatureBlock(block.name, "categorical", slice(column, column + 1), 2))
        sized = [
            (block, listed, logs)
            for block, listed in lists
            if (logs := _log_sizes(space.params[block.name])) is not None
        ]
        made: list[Product] = []
        for group in _product_groups(len(sized), products):
            column = width + len(derived) + len(made)
            made.append(Product(tuple((sized[i][0].columns.start, sized[i][1], sized[i][2]) for i in group)))
            name = "*".join(sized[i][0].name for i in group)
            extra.append(FeatureBlock(name, "numeric", slice(column, column + 1)))
        return cls(space, active + tuple(extra), permutation_distance, ordinals, tuple(derived), tuple(made))

    def restricted(self, names: Sequence[str]) -> Encoding:
        """The same encoding modelling only the parameters ``names`` (and their derived blocks).

        A transfer source that sets only some of the target's parameters is modelled on those.
        """
        kept = tuple(b for b in self.blocks if set(b.name.split("*")) <= set(names))
        # ``derived`` stays whole, so that the features (and their columns) are the same as here.
        return replace(self, blocks=kept or self.blocks[:1])

    @property
    def dimension(self) -> int:
        """Number of modelled blocks: the parameters, then the derived power-of-two flags and products."""
        return len(self.blocks)

    @property
    def parameter_count(self) -> int:
        """Number of modelled parameters (derived blocks, in the columns after the space's, not counted)."""
        width = max(b.columns.stop for b in self.space.feature_blocks)
        return sum(b.columns.start < width for b in self.blocks)

    def features(self, points: Points) -> NDArray[np.float64]:
        """Model features of ``points``: the space's columns, ordinal ones replaced by positions,
        then one column per derived power-of-two flag, then one per product."""
        features = np.array(self.space.features(points), dtype=np.float64, order="C")
        # Position of each row's value in its list, once per listed column (all derived blocks share it).
        lists = {**dict(self.ordinals), **{column: listed for column, listed, _ in self.derived}}
        lists.update((column, listed) for p in self.products for column, listed, _ in p.factors)
        nearest = {column: _nearest(features[:, column], listed) for column, listed in lists.items()}
        extra = [flags[nearest[column]] for column, _, flags in self.derived]
        extra.extend(product.values(nearest) for product in self.products)
        if extra:
            features = np.concatenate([features, np.stack(extra, 1)], 1)
        for column, listed in self.ordinals:
            features[:, column] = nearest[column] / (len(listed) - 1)
        return features

    def grid_spacing(self) -> NDArray[np.float64]:
        """Per modelled block, the smallest gap between two of its encoded values (0: no grid).

        Numeric parameters with a finite list of values have one (an ordinal
        position has ``1 / (n - 1)``); continuous, categorical and permutation
        blocks report 0, and so do the power-of-two flags; a product block reports its smallest
        step. The surrogate keeps lengthscales from shrinking far
        below it: shorter, neighbouring values would look unrelated, and the
        model would treat an ordered parameter like a categorical one.
        """
        ordinal_columns = dict(self.ordinals)
        spacing = np.zeros(len(self.blocks), dtype=np.float64)
        for i, block in enumerate(self.blocks[: self.parameter_count]):
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
        first = max(b.columns.stop for b in self.space.feature_blocks) + len(self.derived)
        for i, block in enumerate(self.blocks):
            if block.columns.start >= first:  # a product block, in the columns after the flags
                spacing[i] = self.products[block.columns.start - first].spacing()
        return spacing

    def discrete_blocks(self) -> list[slice]:
        """Feature columns of each modelled block with finitely many values (not continuous)."""
        parameters, derived = self.blocks[: self.parameter_count], self.blocks[self.parameter_count :]
        discrete = [b for b in parameters if not self.space.params[b.name].is_continuous]
        return [b.columns for b in (*discrete, *derived)]

    def active_columns(self) -> NDArray[np.int64]:
        """Feature columns of the modelled blocks (for models that take plain columns)."""
        cols = [np.arange(b.columns.start, b.columns.stop) for b in self.blocks]
        return np.concatenate(cols).astype(np.int64)

    def make_block_distances(self) -> list[BlockDistance]:
        """One distance module per modelled block (imports torch)."""
        from pytest_autotune.strategies.bo.model import kernels

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
