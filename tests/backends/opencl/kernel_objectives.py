"""One objective per kernel test file, built once per test process (the example kernels and the ports).

Building a :class:`KernelTestObjective` imports the test module and creates its OpenCL context, so
the tests of one file share it; without a device the calling test is skipped.
"""

from pathlib import Path

import pytest

pytest.importorskip("pyopencl")
from pytest_autotune.testing.opencl_objective import KernelTestObjective, load_test_function

_objectives: dict[Path, KernelTestObjective] = {}


def objective_for_file(path: Path, name: str) -> KernelTestObjective:
    """The objective of the test function ``name`` in ``path`` (one trial: no warm-up, one timed call)."""
    if path not in _objectives:
        test = load_test_function(path, name)
        try:
            _objectives[path] = KernelTestObjective(test, warmup=0, repeat=1)
        except LookupError:
            pytest.skip("no OpenCL device")
    return _objectives[path]
