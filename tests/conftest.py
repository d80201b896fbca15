"""Shared test configuration (pytester is enabled in pyproject addopts)."""

from __future__ import annotations

import functools
import importlib.util
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="session")
def load_benchmark() -> Callable[[str], ModuleType]:
    """A loader of ``benchmarks/<name>.py`` by path (the benchmarks are not a package), cached."""

    def load(name: str) -> ModuleType:
        module_name = f"autotune_bench_{name}"
        if module_name in sys.modules:
            return sys.modules[module_name]
        spec = importlib.util.spec_from_file_location(module_name, BENCHMARKS / f"{name}.py")
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
        spec.loader.exec_module(module)
        return module

    return load


@functools.cache
def _opencl_problem() -> str | None:
    """Why no OpenCL device can run the tests marked ``opencl``, or None when one can."""
    try:
        from pytest_autotune.backends.opencl import select_device
    except ImportError as exc:
        return f"pyopencl cannot be imported ({exc})"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            select_device(None)
    except Exception as exc:  # any failure means: skip, and say why
        return " ".join(str(exc).split())[:300]
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests marked ``opencl`` when no device can build a kernel (scripts/ensure-opencl)."""
    marked = [item for item in items if item.get_closest_marker("opencl") is not None]
    problem = _opencl_problem() if marked else None
    if problem is not None:
        skip = pytest.mark.skip(reason=f"no usable OpenCL device: {problem}")
        for item in marked:
            item.add_marker(skip)
