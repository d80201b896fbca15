"""Shared test configuration (pytester is enabled in pyproject addopts)."""

from __future__ import annotations

import functools
import warnings

import pytest


@functools.cache
def _opencl_problem() -> str | None:
    """Why no OpenCL device can run the tests marked ``opencl``, or None when one can."""
    try:
        from pytest_autotune.opencl import select_device
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
