"""A plain ``pytest`` run over tunable tests stays light (measured in fresh subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "gpytorch", "sklearn", "triton", "cupy", "cuda", "dask", "distributed")

MEASURE_IMPORT = """
import sys, time
import pytest  # loaded before any plugin in a real run
start = time.process_time()  # CPU time: the work of the import, robust to a loaded machine
import pytest_autotune.plugin
elapsed = time.process_time() - start
print(elapsed, *sorted(m for m in ("numpy", "pyopencl", "rich", *{heavy}) if m in sys.modules))
"""


def test_plugin_module_imports_in_under_50_ms_without_numpy() -> None:
    code = MEASURE_IMPORT.format(heavy=HEAVY)
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        for _ in range(3)
    ]
    outputs = [run.stdout.split() for run in runs]
    assert all(len(out) == 1 for out in outputs), outputs  # nothing but the time: no numpy, rich, ...
    assert min(float(out[0]) for out in outputs) < 0.050


RECORD_MODULES = """
import json, sys

def pytest_unconfigure(config):
    with open("modules.json", "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def test_plain_run_over_tunable_tests_imports_no_heavy_library(
    project: pytest.Pytester, two_tests: str
) -> None:
    project.makepyfile(test_k=two_tests)
    project.runpytest("--autotune").assert_outcomes(passed=2)  # in-process: commits the entries
    project.makeconftest((project.path / "conftest.py").read_text() + RECORD_MODULES)
    project.runpytest_subprocess("-p", "no:hypothesispytest").assert_outcomes(passed=2)
    modules = set(json.loads((project.path / "modules.json").read_text()))
    assert "pytest_autotune.plugin" in modules
    assert {m.split(".")[0] for m in modules} & {*HEAVY, "pyopencl", "matplotlib"} == set()
    assert "pytest_autotune.tuning.tuner" not in modules  # checking needs no tuner
