"""Covariance over mixed parameter kinds: per-kind distances in one Matern-5/2 kernel.

Each tuning parameter is one *block* of the feature matrix (see
:class:`~pytest_autotune.space.base.FeatureBlock`) and gets one lengthscale.
A block module turns its raw feature columns into a squared distance between
configurations, normalised to at most 1:

* :class:`NumericDistance` - squared difference of the unit-scaled value;
* :class:`CategoricalDistance` - 0 when equal, 1 otherwise (Hamming);
* :class:`SpearmanDistance` - sum of squared position differences;
* :class:`KendallDistance` - number of item pairs ordered differently;
* :class:`HammingPermutationDistance` - number of items at different positions;
* :class:`PermutationMatchDistance` - a permutation as one category (ablation).

:class:`MixedMaternKernel` (a gpytorch kernel) combines them as BaCO does,
``r^2 = sum_b d_b(x, x') / l_b^2``, into the Matern-5/2 function of ``r``.
Every block distance above is a squared Euclidean distance between fixed
embeddings of the configurations (the value itself, a one-hot code, the
positions, pair-order indicators, item-position indicators), so the combined
kernel is a Matern-5/2 ARD kernel on an embedding with tied lengthscales and
therefore positive semi-definite. The embeddings also make the kernel fast:
all embedded blocks are scaled by their lengthscale and compared in a single
matrix product. Blocks without a compact embedding (a permutation compared as
a single category) add their distance matrix directly.

These modules are written here because gpytorch has no kernel over
permutations or tied per-parameter lengthscales over mixed encodings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from pytest_autotune.strategies.bo.model._gpytorch import gpytorch

__all__ = [
    "BlockDistance",
    "CategoricalDistance",
    "EqualityKernel",
    "HammingPermutationDistance",
    "KendallDistance",
    "MixedMaternKernel",
    "NumericDistance",
    "PermutationMatchDistance",
    "SpearmanDistance",
    "matern52",
]

SQRT5 = math.sqrt(5.0)


def matern52(sq_dist: torch.Tensor) -> torch.Tensor:
    """Matern-5/2 correlation of squared scaled distances ``r^2``.

    ``(1 + s r + s^2 r^2 / 3) exp(-s r)`` with ``s = sqrt 5``.
    """
    r = sq_dist.clamp_min(1e-36).sqrt() * SQRT5
    return (1.0 + r + r * r / 3.0) * torch.exp(-r)


class BlockDistance(torch.nn.Module):
    """Squared distance (normalised to [0, 1]) between configurations on one parameter.

    ``columns`` selects the block's raw feature columns. A subclass either
    defines :meth:`embed` (the distance is the squared Euclidean distance of
    embeddings) or overrides :meth:`sq_dist` directly and sets
    ``embeddable = False``.
    """

    embeddable: bool = True

    def __init__(self, columns: slice) -> None:
        super().__init__()
        self.columns = columns

    def raw(self, x: torch.Tensor) -> torch.Tensor:
        """The block's raw feature columns of ``x`` (shape (..., n, width))."""
        return x[..., self.columns]

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Embedding whose squared Euclidean distances are this block's distances."""
        raise NotImplementedError(f"{type(self).__name__} has no embedding")

    def sq_dist(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        """Squared distances between rows of ``x1`` and rows of ``x2`` (shape (..., n1, n2))."""
        e1, e2 = self.embed(x1), self.embed(x2)
        return _sq_euclidean(e1, e2)

    def sq_dist_diag(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        """Squared distances between row ``i`` of ``x1`` and row ``i`` of ``x2`` (shape (..., n))."""
        return (self.embed(x1) - self.embed(x2)).pow(2).sum(-1)


def _sq_euclidean(e1: torch.Tensor, e2: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between rows (one matrix product, clamped at 0)."""
    n1 = (e1 * e1).sum(-1, keepdim=True)
    n2 = (e2 * e2).sum(-1, keepdim=True)
    return (n1 - 2.0 * e1 @ e2.transpose(-1, -2) + n2.transpose(-1, -2)).clamp_min(0.0)


class NumericDistance(BlockDistance):
    """``(x - x')^2`` of a value already scaled to [0, 1] (log-scaled where the space says)."""

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.raw(x)


class CategoricalDistance(BlockDistance):
    """Hamming distance of one categorical value: 0 when equal, else 1 (one-hot / sqrt 2)."""

    def __init__(self, columns: slice, n_categories: int) -> None:
        super().__init__(columns)
        if n_categories < 1:
            raise ValueError(f"CategoricalDistance: n_categories={n_categories} must be positive")
        self.n_categories = n_categories

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        codes = self.raw(x)[..., 0].round().long().clamp(0, self.n_categories - 1)
        onehot = torch.nn.functional.one_hot(codes, self.n_categories).to(x.dtype)
        return onehot / math.sqrt(2.0)


class _PermutationDistance(BlockDistance):
    """Base of permutation distances: raw columns hold the position of each item."""

    def __init__(self, columns: slice) -> None:
        super().__init__(columns)
        self.n_items = int(columns.stop - columns.start)


class SpearmanDistance(_PermutationDistance):
    """Spearman's distance ``sum_i (pos_i - pos'_i)^2`` divided by its maximum ``n (n^2 - 1) / 3``."""

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        n = self.n_items
        scale = math.sqrt(n * (n * n - 1) / 3.0) if n > 1 else 1.0
        return self.raw(x) / scale


class KendallDistance(_PermutationDistance):
    """Kendall's distance: item pairs in opposite order, divided by ``n (n - 1) / 2``.

    Embedding: one indicator per item pair ``i < j`` telling whether ``i``
    comes before ``j``; two orderings differ in exactly the discordant pairs.
    """

    first: torch.Tensor
    second: torch.Tensor

    def __init__(self, columns: slice) -> None:
        super().__init__(columns)
        first, second = torch.triu_indices(self.n_items, self.n_items, offset=1)
        self.register_buffer("first", first, persistent=False)
        self.register_buffer("second", second, persistent=False)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        positions = self.raw(x)
        pairs = max(1, self.n_items * (self.n_items - 1) // 2)
        before = (positions[..., self.first] < positions[..., self.second]).to(x.dtype)
        return before / math.sqrt(pairs)


class HammingPermutationDistance(_PermutationDistance):
    """Hamming distance of orderings: items at different positions, divided by ``n``.

    Embedding: the item-by-position one-hot matrix scaled by ``1 / sqrt(2 n)``.
    """

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        n = self.n_items
        positions = self.raw(x).round().long().clamp(0, n - 1)
        onehot = torch.nn.functional.one_hot(positions, n).to(x.dtype)
        return onehot.flatten(-2) / math.sqrt(2.0 * n)


class PermutationMatchDistance(_PermutationDistance):
    """A whole ordering as one category: 0 when identical, else 1 (ablation of the above)."""

    embeddable = False

    def sq_dist(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        p1 = self.raw(x1).unsqueeze(-2)
        p2 = self.raw(x2).unsqueeze(-3)
        return (p1 != p2).any(-1).to(x1.dtype)

    def sq_dist_diag(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        return (self.raw(x1) != self.raw(x2)).any(-1).to(x1.dtype)


class MixedMaternKernel(gpytorch.kernels.Kernel):  # type: ignore[misc]
    """Matern-5/2 kernel over per-parameter block distances, one lengthscale per block.

    ``k(x, x') = matern52(sum_b d_b(x, x') / l_b^2)``. Wrap it in a
    ``ScaleKernel`` for an output scale. The lengthscale prior and constraint
    are gpytorch's usual ``lengthscale_prior`` / ``lengthscale_constraint``.

    The embedding of the last input seen is memoised (by tensor identity and
    version): while hyperparameters are fitted the training inputs do not
    change, so only the lengthscale scaling is recomputed per evaluation.
    """

    has_lengthscale = True

    def __init__(self, blocks: Sequence[BlockDistance], **kwargs: object) -> None:
        if not blocks:
            raise ValueError("MixedMaternKernel needs at least one parameter block")
        super().__init__(ard_num_dims=len(blocks), **kwargs)
        self.blocks = torch.nn.ModuleList(blocks)
        self._block_list: list[BlockDistance] = list(blocks)
        self._embedded = [i for i, b in enumerate(blocks) if b.embeddable]
        self._direct = [i for i, b in enumerate(blocks) if not b.embeddable]
        self._memo: tuple[torch.Tensor, int, torch.Tensor, torch.Tensor] | None = None

    def _embedding(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """All embeddable blocks side by side, and the block index of every column."""
        memo = self._memo
        if memo is not None and memo[0] is x and memo[1] == x._version:
            return memo[2], memo[3]
        parts = [self._block_list[i].embed(x) for i in self._embedded]
        owner = torch.cat(
            [
                torch.full((p.shape[-1],), i, dtype=torch.long)
                for i, p in zip(self._embedded, parts, strict=True)
            ]
        )
        embedding = torch.cat(parts, -1)
        self._memo = (x, x._version, embedding, owner)
        return embedding, owner

    def scaled_sq_dist(self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False) -> torch.Tensor:
        """``sum_b d_b(x1, x2) / l_b^2``: shape (..., n1, n2), or (..., n) pairing rows when ``diag``."""
        lengthscale = self.lengthscale.reshape(-1)
        if diag:
            terms = [b.sq_dist_diag(x1, x2) / lengthscale[i] ** 2 for i, b in enumerate(self._block_list)]
            return torch.stack(terms, 0).sum(0)
        total: torch.Tensor | None = None
        if self._embedded:
            e2, owner = self._embedding(x2)
            e1 = e2 if x1 is x2 else torch.cat([self._block_list[i].embed(x1) for i in self._embedded], -1)
            inverse = (1.0 / lengthscale)[owner]
            z2 = e2 * inverse
            total = _sq_euclidean(z2 if x1 is x2 else e1 * inverse, z2)
        for i in self._direct:
            part = self._block_list[i].sq_dist(x1, x2) / lengthscale[i] ** 2
            total = part if total is None else total + part
        assert total is not None
        return total

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: object
    ) -> torch.Tensor:
        return matern52(self.scaled_sq_dist(x1, x2, diag=diag))


class EqualityKernel(gpytorch.kernels.Kernel):  # type: ignore[misc]
    """Additive kernel: the share of parameters (or of parameter pairs) on which two configurations agree.

    ``order=1``: ``k(x, x') = (1 / B) sum_b [x_b == x'_b]`` over the given
    blocks (each a slice of feature columns; a block agrees when all its
    columns are equal). Each term is the inner product of one-hot codes of
    the block's value, so the kernel is positive semi-definite. Added to the
    Matern kernel it gives every parameter value its own random effect,
    whatever the order of the values: the GP form of a ridge-regressed
    additive model, with the strength of the effects fitted as an output
    scale. It captures parameters whose good values are not neighbours (a
    work-group width of 64 or 128 fast, 48 or 80 between them ten times
    slower).

    ``order=2``: the share of block *pairs* on which both configurations
    agree, ``S (S - 1) / (B (B - 1))`` for ``S`` agreeing blocks: one random
    effect per pair of values (the second-order term of an additive GP,
    Duvenaud et al. 2011). A sum of products of the first-order indicator
    kernels, so positive semi-definite too. It lets the model blame a pair
    (a 4x4 tile spills registers) instead of each value alone (any tile
    height of 4 is slow).
    """

    def __init__(self, blocks: Sequence[slice], order: int = 1, **kwargs: object) -> None:
        if not blocks:
            raise ValueError("EqualityKernel needs at least one parameter block")
        if order not in (1, 2):
            raise ValueError(f"EqualityKernel order must be 1 or 2, got {order}")
        super().__init__(**kwargs)
        self.block_slices = list(blocks)
        self.order = order

    def agreements(self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False) -> torch.Tensor:
        """Number of blocks on which rows of ``x1`` and ``x2`` agree (the same for every order)."""
        total: torch.Tensor | None = None
        for columns in self.block_slices:
            a, b = x1[..., columns], x2[..., columns]
            same = (a == b).all(-1) if diag else (a.unsqueeze(-2) == b.unsqueeze(-3)).all(-1)
            part = same.to(x1.dtype)
            total = part if total is None else total + part
        assert total is not None
        return total

    def share(self, agreements: torch.Tensor) -> torch.Tensor:
        """The kernel value from :meth:`agreements`: the agreeing share of blocks or of block pairs."""
        count = len(self.block_slices)
        if self.order == 1:
            return agreements / count
        if count < 2:  # no pairs: the one block's agreement
            return agreements
        return agreements * (agreements - 1.0) / (count * (count - 1))

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: object
    ) -> torch.Tensor:
        return self.share(self.agreements(x1, x2, diag=diag))
