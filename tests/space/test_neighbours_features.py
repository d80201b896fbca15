"""Valid neighbours for local search (no walking through invalid values) and feature encoding."""

from __future__ import annotations

import math

import numpy as np

from pytest_autotune.space import Bool, Categorical, Interval, Permutation, Pow2, Real, Set, build_space


def _big_space() -> object:
    n = 2**20
    return build_space(
        {
            "WPT": Interval(1, n, where=lambda WPT: n % WPT == 0),
            "LS": Interval(1, n, where=lambda WPT, LS: (n // WPT) % LS == 0),
            "X": Interval(1, 2**30),
        }
    )


def test_neighbours_in_a_big_interval_space_are_the_nearest_valid_values() -> None:
    space = _big_space()
    point = space.to_points([{"WPT": 64, "LS": 16, "X": 1000}])  # type: ignore[attr-defined]
    found = space.configs(space.neighbours(point))  # type: ignore[attr-defined]
    assert sorted(found, key=repr) == sorted(
        [
            {"WPT": 32, "LS": 16, "X": 1000},
            {"WPT": 128, "LS": 16, "X": 1000},
            {"WPT": 64, "LS": 8, "X": 1000},
            {"WPT": 64, "LS": 32, "X": 1000},
            {"WPT": 64, "LS": 16, "X": 999},
            {"WPT": 64, "LS": 16, "X": 1001},
        ],
        key=repr,
    )


def test_local_search_over_neighbours_moves_to_the_optimum() -> None:
    space = _big_space()
    target = {"WPT": 512, "LS": 256, "X": 5000}

    def cost(config: dict[str, int]) -> float:
        return sum(abs(math.log2(config[k]) - math.log2(v)) for k, v in target.items())

    point = space.to_points([{"WPT": 1, "LS": 1, "X": 4990}])  # type: ignore[attr-defined]
    current = space.configs(point)[0]  # type: ignore[attr-defined]
    for _ in range(60):
        candidates = space.neighbours(point)  # type: ignore[attr-defined]
        configs = space.configs(candidates)  # type: ignore[attr-defined]
        assert space.contains(configs).all()  # type: ignore[attr-defined]
        best = min(range(len(configs)), key=lambda i: cost(configs[i]))
        if cost(configs[best]) >= cost(current):
            break
        point, current = candidates[best], configs[best]
    assert current == target


def test_categorical_and_permutation_neighbours() -> None:
    space = build_space(
        {"kind": Categorical("a", "b", "c"), "order": Permutation("xyz"), "flag": Bool()},
        [lambda kind, flag: kind != "c" or flag],
    )
    found = space.configs(
        space.neighbours(space.to_points([{"kind": "a", "order": ("x", "y", "z"), "flag": False}]))
    )
    kinds = {c["kind"] for c in found if c["order"] == ("x", "y", "z") and not c["flag"]}
    orders = {c["order"] for c in found if c["kind"] == "a" and not c["flag"]}
    assert kinds == {"b"}  # "c" needs the flag
    assert orders == {("y", "x", "z"), ("z", "y", "x"), ("x", "z", "y")}
    assert {"kind": "a", "order": ("x", "y", "z"), "flag": True} in found


def test_real_neighbours_step_a_tenth_of_the_range_and_stay_valid() -> None:
    space = build_space({"n": Interval(1, 3), "r": Real(0.0, 1.0)}, [lambda n, r: r < 0.55])
    found = space.configs(space.neighbours(space.to_points([{"n": 2, "r": 0.5}])))
    reals = sorted(c["r"] for c in found if c["n"] == 2)
    assert np.allclose(reals, [0.4])  # 0.6 violates r < 0.55


def test_features_numeric_log_categorical_permutation() -> None:
    space = build_space(
        {
            "lin": Interval(0, 10),
            "wide": Interval(1, 1000),
            "p2": Pow2(1, 256),
            "s": Set(2, 4, 8),
            "c": Categorical("u", "v"),
            "perm": Permutation("abc"),
            "r": Real(1.0, 1000.0),
        }
    )
    point = space.to_points(
        [{"lin": 5, "wide": 10, "p2": 16, "s": 8, "c": "v", "perm": ("c", "a", "b"), "r": 100.0}]
    )
    features = space.features(point)[0]
    expected = [0.5, 1 / 3, 0.5, 1.0, 1.0, 1.0, 2.0, 0.0, 2 / 3]
    assert np.allclose(features, expected)
    kinds = [b.kind for b in space.feature_blocks]
    assert kinds == ["numeric", "numeric", "numeric", "numeric", "categorical", "permutation", "numeric"]


def test_membership_is_strict_about_types_and_keys() -> None:
    space = build_space({"n": Interval(0, 8), "f": Bool(), "s": Set(1.5, 2.5)})
    configs = [
        {"n": 3, "f": True, "s": 1.5},
        {"n": 3.0, "f": False, "s": 2.5},
        {"n": np.int64(3), "f": np.bool_(True), "s": 2.5},
        {"n": True, "f": True, "s": 1.5},  # a bool is not an integer value
        {"n": 3, "f": 1, "s": 1.5},  # an integer is not a bool value
        {"n": 3, "f": True},  # missing key
        {"n": "3", "f": True, "s": 1.5},
        {"n": 9, "f": True, "s": 1.5},
        {"n": 3, "f": True, "s": 1.5, "extra": 1},
    ]
    expected = [space.declaration.is_valid(c) for c in configs]
    assert expected == [True, True, True, False, False, False, False, False, True]
    assert space.contains(configs).tolist() == expected


def test_neighbours_on_levels_too_wide_to_batch_match_the_oracle() -> None:
    from pytest_autotune.space.declaration import Declaration
    from pytest_autotune.space.trees.groups import BATCH_WIDTH
    from pytest_autotune.testing import BruteForceSpace

    def params() -> dict[str, object]:
        return {"a": Set(2, 3), "b": Interval(1, 2 * BATCH_WIDTH, where=lambda a, b: b % a == 0)}

    chain = build_space(params())  # type: ignore[arg-type]
    brute = BruteForceSpace(Declaration(params()))  # type: ignore[arg-type]
    assert chain.groups[0].tree.levels[-1].width > BATCH_WIDTH  # type: ignore[attr-defined]
    for config in [{"a": 2, "b": 2}, {"a": 3, "b": 300}, {"a": 3, "b": 3 * (2 * BATCH_WIDTH // 3)}]:
        ours = chain.configs(chain.neighbours(chain.to_points([config])))
        theirs = brute.configs(brute.neighbours(brute.to_points([config])))
        assert sorted(map(repr, ours)) == sorted(map(repr, theirs))
