"""The example kernels as benchmark cases: where each test lives and which sub-space is measured.

The full spaces of ``gemm`` (about 330,000 configurations), ``reduction`` and ``transpose`` are too
large to measure exhaustively on a 2-core CPU, so each case names a documented sub-space (a subset
of each parameter's values; the test's own constraints still apply) of at most ~1,500
configurations. ``saxpy`` and ``conv2d`` (3,920, about 30 minutes) are measured whole. Tuning in the
benchmark runs over the sub-space a file records in its header, so that its exhaustive best is the
true optimum there.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_autotune.api import TunableSpec, get_spec
from pytest_autotune.space import NO_DEFAULT, Param, build_space
from pytest_autotune.space.base import Space
from pytest_autotune.space.conditions.constraints import Constraint
from pytest_autotune.space.params import to_python
from pytest_autotune.testing.opencl_objective import load_test_function

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data"

__all__ = ["CASES", "DATA", "KernelCase", "case_by_name"]


@dataclass(frozen=True)
class KernelCase:
    """One example kernel test and the part of its space the benchmark measures exhaustively."""

    name: str
    subspace: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    note: str = "full space"
    repeat: int = 7  # timed runs per configuration when measuring

    @property
    def path(self) -> Path:
        """The test module."""
        return ROOT / "example_kernels" / f"test_{self.name}.py"

    @property
    def function_name(self) -> str:
        """The test function's name."""
        return f"test_{self.name}"

    def cache_path(self, machine: str) -> Path:
        """The Kernel Tuner cache file holding the exhaustive measurements taken on ``machine``."""
        return DATA / machine / f"kernels_{self.name}.json"

    def load(self) -> Any:
        """The ``@tunable`` test function."""
        return load_test_function(self.path, self.function_name)

    @cached_property
    def spec(self) -> TunableSpec:
        """The test's ``@tunable`` declaration (its module is loaded once per case)."""
        spec = get_spec(self.load())
        assert spec is not None, f"{self.path}: {self.function_name} is not @tunable"
        return spec

    def full_space(self) -> Space:
        """The space the test declares."""
        return self.spec.space

    def narrowed(self, subspace: Mapping[str, Sequence[Any]] | None = None) -> dict[str, frozenset[Any]]:
        """The parameters that ``subspace`` (by default :attr:`subspace`) restricts, with the values
        it keeps; a parameter given all its declared values is left out."""
        subspace = self.subspace if subspace is None else subspace
        declared = self.full_space().params
        out: dict[str, frozenset[Any]] = {}
        for name, values in subspace.items():
            kept = frozenset(values)
            if not {to_python(v) for v in declared[name].values()} <= kept:
                out[name] = kept
        return out

    def describe(self, subspace: Mapping[str, Sequence[Any]] | None = None) -> str:
        """A line naming the restricted parameters and the values kept (``full space`` if none)."""
        narrowed = self.narrowed(subspace)
        if not narrowed:
            return "full space"
        return ", ".join(f"{n} in {_in_order(v)}" for n, v in narrowed.items())

    def measured_space(self, subspace: Mapping[str, Sequence[Any]] | None = None) -> Space:
        """The declared space restricted to ``subspace`` (by default :attr:`subspace`; the full space
        when it is empty). A measured cache file records its own sub-space in its header
        (``tune_params``): replaying it passes that, so older files keep their own sub-space."""
        spec = self.spec
        allowed = self.narrowed(subspace)
        if not allowed:
            return spec.space
        names = tuple(allowed)

        def in_subspace(**config: Any) -> bool:
            return all(config[name] in allowed[name] for name in names)

        source = "sub-space " + self.describe(subspace)
        restriction = Constraint(fn=in_subspace, reads=names, source=source)
        return build_space(_without_defaults(spec.params), [*spec.constraints, restriction])


def _in_order(values: frozenset[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:  # mixed kinds
        return sorted(values, key=repr)


def _without_defaults(params: Mapping[str, Param]) -> dict[str, Param]:
    """Copies of ``params`` without their ``default=`` (the default may lie outside the sub-space)."""
    copies: dict[str, Param] = {}
    for name, param in params.items():
        clone = copy.copy(param)
        clone.default = NO_DEFAULT
        clone.name = None
        copies[name] = clone
    return copies


CASES: tuple[KernelCase, ...] = (
    # Memory-bound: most configurations are within noise of each other, so more runs each.
    KernelCase("saxpy", repeat=15),
    KernelCase(
        "reduction",
        {"VW": (1, 4, 8), "UNROLL": (1, 4)},
        "vector widths 1/4/8 and unroll 1/4 (all work-group sizes, elements per item, both layouts)",
    ),
    KernelCase(
        "transpose",
        {"ROWS": (1, 4, 16, 64)},
        "1, 4, 16 or 64 work-items per tile column (all tile sizes, local memory and padding)",
    ),
    # The full space (3,920): measured on the Zen 5 machine over BX 8..256, BY 1..16, TX/TY 1..4 only,
    # whose file keeps that sub-space; on the Xeon machine the best work-group is 1 wide (TX=8).
    KernelCase("conv2d"),
    KernelCase(
        "gemm",
        {
            "MWG": (32, 64, 128),
            "NWG": (64, 128),
            "KWG": (32,),
            "MDIMC": (4, 8, 16),
            "NDIMC": (4, 8, 16),
            "VWM": (1,),
            "VWN": (1, 4, 8),
            "KWI": (1, 4),
            "SA": (False,),
            "STRM": (False,),
        },
        "KWG=32, VWM=1, SA off, contiguous rows; tiles, work-items, VWN, KWI, SB, STRN free",
    ),
)


def case_by_name(name: str) -> KernelCase:
    """The case called ``name``; ``KeyError`` listing the known ones otherwise."""
    for case in CASES:
        if case.name == name:
            return case
    raise KeyError(f"unknown kernel {name!r}; known: {', '.join(c.name for c in CASES)}")
