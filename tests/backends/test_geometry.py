"""Launch geometry with Kernel Tuner's semantics, against sizes worked out by hand, and the device
limits it turns into known constraints."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from pytest_autotune import Geometry, Interval, LaunchSizes, Pow2, Set
from pytest_autotune.backends.base import DeviceLimits
from pytest_autotune.backends.geometry import GeometryError
from pytest_autotune.backends.launch_limits import Pruned, limit_constraints, prune_space
from pytest_autotune.fixture import Autotune
from pytest_autotune.policy import merge_policy
from pytest_autotune.space import build_space
from pytest_autotune.space.errors import EmptySpaceError
from pytest_autotune.timing.measure import DefaultTimer


# -- sizes ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("block", "groups", "global_size"),
    [
        (48, 21, 1008),  # 20 * 48 = 960 < 1000: one more group
        (80, 13, 1040),  # 12.5 groups -> 13
        (112, 9, 1008),  # 8.93 -> 9
        (100, 10, 1000),  # exact
        (1024, 1, 1024),
    ],
)
def test_global_size_rounds_the_grid_up(block: int, groups: int, global_size: int) -> None:
    sizes = Geometry(1000).sizes({"block_size_x": block})
    assert sizes == LaunchSizes((global_size,), (block,), (groups,))
    global_, local = sizes  # unpacks as pyopencl's (global_size, local_size)
    assert (global_, local) == ((global_size,), (block,))


def test_grid_divisors_multiply_and_each_dimension_rounds_up() -> None:
    geometry = Geometry((1000, 300, 500), grid_div_x=["block_size_x", "TX"], grid_div_z=["block_size_z", 2])
    sizes = geometry.sizes({"block_size_x": 48, "TX": 2, "block_size_y": 80, "block_size_z": 112})
    # x: ceil(1000 / 96) = 11 groups of 48; y: ceil(300 / 80) = 4 of 80; z: ceil(500 / 224) = 3 of 112
    assert sizes == LaunchSizes((528, 320, 336), (48, 80, 112), (11, 4, 3))


def test_names_expressions_and_callables_as_kernel_tuner_takes_them() -> None:
    config = {"block_size_x": 48, "n": 100, "WPT": 4}
    # a problem size read from a parameter, by expression or by a callable (dict or by name)
    assert Geometry("n * 10").sizes(config).grid == (21,)  # ceil(1000 / 48)
    assert Geometry(lambda p: p["n"] * 10).sizes(config).grid == (21,)
    assert Geometry(lambda n: (n * 10, 3)).sizes(config) == LaunchSizes((1008, 3), (48, 1), (21, 3))
    # an expression divisor is truncated to an int (int(48 / 32) = 1), a callable's is not (1.5)
    assert Geometry(1000, grid_div_x=["block_size_x / 32"]).sizes(config).grid == (1000,)
    assert Geometry(1000, grid_div_x=lambda p: p["block_size_x"] / 32).sizes(config).grid == (667,)
    assert Geometry(1000, grid_div_x=["block_size_x", "WPT"]).sizes(config).grid == (6,)  # ceil(1000/192)
    assert Geometry(1000, grid_div_x=[]).sizes(config) == LaunchSizes((48000,), (48,), (1000,))
    assert Geometry(1000, grid_div_x=8).sizes(config).grid == (125,)


def test_block_size_names_and_kernel_tuners_defaults_for_absent_ones() -> None:
    named = Geometry((1 << 20,), block_size_names=["LS"], grid_div_x=["LS", "WPT"])
    assert named.sizes({"LS": 64, "WPT": 4}) == LaunchSizes((1 << 18,), (64,), (1 << 12,))
    # Kernel Tuner: a block dimension whose parameter does not exist is 256 in x, 1 in y and z, and
    # the default divisor of that dimension is 1
    assert Geometry(1000).sizes({}) == LaunchSizes((256000,), (256,), (1000,))
    # a one-dimensional problem with a tuned y block still launches that block
    assert Geometry(1000).sizes({"block_size_x": 48, "block_size_y": 4}) == LaunchSizes(
        (1008, 4), (48, 4), (21, 1)
    )


def test_a_local_size_callable_replaces_the_names_and_divides_by_default() -> None:
    geometry = Geometry((2048, 2048), local_size=lambda p: (p["TX"] * p["ROWS"], 1), grid_div_x=["TX"])
    sizes = geometry.sizes({"TX": 16, "ROWS": 3})
    # x: 2048 / 16 = 128 groups of 48 work-items; y: divided by its local size, 1
    assert sizes == LaunchSizes((6144, 2048), (48, 1), (128, 2048))
    assert geometry.local_size_of({"TX": 16, "ROWS": 3}) == (48, 1, 1)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Geometry(block_size_names="BX"), "expected a list of up to three parameter names"),
        (lambda: Geometry(block_size_names=["a", "b", "c", "d"]), "more than 3 dimensions"),
        (lambda: Geometry(local_size=(16, 16)), "expected a callable of the configuration"),
        (lambda: Geometry(block_size_names=["X"], local_size=lambda p: 1), "not both"),
        (lambda: Geometry(10, grid_div_x=0), "grid_div_x: 0 must be a finite number > 0"),
        (lambda: Geometry(10, grid_div_x=lambda: 0).sizes({}), "grid_div_x is 0 for {}; it must be > 0"),
        (lambda: Geometry((1, 2, 3, 4)), "problem_size=(1, 2, 3, 4) has 4 dimensions; expected 1 to 3"),
        (lambda: Geometry(10, grid_div_x=[object()]).sizes({}), "is not a number, a parameter name"),
        (lambda: Geometry().sizes({}), "has no problem_size"),
        (lambda: Geometry(10).sizes({"block_size_x": 1.5}), "block size 'block_size_x' is 1.5"),
        (lambda: Geometry("x +").sizes({"x": 1}), "problem_size 'x +': constraint 'x +': not a Python"),
    ],
)
def test_bad_geometries_are_named(make: Any, message: str) -> None:
    with pytest.raises(GeometryError) as info:
        make()
    assert message in str(info.value)


def test_check_names_what_is_not_a_parameter() -> None:
    names = ("BX", "WPT")
    Geometry(10, block_size_names=["BX"], grid_div_x=["BX", "WPT"]).check(names)
    with pytest.raises(GeometryError, match="block_size_names: 'BY' is not a parameter"):
        Geometry(block_size_names=["BX", "BY"]).check(names)
    with pytest.raises(GeometryError, match="unknown name 'TX'"):
        Geometry(10, grid_div_x=["BX", "TX"]).check(names)
    with pytest.raises(GeometryError, match=r"reads unknown parameter 'T' \(as p\['T'\]"):
        Geometry(local_size=lambda p: p["T"]).check(names)


@pytest.mark.parametrize(
    ("geometry", "named"),
    [
        (Geometry("n"), "Geometry problem_size='n': unknown name 'n'"),
        (Geometry(("n", 16)), "Geometry problem_size='n': unknown name 'n'"),
        (Geometry(10, grid_div_y=["BX", "m"]), "Geometry grid_div_y='m': unknown name 'm'"),
        (Geometry(10, local_memory="4 * k"), "Geometry local_memory='4 * k': unknown name 'k'"),
    ],
)
def test_a_bad_geometry_string_names_its_field_not_a_constraint(geometry: Geometry, named: str) -> None:
    """Issue 44: ``problem_size="n"`` was reported as "constraint 'n'"."""
    with pytest.raises(GeometryError) as info:
        geometry.check(("BX", "WPT"))
    assert named in str(info.value)
    assert "constraint" not in str(info.value)
    assert "give a size of your own as a number" in str(info.value)


def test_autotune_launch_applies_the_declared_geometry() -> None:
    def fixture(geometry: Geometry | None) -> Autotune:
        autotune = Autotune(
            nodeid="t.py::test_k",
            space=build_space({"block_size_x": Set(48, 80)}),
            policy=merge_policy([]),
            device="d",
            timer=DefaultTimer(),
            tuning=False,
            geometry=geometry,
        )
        autotune.begin_run({"block_size_x": 80}, repeat_default=1)
        return autotune

    assert fixture(Geometry(1000)).launch == LaunchSizes((1040,), (80,), (13,))
    with pytest.raises(pytest.fail.Exception, match=r"t.py::test_k: autotune.launch .* declares no geometry"):
        _ = fixture(None).launch
    with pytest.raises(pytest.fail.Exception, match=r"the test declares no problem_size; declare @tunable"):
        _ = fixture(Geometry(block_size_names=["block_size_x"])).launch


# -- device limits as known constraints -----------------------------------------------------------------
PARAMS = {"BX": Pow2(1, 512), "BY": Pow2(1, 64), "T": Interval(1, 4)}
LIMITS = DeviceLimits(max_work_group_size=256, max_work_item_sizes=(256, 16, 16), local_memory=8192)
GEOMETRY = Geometry(block_size_names=["BX", "BY"], local_memory=lambda p: 8 * p["BX"] * p["T"])


def _fits(bx: int, by: int, t: int) -> tuple[bool, bool]:
    return bx <= 256 and by <= 16 and bx * by <= 256, 8 * bx * t <= 8192


def test_limits_prune_exactly_what_the_device_cannot_run() -> None:
    declared = build_space(PARAMS)
    limited, pruned = prune_space(PARAMS, [], declared, GEOMETRY, LIMITS)
    every = list(itertools.product([2**k for k in range(10)], [2**k for k in range(7)], range(1, 5)))
    allowed = [(bx, by, t) for bx, by, t in every if all(_fits(bx, by, t))]
    assert limited.size == len(allowed)
    assert limited.contains([{"BX": bx, "BY": by, "T": t} for bx, by, t in allowed]).all()
    assert pruned == Pruned(
        declared=len(every),
        kept=len(allowed),
        reasons=(
            (
                limit_constraints(GEOMETRY, declared.names, LIMITS)[0].source,
                sum(not _fits(*c)[0] for c in every),
            ),
            ("device limit: at most 8192 bytes of local memory", sum(not _fits(*c)[1] for c in every)),
        ),
    )
    assert pruned.describe().startswith(f"pruned {len(every) - len(allowed)} of {len(every)} configurations")
    assert limited.space_hash != declared.space_hash  # the declared hash is what the store keeps


def test_the_constraints_read_only_what_the_geometry_reads() -> None:
    work_group, memory = limit_constraints(GEOMETRY, ("BX", "BY", "T"), LIMITS)
    assert work_group.reads == ("BX", "BY")
    assert memory.reads == ("BX", "T")
    assert limit_constraints(GEOMETRY, ("BX", "BY", "T"), DeviceLimits()) == []  # the host: nothing known


def test_nothing_pruned_returns_the_declared_space() -> None:
    declared = build_space({"BX": Pow2(1, 16)})
    assert prune_space({"BX": Pow2(1, 16)}, [], declared, Geometry(block_size_names=["BX"]), LIMITS) == (
        declared,
        None,
    )


def test_a_constant_beyond_the_limits_empties_the_space() -> None:
    with pytest.raises(EmptySpaceError, match="no configuration fits the device limit: at most 8192 bytes"):
        limit_constraints(Geometry(local_memory=10_000), ("BX",), LIMITS)
