"""Permutations as integers (Lehmer codes) and distances between them.

A permutation of ``n`` items is stored as its rank in ``[0, n!)`` (the
lexicographic order of the orderings), so permutation parameters of many items
are sampled and stored without enumerating ``n!`` orderings. ``n <= 20`` keeps
ranks in int64.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "permutation_count",
    "rank_permutation",
    "rank_permutations",
    "unrank_permutations",
]


def permutation_count(n: int) -> int:
    """Number of orderings of ``n`` distinct items."""
    return math.factorial(n)


def rank_permutation(order: list[int] | tuple[int, ...]) -> int:
    """Lexicographic rank of ``order`` (a permutation of ``range(n)``)."""
    n = len(order)
    rank = 0
    remaining = list(range(n))
    for i, item in enumerate(order):
        position = remaining.index(item)
        rank += position * math.factorial(n - 1 - i)
        remaining.pop(position)
    return rank


def rank_permutations(orders: NDArray[np.int64]) -> NDArray[np.int64]:
    """Vectorised :func:`rank_permutation` over rows of ``orders`` (shape (m, n))."""
    orders = np.asarray(orders, dtype=np.int64)
    m, n = orders.shape
    ranks = np.zeros(m, dtype=np.int64)
    for i in range(n):
        # Lehmer digit: how many later entries are smaller than this one.
        smaller_after = (orders[:, i + 1 :] < orders[:, i : i + 1]).sum(axis=1)
        ranks += smaller_after * math.factorial(n - 1 - i)
    return ranks


def unrank_permutations(ranks: NDArray[np.int64], n: int) -> NDArray[np.int64]:
    """Permutations of ``range(n)`` for an array of lexicographic ranks: shape (m, n)."""
    ranks = np.asarray(ranks, dtype=np.int64).copy()
    m = ranks.shape[0]
    available = np.tile(np.arange(n, dtype=np.int64), (m, 1))
    out = np.empty((m, n), dtype=np.int64)
    rows = np.arange(m)
    for i in range(n):
        base = math.factorial(n - 1 - i)
        digit = ranks // base
        ranks -= digit * base
        out[:, i] = available[rows, digit]
        # Remove the chosen element: shift the tail left by one.
        keep = np.ones((m, n - i), dtype=bool)
        keep[rows, digit] = False
        available = available[:, : n - i][keep].reshape(m, n - i - 1)
    return out
