"""Every bad declaration raises early with an error naming the parameter (or constraint) at fault."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pytest_autotune.space import (
    Bool,
    Categorical,
    ConstraintError,
    EmptySpaceError,
    Interval,
    Permutation,
    Pow2,
    Real,
    Set,
    SpaceError,
    build_space,
)


def test_unknown_name_in_a_where() -> None:
    with pytest.raises(ConstraintError, match="'WPTT'") as info:
        build_space({"WPT": Interval(1, 8), "LS": Interval(1, 8, where=lambda WPTT, LS: LS <= WPTT)})
    assert info.value.parameter == "LS"


def test_unknown_name_in_a_configuration_constraint() -> None:
    with pytest.raises(ConstraintError, match="'Z'"):
        build_space({"X": Interval(1, 8)}, [lambda X, Z: X < Z])


def test_unknown_name_in_a_restriction_string() -> None:
    with pytest.raises(ConstraintError, match="'Y'"):
        build_space({"X": Interval(1, 8)}, ["X % Y == 0"])


def test_constraint_cycle_names_a_parameter() -> None:
    with pytest.raises(ConstraintError, match="cycle") as info:
        build_space(
            {
                "A": Interval(1, 4, where=lambda A, B: A <= B),
                "B": Interval(1, 4, where=lambda A, B: B <= A),
            }
        )
    assert info.value.parameter in {"A", "B"}


@pytest.mark.parametrize(
    "make",
    [
        lambda: Interval(5, 1),
        lambda: Pow2(5, 7),
        lambda: Set(),
        lambda: Categorical(),
        lambda: Real(1.0, 1.0),
        lambda: Permutation([]),
    ],
    ids=["interval", "pow2", "set", "categorical", "real", "permutation"],
)
def test_empty_range(make: Callable[[], Any]) -> None:
    with pytest.raises(SpaceError, match=r"empty|at least one|needs"):
        make()


def test_empty_space_at_a_unary_where_names_the_parameter() -> None:
    with pytest.raises(EmptySpaceError, match="'X'") as info:
        build_space({"Y": Bool(), "X": Interval(1, 100, where=lambda X: X > 500)})
    assert info.value.parameter == "X"


def test_empty_space_names_the_level_where_it_became_empty() -> None:
    with pytest.raises(EmptySpaceError) as info:
        build_space(
            {
                "A": Interval(1, 10),
                "B": Interval(1, 10, where=lambda A, B: A + B > 30),
            }
        )
    assert info.value.parameter == "B"
    assert "'B'" in str(info.value)


def test_constraint_that_is_always_false() -> None:
    flag = False
    with pytest.raises(EmptySpaceError, match="false"):
        build_space({"A": Interval(1, 10)}, [lambda A: flag and A > 0])


def test_non_boolean_constraint_result_names_the_constraint() -> None:
    with pytest.raises(ConstraintError, match="not a boolean") as info:
        build_space({"X": Interval(1, 10, where=lambda X: X % 3)})
    assert info.value.parameter == "X"
    with pytest.raises(ConstraintError, match="not a boolean"):
        build_space({"X": Interval(1, 10), "Y": Interval(1, 4)}, [lambda X, Y: X * Y])


def test_constraint_raising_is_reported_with_the_configuration() -> None:
    with pytest.raises(ConstraintError, match="ZeroDivisionError") as info:
        build_space({"X": Interval(0, 10), "Y": Interval(1, 4, where=lambda X, Y: Y % X == 0)})
    assert info.value.parameter == "Y"


def test_guarded_division_by_zero_is_not_an_error() -> None:
    space = build_space({"X": Interval(0, 10), "Y": Interval(1, 4, where=lambda X, Y: X != 0 and Y % X == 0)})
    assert space.size == sum(1 for x in range(1, 11) for y in range(1, 5) if y % x == 0)


def test_default_outside_its_range() -> None:
    with pytest.raises(SpaceError, match="default 9"):
        Interval(1, 8, default=9)
    with pytest.raises(SpaceError, match="default"):
        Categorical("a", "b", default="c")


def test_default_violating_a_constraint_names_the_parameter() -> None:
    n = 64
    with pytest.raises(SpaceError, match="default") as info:
        build_space({"WPT": Interval(1, n, where=lambda WPT: n % WPT == 0, default=3)})
    assert info.value.parameter == "WPT"
    with pytest.raises(SpaceError, match="default") as info:
        build_space(
            {
                "A": Interval(1, 8, default=8),
                "B": Interval(1, 8, default=2, where=lambda A, B: B >= A),
            }
        )
    assert info.value.parameter in {"A", "B"}


def test_jointly_valid_defaults_are_accepted() -> None:
    space = build_space({"A": Interval(1, 8, default=4), "B": Interval(1, 8, where=lambda A, B: B >= A)})
    assert space.default_config() == {"A": 4, "B": 4}


def test_constrained_domain_too_large_to_enumerate() -> None:
    with pytest.raises(SpaceError, match="enumerated") as info:
        build_space({"X": Interval(1, 2**40, where=lambda X: X % 7 == 0)})
    assert info.value.parameter == "X"


def test_constrained_permutation_with_too_many_items() -> None:
    with pytest.raises(SpaceError, match="Permutation of 12 items") as info:
        build_space({"P": Permutation(range(12), where=lambda P: P[0] == 0)})
    assert info.value.parameter == "P"


def test_free_domain_beyond_int64_codes() -> None:
    with pytest.raises(SpaceError, match="at most") as info:
        build_space({"X": Interval(0, 2**70)})
    assert info.value.parameter == "X"


def test_parameter_object_reused_in_two_spaces_is_rejected() -> None:
    shared = Interval(1, 4)
    build_space({"A": shared})
    with pytest.raises(SpaceError, match="already"):
        build_space({"B": shared})


def test_invalid_configuration_passed_to_to_points_is_named() -> None:
    space = build_space({"A": Interval(1, 4), "B": Interval(1, 4, where=lambda A, B: B > A)})
    with pytest.raises(SpaceError, match="'B': 1"):
        space.to_points([{"A": 2, "B": 1}])


def test_guard_in_the_same_condition_level_is_honoured_for_scalar_only_constraints() -> None:
    # str() does not vectorise: scalar calls evaluate the second condition, which would raise
    # for a == b if the first condition did not exclude those pairs (as Python's `and` does).
    space = build_space(
        {"a": Interval(0, 6), "b": Interval(0, 6)},
        [lambda a, b: a != b and str(12 % (a - b)).startswith("0")],
    )
    assert space.size == sum(1 for a in range(7) for b in range(7) if a != b and 12 % (a - b) == 0)


def test_filter_keeping_too_many_values_is_refused_early(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_autotune.space.trees import domain

    monkeypatch.setattr(domain, "MAX_KEPT_VALUES", 1000)
    with pytest.raises(SpaceError, match="more than 1000 values") as info:
        build_space({"x": Interval(1, 10**6, where=lambda x: x % 2 == 0)})
    assert info.value.parameter == "x"
    assert build_space({"x": Interval(1, 10**6, where=lambda x: x > 0)}).size == 10**6  # all pass: lazy


def test_group_too_large_to_enumerate_names_the_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_autotune.space.trees import build

    monkeypatch.setattr(build, "MAX_LEVEL_NODES", 5000)
    with pytest.raises(SpaceError, match="more than 5000") as info:
        build_space({"a": Interval(1, 100), "b": Interval(1, 100, where=lambda a, b: a + b > 10)})
    assert info.value.parameter == "b"
    with pytest.raises(SpaceError, match="more than 5000") as info:
        build_space({"a": Interval(1, 10**4, where=lambda a: a > 0)})
    assert info.value.parameter == "a"
