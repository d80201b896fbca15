"""The example kernels as benchmark cases: where each test lives and which sub-space is measured.

The full spaces of ``gemm`` (about 330,000 configurations), ``conv2d`` and ``reduction`` are too large
to measure exhaustively on a 2-core CPU, so each case names a documented sub-space (a subset of
each parameter's values; the test's own constraints still apply) of at most ~1,500 configurations.
Tuning in the benchmark runs over that sub-space, so that its exhaustive best is the true optimum.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_autotune.api import get_spec
from pytest_autotune.opencl_harness import load_test_function
from pytest_autotune.space import NO_DEFAULT, Param, build_space
from pytest_autotune.space.base import Space
from pytest_autotune.space.constraints import Constraint

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

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

    @property
    def cache_path(self) -> Path:
        """The Kernel Tuner cache file holding the exhaustive measurements."""
        return DATA / f"kernels_{self.name}.json"

    def load(self) -> Any:
        """The ``@tunable`` test function."""
        return load_test_function(self.path, self.function_name)

    def full_space(self) -> Space:
        """The space the test declares."""
        spec = get_spec(self.load())
        assert spec is not None, f"{self.path}: {self.function_name} is not @tunable"
        return spec.space

    def measured_space(self) -> Space:
        """The declared space restricted to :attr:`subspace` (the full space when it is empty)."""
        spec = get_spec(self.load())
        assert spec is not None, f"{self.path}: {self.function_name} is not @tunable"
        if not self.subspace:
            return spec.space
        allowed = {name: frozenset(values) for name, values in self.subspace.items()}
        names = tuple(allowed)

        def in_subspace(**config: Any) -> bool:
            return all(config[name] in allowed[name] for name in names)

        source = "sub-space " + ", ".join(f"{n} in {sorted(v, key=repr)}" for n, v in allowed.items())
        restriction = Constraint(fn=in_subspace, reads=names, source=source)
        return build_space(_without_defaults(spec.params), [*spec.constraints, restriction])


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
    KernelCase(
        "conv2d",
        {"BX": (8, 16, 32, 64, 128, 256), "BY": (1, 2, 4, 8, 16), "TX": (1, 2, 4), "TY": (1, 2, 4)},
        "work-groups 8..256 x 1..16, 1..4 outputs per item each way (local tile and filter memory free)",
    ),
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
