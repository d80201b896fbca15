"""The main job in miniature: ``pytest --autotune`` on an example kernel writes autotune.json on this
OpenCL device, and a following plain ``pytest`` passes using it."""

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.opencl  # skipped, with the reason, when no device can build a kernel

EXAMPLES = Path(__file__).resolve().parents[3] / "example_kernels"


def test_tune_then_check_the_saxpy_example(pytester: pytest.Pytester) -> None:
    for name in ("test_saxpy.py", "saxpy.cl"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    tuned = pytester.runpytest_subprocess("--autotune", "--autotune-budget=4", "--autotune-strategy=random")
    tuned.assert_outcomes(passed=1)
    store = json.loads((pytester.path / "autotune.json").read_text())
    (device,) = store["devices"].values()
    entry = device["tests"]["test_saxpy.py::test_saxpy"]
    assert set(entry["config"]) == {"WPT", "LS", "VW", "STRIDED"}
    assert sum(entry["tuning"]["counts"].values()) == 4
    # Real timing on a CPU shared with the rest of the suite: a slowdown is reported, not failed
    # (the gate itself is measured by `python -m benchmarks gate`); correctness must pass.
    checked = pytester.runpytest_subprocess("--autotune-check=warn")
    checked.assert_outcomes(passed=1)
    checked.stdout.fnmatch_lines(["*mode check (warn)*", "*checked 1*"])
