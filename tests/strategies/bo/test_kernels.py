"""Block distances match hand-computed values; every kernel matrix is positive semi-definite."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from pytest_autotune.strategies.bo.model.kernels import (
    BlockDistance,
    CategoricalDistance,
    EqualityKernel,
    HammingPermutationDistance,
    KendallDistance,
    MixedMaternKernel,
    NumericDistance,
    PermutationMatchDistance,
    SpearmanDistance,
    matern52,
)

torch.set_default_dtype(torch.float64)


def positions(order: tuple[int, ...]) -> list[float]:
    """Raw permutation features: column i holds the position of item i."""
    pos = [0.0] * len(order)
    for place, item in enumerate(order):
        pos[item] = float(place)
    return pos


def pair_distance(block: BlockDistance, a: list[float], b: list[float]) -> float:
    x = torch.tensor([a, b])
    return float(block.sq_dist(x, x)[0, 1])


# (order a, order b, Spearman sum of squares, Kendall discordant pairs, Hamming mismatches), n = 4
PERMUTATION_CASES = [
    ((0, 1, 2, 3), (0, 1, 2, 3), 0, 0, 0),
    ((0, 1, 2, 3), (1, 0, 2, 3), 2, 1, 2),
    ((0, 1, 2, 3), (3, 2, 1, 0), 20, 6, 4),
    ((0, 1, 2, 3), (1, 2, 3, 0), 12, 3, 4),
    ((2, 0, 3, 1), (0, 2, 1, 3), 4, 2, 4),
    ((0, 1, 2, 3), (0, 2, 1, 3), 2, 1, 2),
    ((0, 1, 2, 3), (2, 1, 0, 3), 8, 3, 2),
]


@pytest.mark.parametrize(("a", "b", "spearman", "kendall", "hamming"), PERMUTATION_CASES)
def test_permutation_distances_match_hand_computed(
    a: tuple[int, ...], b: tuple[int, ...], spearman: int, kendall: int, hamming: int
) -> None:
    cols = slice(0, 4)
    pa, pb = positions(a), positions(b)
    # Normalisers: n(n^2-1)/3 = 20, n(n-1)/2 = 6, n = 4.
    assert pair_distance(SpearmanDistance(cols), pa, pb) == pytest.approx(spearman / 20)
    assert pair_distance(KendallDistance(cols), pa, pb) == pytest.approx(kendall / 6)
    assert pair_distance(HammingPermutationDistance(cols), pa, pb) == pytest.approx(hamming / 4)
    assert pair_distance(PermutationMatchDistance(cols), pa, pb) == (0.0 if a == b else 1.0)


def test_permutation_distances_reach_one_at_the_reversal() -> None:
    cols = slice(0, 5)
    identity, reverse = positions((0, 1, 2, 3, 4)), positions((4, 3, 2, 1, 0))
    assert pair_distance(SpearmanDistance(cols), identity, reverse) == pytest.approx(1.0)
    assert pair_distance(KendallDistance(cols), identity, reverse) == pytest.approx(1.0)


def test_numeric_and_categorical_distances() -> None:
    numeric = NumericDistance(slice(0, 1))
    assert pair_distance(numeric, [0.25], [0.75]) == pytest.approx(0.25)
    categorical = CategoricalDistance(slice(0, 1), n_categories=3)
    assert pair_distance(categorical, [2.0], [2.0]) == 0.0
    assert pair_distance(categorical, [0.0], [2.0]) == pytest.approx(1.0)


def test_diagonal_path_matches_the_full_matrix() -> None:
    blocks = mixed_blocks()
    kernel = MixedMaternKernel(blocks)
    kernel.lengthscale = torch.tensor([[0.3, 0.7, 0.5, 0.9]])
    x1, x2 = random_features(7, seed=1), random_features(7, seed=2)
    full = kernel.forward(x1, x2).diagonal()
    assert torch.allclose(kernel.forward(x1, x2, diag=True), full)


def mixed_blocks(permutation: type[BlockDistance] = SpearmanDistance) -> list[BlockDistance]:
    """Columns: 0 numeric, 1 categorical (5 values), 2-5 a permutation of 4 items, 6 numeric."""
    return [
        NumericDistance(slice(0, 1)),
        CategoricalDistance(slice(1, 2), n_categories=5),
        permutation(slice(2, 6)),
        NumericDistance(slice(6, 7)),
    ]


def random_features(n: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    orders = list(itertools.permutations(range(4)))
    rows = []
    for _ in range(n):
        order = orders[rng.integers(len(orders))]
        rows.append([rng.random(), float(rng.integers(5)), *positions(order), rng.random()])
    return torch.tensor(rows)


@pytest.mark.parametrize(
    "permutation",
    [SpearmanDistance, KendallDistance, HammingPermutationDistance, PermutationMatchDistance],
)
@pytest.mark.parametrize("lengthscale", [0.05, 0.5, 5.0])
def test_kernel_matrices_are_positive_semidefinite(
    permutation: type[BlockDistance], lengthscale: float
) -> None:
    kernel = MixedMaternKernel(mixed_blocks(permutation))
    kernel.lengthscale = torch.full((1, 4), lengthscale)
    x = random_features(60, seed=3)  # with repeated rows: the matrix is singular, still PSD
    k = kernel.forward(x, x).detach()
    assert torch.allclose(k, k.T)
    assert torch.allclose(k.diagonal(), torch.ones(60))
    assert float(torch.linalg.eigvalsh(k).min()) > -1e-9


@pytest.mark.parametrize(
    "block",
    [
        NumericDistance(slice(0, 1)),
        CategoricalDistance(slice(0, 1), n_categories=4),
        SpearmanDistance(slice(0, 4)),
        KendallDistance(slice(0, 4)),
        HammingPermutationDistance(slice(0, 4)),
        PermutationMatchDistance(slice(0, 4)),
    ],
)
def test_each_kind_alone_gives_a_psd_kernel(block: BlockDistance) -> None:
    rng = np.random.default_rng(4)
    width = block.columns.stop
    if isinstance(block, NumericDistance):
        x = torch.tensor(rng.random((40, 1)))
    elif isinstance(block, CategoricalDistance):
        x = torch.tensor(rng.integers(0, 4, (40, 1)).astype(float))
    else:
        x = torch.tensor([positions(tuple(rng.permutation(width).tolist())) for _ in range(40)])
    kernel = MixedMaternKernel([block])
    kernel.lengthscale = torch.tensor([[0.4]])
    eigenvalues = torch.linalg.eigvalsh(kernel.forward(x, x).detach())
    assert float(eigenvalues.min()) > -1e-9


def test_matern52_values() -> None:
    # k(r) = (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r); r = 1 -> 0.5239941088
    assert float(matern52(torch.tensor(1.0))) == pytest.approx(0.5239941088, rel=1e-9)
    assert float(matern52(torch.tensor(0.0))) == pytest.approx(1.0)


def test_lengthscale_gradient_is_finite_on_duplicates() -> None:
    kernel = MixedMaternKernel(mixed_blocks())
    x = random_features(10, seed=5)
    x = torch.cat([x, x[:3]])
    kernel.forward(x, x).sum().backward()
    grad = kernel.raw_lengthscale.grad
    assert grad is not None
    assert bool(torch.isfinite(grad).all())


def test_equality_kernel_counts_agreeing_parameters() -> None:
    # Blocks: column 0 (numeric), column 1 (categorical code), columns 2-5 (a permutation).
    kernel = EqualityKernel([slice(0, 1), slice(1, 2), slice(2, 6)])
    a = [0.25, 1.0, *positions((0, 1, 2, 3))]
    b = [0.25, 2.0, *positions((0, 1, 2, 3))]  # differs in the category only
    c = [0.5, 2.0, *positions((1, 0, 2, 3))]  # differs everywhere from a
    x = torch.tensor([a, b, c])
    k = kernel.forward(x, x)
    assert k[0, 1] == pytest.approx(2 / 3)
    assert k[0, 2] == pytest.approx(0.0)
    assert k[1, 2] == pytest.approx(1 / 3)
    assert torch.allclose(k.diagonal(), torch.ones(3))
    assert torch.allclose(kernel.forward(x, x.flip(0), diag=True), k.flip(1).diagonal())


def test_equality_kernel_is_positive_semidefinite() -> None:
    kernel = EqualityKernel([slice(0, 1), slice(1, 2), slice(2, 6), slice(6, 7)])
    x = random_features(50, seed=6)
    x[:, 0] = torch.round(x[:, 0] * 4) / 4  # repeated numeric values, as on a grid
    x = torch.cat([x, x[:5]])  # duplicated rows
    k = kernel.forward(x, x)
    assert torch.allclose(k, k.T)
    assert float(torch.linalg.eigvalsh(k).min()) > -1e-9


def test_pair_equality_kernel_counts_agreeing_pairs() -> None:
    # Four one-column blocks: S agreeing blocks make S (S - 1) / 2 agreeing pairs out of 6.
    kernel = EqualityKernel([slice(i, i + 1) for i in range(4)], order=2)
    a = [0.0, 1.0, 2.0, 3.0]
    b = [0.0, 1.0, 2.0, 9.0]  # 3 blocks agree: 3 of 6 pairs
    c = [0.0, 1.0, 7.0, 9.0]  # 2 blocks agree with a: 1 pair
    d = [5.0, 6.0, 7.0, 8.0]  # none agrees with a
    x = torch.tensor([a, b, c, d])
    k = kernel.forward(x, x)
    assert k[0, 1] == pytest.approx(3 / 6)
    assert k[0, 2] == pytest.approx(1 / 6)
    assert k[1, 2] == pytest.approx(3 / 6)  # b and c share columns 0, 1 and 3
    assert k[0, 3] == pytest.approx(0.0)
    assert torch.allclose(k.diagonal(), torch.ones(4))
    assert torch.allclose(kernel.forward(x, x.flip(0), diag=True), k.flip(1).diagonal())


def test_pair_equality_kernel_is_positive_semidefinite() -> None:
    kernel = EqualityKernel([slice(0, 1), slice(1, 2), slice(2, 6), slice(6, 7)], order=2)
    x = random_features(50, seed=7)
    x[:, 0] = torch.round(x[:, 0] * 3) / 3
    x[:, 6] = torch.round(x[:, 6] * 2) / 2
    x = torch.cat([x, x[:5]])
    k = kernel.forward(x, x)
    assert torch.allclose(k, k.T)
    assert float(torch.linalg.eigvalsh(k).min()) > -1e-9


def test_equality_kernel_order_is_checked() -> None:
    with pytest.raises(ValueError, match="order must be 1 or 2"):
        EqualityKernel([slice(0, 1)], order=3)
