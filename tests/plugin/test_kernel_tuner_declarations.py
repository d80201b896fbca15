"""Kernel Tuner's spellings of a search space, accepted by @tunable and @constraint.

Each habit a Kernel Tuner user brings (issue 27) is accepted and means what it means there, and
whatever is still refused says how to write it instead. The spaces are compared with the same
space written in pytest-autotune's own spelling: same configurations, and the same ``space_hash``
wherever the text is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_autotune import Categorical, Interval, Pow2, Set, constraint, tunable
from pytest_autotune.api import TunableSpec, get_spec
from pytest_autotune.policy import PolicyError
from pytest_autotune.space import build_space
from pytest_autotune.space.errors import ConstraintError, SpaceError

N = 1024


def _spec(fn: Any) -> TunableSpec:
    spec = get_spec(fn)
    assert spec is not None
    return spec


def _configs(spec: TunableSpec) -> list[dict[str, Any]]:
    space = spec.space
    return space.configs(space.at_index(list(range(space.size))))


# -- values -------------------------------------------------------------------------------------------
def test_plain_lists_of_values_are_sets_like_tune_params() -> None:
    @tunable(block_size_x=[64, 16, 32], tile=range(1, 4), mode=["fast", "exact"], arr=np.array([2, 4]))
    def test_lists(autotune: Any) -> None: ...

    @tunable(block_size_x=Set(16, 32, 64), tile=Set(1, 2, 3), mode=Set("fast", "exact"), arr=Set(2, 4))
    def test_sets(autotune: Any) -> None: ...

    lists, sets = _spec(test_lists), _spec(test_sets)
    assert [p.describe() for p in lists.params.values()] == [p.describe() for p in sets.params.values()]
    assert lists.space.space_hash == sets.space.space_hash
    assert lists.space.size == 3 * 3 * 2 * 2


def test_set_takes_one_list_as_its_values() -> None:
    assert Set([16, 32, 64]).describe() == Set(16, 32, 64).describe() == "Set(16, 32, 64)"
    assert Set(range(1, 4)).describe() == "Set(1, 2, 3)"
    assert Set(np.array([8, 2])).describe() == "Set(2, 8)"
    assert Categorical(["a", "b"]).describe() == "Categorical('a', 'b')"
    assert Categorical(("k", "i")).describe() == "Categorical(('k', 'i'))"  # a tuple is one value
    assert Set([(1, 2)]).describe() == "Set((1, 2))"  # one value, a tuple


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Set((16, 32)), "write Set(16, 32) or Set([16, 32]) for 2 values, or Set([(16, 32)])"),
        (lambda: Set([]), "Set() needs at least one value"),
        (lambda: Set([[1, 2]]), "value [1, 2] cannot be stored"),
    ],
)
def test_set_spellings_still_refused_say_what_to_write(make: Any, message: str) -> None:
    with pytest.raises(SpaceError) as info:
        make()
    assert message in str(info.value)


def test_refused_keywords_show_the_accepted_spellings() -> None:
    with pytest.raises(PolicyError) as info:

        @tunable(A=[1, 2], block_size_x=16)
        def test_scalar(autotune: Any) -> None: ...

    assert "keyword block_size_x=16 is neither a parameter kind" in str(info.value)
    assert "write block_size_x=[16] or block_size_x=Set(16) for a parameter with this one value" in str(
        info.value
    )
    with pytest.raises(PolicyError, match=r"write X=\[v1, v2, \.\.\.\] or X=Set\(v1, v2, \.\.\.\)"):

        @tunable(A=[1, 2], X={"a": 1})
        def test_dict(autotune: Any) -> None: ...

    with pytest.raises(SpaceError, match=r"@tunable on .*test_empty: parameter 'X': Set\(\) needs"):

        @tunable(X=[])
        def test_empty(autotune: Any) -> None: ...

    with pytest.raises(
        PolicyError, match="'restrictions' is a declaration keyword and cannot name a parameter"
    ):

        @tunable(restrictions=Interval(1, 3))
        def test_reserved(autotune: Any) -> None: ...


# -- restrictions --------------------------------------------------------------------------------------
def _reference() -> TunableSpec:
    @tunable(bx=Pow2(1, 64), by=Pow2(1, 64), tile=Interval(1, 4))
    @constraint(lambda bx, by: bx * by <= 256, "tile <= by")
    def test_reference(autotune: Any) -> None: ...

    return _spec(test_reference)


def test_restriction_lists_in_constraint_and_in_tunable() -> None:
    @tunable(bx=Pow2(1, 64), by=Pow2(1, 64), tile=Interval(1, 4))
    @constraint([lambda bx, by: bx * by <= 256, "tile <= by"])
    def test_listed(autotune: Any) -> None: ...

    @tunable(
        bx=Pow2(1, 64),
        by=Pow2(1, 64),
        tile=Interval(1, 4),
        restrictions=[lambda p: p["bx"] * p["by"] <= 256, "tile <= by"],
    )
    def test_keyword(autotune: Any) -> None: ...

    @tunable(bx=Pow2(1, 64), by=Pow2(1, 64), tile=Interval(1, 4), restrictions="tile <= by")
    @constraint(lambda bx, by: bx * by <= 256)
    def test_one(autotune: Any) -> None: ...

    expected = _configs(_reference())
    # by hand: per by = 1, 2, 4, ..., 64 the bx with bx*by <= 256 (7, 7, 7, 6, 5, 4, 3), times
    # min(by, 4) tiles: 7 + 14 + 28 + 24 + 20 + 16 + 12
    assert len(expected) == 121
    for fn in (test_listed, test_keyword, test_one):
        assert _configs(_spec(fn)) == expected


@pytest.mark.parametrize(
    ("given", "where"),
    [
        ([3], "@constraint: 3 is not a condition"),
        ([("bx", ["bx"])], "@constraint: ('bx', ['bx']) is not a condition"),
        ([[]], "@constraint got an empty list"),
        ([], "@constraint needs at least one condition"),
    ],
)
def test_refused_conditions_show_the_accepted_spellings(given: list[Any], where: str) -> None:
    with pytest.raises(TypeError) as info:
        constraint(*given)
    assert where in str(info.value)
    assert "a restriction string ('BX * BY <= 1024'), a callable reading parameters by name" in str(
        info.value
    )
    assert "the configuration as a dict (lambda p: p['BX'] * p['BY'] <= 1024), or a list of those" in str(
        info.value
    )
    with pytest.raises(TypeError, match=r"@tunable on .*test_bad: restrictions= 7 is not a condition"):

        @tunable(A=[1, 2], restrictions=[7])
        def test_bad(autotune: Any) -> None: ...


# -- dict-style callables ------------------------------------------------------------------------------
def test_dict_style_callables_read_the_parameters_they_index() -> None:
    space = build_space(
        {"x": Interval(1, 8), "y": Pow2(1, 64), "z": Interval(1, 3)},
        [lambda p: p["x"] * p["y"] <= N // 16, lambda x: x > 1],  # a parameter named x: read by name
    )
    dict_style, by_name = space.constraints
    assert dict_style.reads == ("x", "y")  # z is not read: it stays an independent group
    assert by_name.reads == ("x",)
    assert dict_style.source == 'lambda p: p["x"] * p["y"] <= N // 16 [N=1024]'  # hashed as written
    brute = [
        {"x": x, "y": y, "z": z}
        for x in range(2, 9)
        for y in (1, 2, 4, 8, 16, 32, 64)
        for z in (1, 2, 3)
        if x * y <= 64
    ]
    assert space.size == len(brute)
    assert space.contains(brute).all()


def test_dict_style_callables_that_use_the_dict_otherwise_read_everything() -> None:
    def restrict(config):  # as a Kernel Tuner user writes it
        total = 1
        for name in ("x", "y"):
            total *= config.get(name, 1)
        return total <= 16

    space = build_space({"x": Interval(1, 8), "y": Pow2(1, 8)}, [restrict])
    (condition,) = space.constraints
    assert condition.reads == ("x", "y")
    assert space.size == sum(1 for x in range(1, 9) for y in (1, 2, 4, 8) if x * y <= 16)


def test_a_where_may_take_the_dict_too() -> None:
    space = build_space({"x": Interval(1, 8), "y": Interval(1, 8, where=lambda p: p["y"] <= p["x"])})
    assert space.size == 36


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        (lambda WGP: WGP > 2, "reads unknown parameter 'WGP' (known: x, y); a callable that takes the whole "
         "configuration reads it as WGP['name']"),
        (lambda p: p["z"] > 1, "reads unknown parameter 'z' (as p['z']; known: x, y)"),
        (lambda x, q: x > q, "reads unknown parameter 'q' (known: x, y)"),
    ],
)  # fmt: skip
def test_dict_style_mistakes_are_named(condition: Any, message: str) -> None:
    with pytest.raises(ConstraintError) as info:
        build_space({"x": Interval(1, 4), "y": Interval(1, 4)}, [condition])
    assert message in str(info.value)
