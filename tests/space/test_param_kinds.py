"""Each parameter kind owns its behaviour: features, bounds, constraint operands, moves, the unit
cube and the JSON round trip are methods of the kind, so a new kind is one class (issue 24)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

import pytest_autotune
from pytest_autotune import Tuner
from pytest_autotune.space import (
    Bool,
    Categorical,
    Interval,
    Param,
    Permutation,
    Pow2,
    Real,
    Set,
    build_space,
)
from pytest_autotune.space import params as params_package
from pytest_autotune.space.conditions.bounds import Operand
from pytest_autotune.space.errors import SpaceError
from pytest_autotune.space.params import to_python
from pytest_autotune.space.trees.domain import MAX_ENUMERATED_DOMAIN, MAX_PERMUTATION_ITEMS, check_enumerable
from pytest_autotune.testing.bruteforce import encode_value


def _discrete_kinds() -> list[Param]:
    return [
        Interval(1, 12),
        Interval(-6, 30, step=4),
        Interval(0, 6, generator=lambda i: 2**i),
        Pow2(1, 4096),
        Set(1, 2, 4, 8, 24, 48),
        Set(0.5, 1.5, 7.0),
        Set("lo", "hi"),
        Set(1, (2, 3), "x"),
        Categorical("a", "b", "c"),
        Bool(),
        Permutation(["i", "j", "k", "l"]),
    ]


def test_the_kinds_are_exported_from_the_package_and_from_pytest_autotune() -> None:
    for name in ("Bool", "Categorical", "Interval", "Permutation", "Pow2", "Real", "Set"):
        assert getattr(params_package, name) is getattr(pytest_autotune, name)


@pytest.mark.parametrize("param", _discrete_kinds(), ids=repr)
def test_position_features_match_the_scalar_reference(param: Param) -> None:
    positions = np.arange(param.size, dtype=np.int64)
    features = param.encode_positions(positions)
    assert features.shape == (param.size, param.feature_width)
    expected = [encode_value(param, v) for v in param.values()]
    np.testing.assert_allclose(features, np.array(expected), rtol=0, atol=1e-12)


@pytest.mark.parametrize("param", [p for p in _discrete_kinds() if p.is_numeric], ids=repr)
def test_bounds_are_the_smallest_and_largest_value(param: Param) -> None:
    values = param.values()
    assert param.bounds() == (float(values.min()), float(values.max()))


def test_feature_kinds_and_widths() -> None:
    kinds = {repr(p): (p.feature_kind, p.feature_width) for p in _discrete_kinds()}
    assert kinds["Interval(1, 12, step=1)"] == ("numeric", 1)
    assert kinds["Set('lo', 'hi')"] == ("categorical", 1)
    assert kinds["Bool()"] == ("categorical", 1)
    assert kinds["Permutation(['i', 'j', 'k', 'l'])"] == ("permutation", 4)
    assert (Real(0.0, 1.0).feature_kind, Real(0.0, 1.0).feature_width) == ("numeric", 1)


def test_real_values_are_scaled_in_log_space_when_log_scaled() -> None:
    linear, log = Real(0.0, 10.0), Real(0.01, 100.0)
    np.testing.assert_allclose(linear.encode_values(np.array([0.0, 5.0, 10.0])).ravel(), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(log.encode_values(np.array([0.01, 1.0, 100.0])).ravel(), [0.0, 0.5, 1.0])
    assert log.bounds() == (0.01, 100.0)
    assert log.ends().tolist() == [0.01, 100.0]


def test_listed_kinds_are_the_explicit_value_lists() -> None:
    listed = [Set(1, 2, 3), Categorical("a"), Bool(), Interval(0, 3, generator=lambda i: 3 * i)]
    unlisted = [Interval(0, 3), Pow2(1, 8), Real(0.0, 1.0), Permutation("ab")]
    assert [p.is_listed for p in listed + unlisted] == [True] * 4 + [False] * 4


def test_operands_describe_the_values_for_the_constraint_analysis() -> None:
    assert Interval(-6, 30, step=4).operand() == Operand("int", 30)
    assert Interval(0, 6, generator=lambda i: 2**i).operand() == Operand("int", 64)
    assert Pow2(1, 5000).operand() == Operand("int", 4096)
    assert Set(1, 2**70).operand() == Operand("int", 2**70)
    assert Set(0.5, 2.0).operand() == Operand("float")
    assert Bool().operand() == Operand("bool", 1)
    assert Set("a", "b").operand() == Operand("other")
    assert Real(0.0, 1.0).operand() == Operand("float")
    assert Permutation("abc").operand() == Operand("other")


def test_only_permutations_have_moves_of_their_own() -> None:
    perm = Permutation(["a", "b", "c"])
    here = perm.index_of(("a", "b", "c"))
    assert here is not None
    moves = perm.neighbour_positions(here)
    assert sorted(perm.values_at(moves).tolist()) == [("a", "c", "b"), ("b", "a", "c"), ("c", "b", "a")]
    assert Permutation(["a"]).neighbour_positions(0).tolist() == []
    assert all(p.neighbour_positions(0) is None for p in _discrete_kinds() if p.feature_kind != "permutation")


@pytest.mark.parametrize("param", _discrete_kinds(), ids=repr)
def test_unit_coordinates_round_trip(param: Param) -> None:
    values = param.values()
    u = param.unit_from_values(list(values))
    back = param.values_from_unit(u)
    assert [param.index_of(v) for v in back] == list(range(param.size))
    assert param.values_from_unit(np.array([1e-12, 1.0])).tolist() == param.ends().tolist()


def test_real_unit_coordinates_round_trip() -> None:
    for param in (Real(0.0, 10.0), Real(0.001, 10.0)):
        x = param.values_from_unit(np.linspace(0, 1, 7))
        np.testing.assert_allclose(param.unit_from_values(x), np.linspace(0, 1, 7), atol=1e-12)


@pytest.mark.parametrize("param", _discrete_kinds(), ids=repr)
def test_values_round_trip_through_json(param: Param) -> None:
    for value in param.values():
        text = json.dumps(param.to_json(value))
        back = param.from_json(json.loads(text))
        assert param.index_of(back) == param.index_of(value)
        assert (back, type(back)) == (to_python(value), type(to_python(value)))


def test_each_kind_knows_its_enumeration_limit() -> None:
    with pytest.raises(SpaceError, match=f"at most {MAX_PERMUTATION_ITEMS} items"):
        check_enumerable("P", Permutation(list(range(MAX_PERMUTATION_ITEMS + 1))))
    check_enumerable("P", Permutation(list(range(MAX_PERMUTATION_ITEMS))))
    with pytest.raises(SpaceError, match=f"at most {MAX_ENUMERATED_DOMAIN} values"):
        check_enumerable("X", Interval(0, MAX_ENUMERATED_DOMAIN))


class Odd(Param):
    """A kind defined outside the package: the odd numbers in ``[1, 2 * count - 1]``."""

    kind = "odd"
    is_ordered = True

    def __init__(self, count: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.count = count

    @property
    def size(self) -> int:
        return self.count

    def values(self, start: int = 0, stop: int | None = None) -> NDArray[Any]:
        stop = self.count if stop is None else min(stop, self.count)
        return 1 + 2 * np.arange(max(0, start), stop, dtype=np.int64)

    def index_of(self, value: Any) -> int | None:
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value % 2 == 1:
            index = (int(value) - 1) // 2
            return index if 0 <= index < self.count else None
        return None

    def describe(self) -> str:
        return f"Odd({self.count})"


@pytest.mark.parametrize("strategy", ["random", "local", "bo"])
def test_a_new_kind_is_one_class(strategy: str) -> None:
    """A kind the space modules have never heard of works in constraints, features and strategies."""
    space = build_space({"A": Odd(20), "B": Pow2(1, 64), "C": Odd(6)}, ["A * B <= 200", "A != C"])
    assert [b.kind for b in space.feature_blocks] == ["numeric", "numeric", "numeric"]
    configs = space.configs(space.sample(50, np.random.default_rng(0)))
    assert all(c["A"] % 2 == 1 and c["A"] * c["B"] <= 200 and c["A"] != c["C"] for c in configs)
    features = space.features(space.to_points(configs))
    assert 0.0 <= features.min() <= features.max() <= 1.0
    point = space.to_points([{"A": 5, "B": 8, "C": 1}])
    assert {"A": 3, "B": 8, "C": 1} in space.configs(space.neighbours(point))
    result = Tuner(space, strategy, abort=15, seed=1).run(lambda c: abs(c["A"] - 7) + c["B"] / 64 + c["C"])
    assert result.best_value is not None
