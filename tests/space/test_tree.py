"""Structural invariants of the flat trees, and the level order and grouping chosen."""

from __future__ import annotations

import numpy as np

from pytest_autotune.space import Bool, Interval, Set, build_space
from pytest_autotune.space.chain import ChainSpace
from pytest_autotune.space.trees.groups import FreeGroup, TreeGroup


def _conv(w: int) -> ChainSpace:
    space = build_space(
        {
            "B_X": Interval(1, w, where=lambda B_X: w % B_X == 0),
            "T_X": Interval(1, w, where=lambda B_X, T_X: B_X % T_X == 0),
            "L_X": Interval(1, w, where=lambda B_X, T_X, L_X: (B_X // T_X) % L_X == 0 and L_X <= 16),
            "B_Y": Interval(1, w, where=lambda B_Y: w % B_Y == 0),
            "L_Y": Interval(1, w, where=lambda B_Y, L_Y, L_X: B_Y % L_Y == 0 and L_X * L_Y <= 32),
            "LMEM": Bool(where=lambda B_X, B_Y, LMEM: not LMEM or (B_X + 4) * (B_Y + 4) <= 400),
            "UNROLL": Bool(),
        }
    )
    assert isinstance(space, ChainSpace)
    return space


def test_flat_arrays_are_consistent() -> None:
    space = _conv(64)
    (tree_group, free) = space.groups
    assert isinstance(tree_group, TreeGroup)
    assert isinstance(free, FreeGroup)
    assert free.names == ("UNROLL",)
    tree = tree_group.tree
    for k, level in enumerate(tree.levels):
        assert np.all(np.diff(level.keys) > 0)  # sorted by (parent, value), no duplicates
        assert np.array_equal(level.keys, level.parent.astype(np.int64) * level.width + level.rank)
        assert np.all(np.diff(level.positions) > 0)
        assert np.all(level.leaves >= 1)  # dead ends were pruned
        if k + 1 < tree.depth:
            below = tree.levels[k + 1]
            counts = np.bincount(below.parent, minlength=len(level))
            assert np.array_equal(np.diff(level.child_start), counts)
            leaves = np.bincount(below.parent, weights=below.leaves).astype(np.int64)
            assert np.array_equal(leaves, level.leaves)
    assert int(tree.levels[0].leaves.sum()) == tree.n_leaves == tree_group.size
    assert space.size == 2 * tree.n_leaves


def test_atoms_are_split_and_evaluated_vectorised() -> None:
    space = _conv(64)
    plans = space.explain()
    assert "scalar" not in plans
    assert "L_X: L_X <= 16" in plans  # the conjunct became a unary filter
    assert "L_Y, L_X: L_X * L_Y <= 32" in plans


def test_independent_conjuncts_split_groups() -> None:
    # One constraint reads a, b and c, but its conjuncts couple only a-b; c is constrained alone.
    space = build_space(
        {"a": Interval(1, 8), "b": Interval(1, 8), "c": Set(1, 2, 3)},
        [lambda a, b, c: a <= b and c != 2],
    )
    assert isinstance(space, ChainSpace)
    assert [g.names for g in space.groups] == [("a", "b"), ("c",)]
    assert space.size == 36 * 2


def test_level_order_respects_where_dependencies_and_prunes_early() -> None:
    space = build_space(
        {
            "wide": Interval(1, 100, where=lambda narrow, wide: wide % narrow == 0),
            "narrow": Set(7, 11),
            "flag": Bool(where=lambda wide, flag: flag or wide < 50),
        }
    )
    (group,) = space.groups  # type: ignore[attr-defined]
    assert group.names == ("narrow", "wide", "flag")
    assert space.size == sum(
        1 for n in (7, 11) for w in range(1, 101) for f in (False, True) if w % n == 0 and (f or w < 50)
    )
