"""``Geometry`` mistakes are caught at declaration, or fail the test once, never as raw errors (issue 34).

A size of 0 or below, four dimensions, a block-size name given twice and a constant expression
worth infinity are refused when the geometry is declared. A mistake only a call can show, but which
every configuration shares (a divisor callable returning a string or None), fails the test at its
first trial with the declaration error, instead of a "runtime" failure per configuration that spends
the whole budget; a size out of range for one configuration stays that configuration's failure.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune import Geometry
from pytest_autotune.backends.geometry import GeometryDeclarationError, GeometryError


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Geometry(0), "problem_size=0; expected a whole number >= 1"),
        (lambda: Geometry(-5), "problem_size=-5; expected a whole number >= 1"),
        (lambda: Geometry((1024, 0)), "problem_size=0; expected a whole number >= 1"),
        (lambda: Geometry(10.5), "problem_size=10.5; expected a whole number >= 1"),
        (lambda: Geometry(float("inf")), "problem_size=inf; expected a whole number >= 1"),
        (lambda: Geometry((8, 8, 8, 8)), "has 4 dimensions; expected 1 to 3"),
        (lambda: Geometry(8, block_size_names=["BX", "BX"]), "names a parameter twice"),
        (lambda: Geometry(8, grid_div_x=-2), "grid_div_x: -2 must be a finite number > 0"),
        (lambda: Geometry(8, grid_div_y=["BY", 0]), "grid_div_y: 0 must be a finite number > 0"),
        (lambda: Geometry(8, local_memory=-1), "local_memory=-1; expected a whole number >= 0"),
        (lambda: Geometry(True), "problem_size: True is not a number"),
    ],
)
def test_constant_mistakes_are_refused_at_declaration(make: Any, message: str) -> None:
    with pytest.raises(GeometryError, match=r"^Geometry: ") as info:
        make()
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("geometry", "message"),
    [
        (Geometry("1e400"), "problem_size '1e400' gave inf"),
        (Geometry("0"), "problem_size is 0 for {}; expected a whole number >= 1"),
        (Geometry(64, grid_div_x="4 - 4"), "grid_div_x is 0"),
        (Geometry(64, local_memory="1e400"), "local_memory '1e400' gave inf"),
    ],
)
def test_constant_expressions_are_evaluated_when_the_names_are_checked(
    geometry: Geometry, message: str
) -> None:
    with pytest.raises(GeometryError, match=r"^Geometry: ") as info:
        geometry.check(("BX",))
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("geometry", "message"),
    [
        (Geometry(1024, grid_div_x=lambda p: "4"), "grid_div_x callable gave '4'"),
        (Geometry(1024, grid_div_x=lambda p: None), "grid_div_x callable gave None"),
        (Geometry(1024, grid_div_x=["BX", lambda p: None]), "grid_div_x callable gave None"),
        (Geometry(lambda p: (8, 8, 8, 8)), "expected an int or a parameter name"),
        (Geometry("BX * 1e400"), "problem_size 'BX * 1e400' gave inf"),
        (Geometry(lambda p: float("nan")), "problem_size is nan"),
        (Geometry(lambda p: None), "problem_size None: expected an int"),
        (Geometry(64, local_size=lambda p: "16"), "local_size gave '16'"),
    ],
)
def test_mistakes_every_configuration_shares_are_declaration_errors(geometry: Geometry, message: str) -> None:
    with pytest.raises(GeometryDeclarationError) as info:
        geometry.sizes({"BX": 16})
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("geometry", "config", "message"),
    [
        (Geometry(1024), {"block_size_x": 0}, "block size 'block_size_x' is 0"),
        (Geometry("n - 10"), {"n": 4}, "problem_size is -6"),
        (Geometry("n // k"), {"n": 4, "k": 0}, "ZeroDivisionError"),
        (Geometry(64, grid_div_x=lambda p: p["k"]), {"k": 0, "block_size_x": 8}, "grid_div_x is 0"),
    ],
)
def test_a_size_out_of_range_for_one_configuration_is_its_own_failure(
    geometry: Geometry, config: dict[str, int], message: str
) -> None:
    with pytest.raises(GeometryError) as info:
        geometry.sizes(config)
    assert not isinstance(info.value, GeometryDeclarationError)
    assert message in str(info.value)
