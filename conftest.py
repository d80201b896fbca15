"""What the test suite (``tests/``) and the example kernels (``example_kernels/``) share.

The OpenCL availability gate: a test marked ``opencl`` (the marker is declared in pyproject.toml), or
one that requests the plugin's ``cl_context``/``cl_queue`` fixtures as every example kernel does, is
skipped with the reason when no OpenCL device can build a kernel (``scripts/ensure-opencl`` installs
one). The check runs once per process, and only when such a test was collected: a plain run of
other tests imports neither pyopencl nor the Bayesian engine's libraries from here.
"""

from __future__ import annotations

import functools
import warnings

import pytest

#: Fixtures that need an OpenCL device (``cl_queue`` requests ``cl_context``).
OPENCL_FIXTURES = frozenset({"cl_context", "cl_queue"})


@functools.cache
def opencl_problem() -> str | None:
    """Why no OpenCL device can run the tests that need one, or None when one can."""
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


def needs_opencl(item: pytest.Item) -> bool:
    """Whether ``item`` is marked ``opencl`` or requests an OpenCL fixture."""
    if item.get_closest_marker("opencl") is not None:
        return True
    return not OPENCL_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


@functools.cache
def gpu_problem() -> str | None:
    """Why no CUDA GPU can run the tests marked ``gpu``, or None when one can."""
    from pytest_autotune.backends.cuda.device import driver_problem

    return driver_problem()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the tests that need OpenCL when no device can build a kernel, and those marked ``gpu``
    when there is no CUDA GPU."""
    marked_gpu = [item for item in items if item.get_closest_marker("gpu") is not None]  # imports no cuda
    problem_gpu = gpu_problem() if marked_gpu else None
    if problem_gpu is not None:
        for item in marked_gpu:
            item.add_marker(pytest.mark.skip(reason=f"needs a CUDA GPU: {problem_gpu}"))
    gated = [item for item in items if needs_opencl(item)]
    problem = opencl_problem() if gated else None
    if problem is not None:
        skip = pytest.mark.skip(reason=f"no usable OpenCL device: {problem}")
        for item in gated:
            item.add_marker(skip)
