"""Vectorised constraint evaluation: same answers as scalar calls, safe dtypes, closures, sources."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_autotune.space import Bool, Interval, Set, build_space
from pytest_autotune.space.chain import ChainSpace
from pytest_autotune.space.conditions.constraints import Constraint
from pytest_autotune.space.conditions.vectorize import Atom, split_constraint
from pytest_autotune.space.declaration import Declaration
from pytest_autotune.testing import BruteForceSpace

# -- random constraint sets: the vectorised build equals the scalar (brute-force) build -----------

POSITIVE = ("a", "b")  # never zero: safe divisors
NAMES = ("a", "b", "c", "d")
CONSTANTS = (0, 1, 2, 3, 7, -2, 2**31, 2**40, 2**62)


def _params() -> dict[str, Any]:
    return {"a": Interval(1, 6), "b": Set(1, 2, 4, 8), "c": Interval(-3, 5), "d": Bool()}


def _divisor() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(POSITIVE),
        st.sampled_from(["1", "3", "5"]),
        st.sampled_from(NAMES[:3]).map(lambda n: f"(abs({n}) + 1)"),
    )


def _integer(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(NAMES[:3]), st.sampled_from(CONSTANTS).map(str))
    if depth == 0:
        return leaf
    sub = _integer(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(sub, st.sampled_from(["//", "%"]), _divisor()).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["min", "max"]), sub, sub).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        sub.map(lambda x: f"abs({x})"),
        st.tuples(sub, _boolean(0), sub).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
    )


def _boolean(depth: int) -> st.SearchStrategy[str]:
    ops = st.sampled_from(["<", "<=", "==", "!=", ">", ">="])
    leaf = st.one_of(
        st.tuples(_integer(0), ops, _integer(0)).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.just("d"),
        st.tuples(st.sampled_from(NAMES[:3]), st.sampled_from(["(1, 2, 5)", "[0, 4]"])).map(
            lambda t: f"{t[0]} in {t[1]}"
        ),
    )
    if depth == 0:
        return leaf
    sub = _boolean(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(_integer(1), ops, _integer(1)).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(_integer(1), ops, _integer(1), ops, _integer(1)).map(lambda t: " ".join(t)),
        st.tuples(sub, st.sampled_from(["and", "or"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        sub.map(lambda x: f"(not {x})"),
        st.tuples(sub, sub, sub).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
    )


def _names(expression: str) -> set[str]:
    import ast

    return {n.id for n in ast.walk(ast.parse(expression)) if isinstance(n, ast.Name)} & set(NAMES)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_boolean(2), min_size=1, max_size=3))
def test_vectorised_build_equals_scalar_build(constraints: list[str]) -> None:
    constraints = [c for c in constraints if _names(c)]
    try:
        brute = BruteForceSpace(Declaration(_params(), constraints))
    except ValueError:  # nothing valid (EmptySpaceError) or a constraint error: both must agree
        with pytest.raises(ValueError):
            ChainSpace(Declaration(_params(), constraints))
        return
    chain = ChainSpace(Declaration(_params(), constraints))
    assert chain.size == brute.size
    ours = sorted(map(repr, chain.configs(chain.at_index(range(chain.size)))))
    theirs = sorted(map(repr, brute.configs(brute.at_index(range(brute.size)))))
    assert ours == theirs


# -- plans and dtypes ---------------------------------------------------------------------------


def _atoms(fn: Any, params: dict[str, Any]) -> list[Atom]:
    declaration = Declaration(params)
    constraint = Constraint.from_callable(fn, names=declaration.names)
    return split_constraint(constraint, declaration.params)


def _planned(atom: Atom, **values: Any) -> str:
    inputs = {n: np.asarray(v) for n, v in values.items()}
    atom.evaluate(inputs)
    return atom.plan_name


def test_and_is_split_into_atoms_reading_fewer_parameters() -> None:
    atoms = _atoms(
        lambda x, y: x < y and y % x == 0 and y <= 1024, {"x": Interval(1, 9), "y": Interval(1, 9)}
    )
    assert [a.reads for a in atoms] == [("x", "y"), ("x", "y"), ("y",)]


@pytest.mark.parametrize(
    ("fn", "plan"),
    [
        (lambda x: x % 3 == 0, "written/int32"),
        (lambda x: (x * 2**40) % 7 == 0, "written/int64"),
        (lambda x: x * 2**62 > 2**64, "written/object"),
        (lambda x: 1 < x < 5, "rewritten/int32"),
        (lambda x: (x if x > 3 else -x) > 0, "rewritten/int32"),
        (lambda x: max(x, 4) == 4, "rewritten/int32"),
        (lambda x: str(x).endswith("2"), "scalar"),
    ],
)
def test_plan_choice(fn: Any, plan: str) -> None:
    (atom,) = _atoms(fn, {"x": Interval(1, 100)})
    assert _planned(atom, x=np.arange(1, 101)) == plan


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x % 3 == 0,
        lambda x: (x * 2**40) % 7 == 0,
        lambda x: x * 2**62 > 2**64 + x,
        lambda x: 1 < x < 5,
        lambda x: (x if x > 3 else -x) > 0,
        lambda x: str(x).endswith("2"),
        lambda x: x * x * x * x > 2**62,  # overflows int64 for x near 2**16: must not wrap
    ],
)
def test_vectorised_results_equal_scalar_calls(fn: Any) -> None:
    values = np.arange(60_000, 66_000, dtype=np.int64)
    (atom,) = _atoms(fn, {"x": Interval(60_000, 65_999)})
    expected = np.array([fn(int(v)) for v in values])
    assert (atom.evaluate({"x": values}) == expected).all()


def test_bool_arithmetic_follows_python() -> None:
    space = build_space({"f": Bool(), "g": Bool()}, [lambda f, g: f + g == 2])
    assert space.configs(space.at_index(range(space.size))) == [{"f": True, "g": True}]


def test_closure_over_a_local_variable_and_default_arguments() -> None:
    def make(k: int) -> dict[str, Any]:
        return {
            "x": Interval(1, 100, where=lambda x: x % k == 0),
            "y": Interval(1, 10, where=lambda x, y, m=k: y * m <= x),
        }

    assert build_space(make(7)).size == sum(1 for x in range(7, 101, 7) for y in range(1, 11) if y * 7 <= x)
    assert build_space(make(9)).size == sum(1 for x in range(9, 101, 9) for y in range(1, 11) if y * 9 <= x)


def test_functions_with_statements_fall_back_to_scalar_calls() -> None:
    def ok(x: int, y: int) -> bool:
        if x > y:
            return False
        return (x + y) % 3 == 0

    space = build_space({"x": Interval(1, 30), "y": Interval(1, 30)}, [ok])
    assert space.size == sum(1 for x in range(1, 31) for y in range(1, 31) if ok(x, y))


# -- constraint sources and the space hash ---------------------------------------------------------


def test_source_is_the_exact_lambda_with_the_values_it_reads() -> None:
    n = 1024
    first, second = (lambda x: x > 1), (lambda x: x < n)
    assert Constraint.from_callable(first, names=["x"]).source == "lambda x: x > 1"
    assert Constraint.from_callable(second, names=["x"]).source == "lambda x: x < n [n=1024]"


def test_space_hash_changes_with_a_closure_value() -> None:
    def space(n: int) -> str:
        return build_space({"x": Interval(1, 64, where=lambda x: n % x == 0)}).space_hash

    assert space(64) == space(64)
    assert space(64) != space(32)
