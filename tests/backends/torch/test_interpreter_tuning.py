"""The whole tuning loop on a Triton example without a GPU: Triton's interpreter runs the tutorial
matmul on CPU torch tensors, a fake timer stands in for the GPU's times.

Isolated in a pytest subprocess with ``TRITON_INTERPRET=1`` set before any kernel module is
imported (the interpreter reads it at ``@triton.jit``), so an interpreter crash cannot take this
test session with it.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "example_kernels" / "triton" / "test_matmul.py"

CONFTEST = """
import pytest
from pytest_autotune.testing import FakeTimer


def cost(config):
    # the tutorial's third config (128 x 128, 4 stages) is the fastest, uniquely
    return 1e-3 * (1 + abs(config["BLOCK_SIZE_M"] - 128) / 64 + abs(config["BLOCK_SIZE_N"] - 128) / 64
                   + (config["num_stages"] != 4))


@pytest.fixture
def autotune_timer():
    return FakeTimer(cost)


def pytest_collection_modifyitems(items):
    for item in items:  # the fake timer needs one run of the kernel per measurement
        item.add_marker(pytest.mark.autotune(warmup=0, repeat=1))
"""


def test_tuning_the_listed_configs_in_the_interpreter_commits_the_fastest(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not imported here: pytester drops the modules a test imported, and triton's native library
    # aborts when imported a second time into one process.
    if importlib.util.find_spec("triton") is None:
        pytest.skip("needs triton (pip install '.[triton]')")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("AUTOTUNE_MATMUL_SIZE", "32")
    for name in ("PYTEST_ADDOPTS", "PYTEST_AUTOTUNE_STRATEGY", "PYTEST_AUTOTUNE_BUDGET"):
        monkeypatch.delenv(name, raising=False)
    shutil.copy(EXAMPLE, pytester.path / "test_matmul.py")
    pytester.makeconftest(CONFTEST)
    result = pytester.runpytest_subprocess(
        "test_matmul.py::test_matmul_listed",
        "--autotune",
        "--autotune-strategy=exhaustive",
        "--autotune-isolate=none",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_matmul_listed*8 trials (ok 8)*"])
    document = json.loads((pytester.path / "autotune.json").read_text())
    (device,) = document["devices"]
    assert device.startswith("Triton interpreter / ")
    entry = document["devices"][device]["tests"]["test_matmul.py::test_matmul_listed"]
    assert entry["config"] == {
        "BLOCK_SIZE_M": 128,
        "BLOCK_SIZE_N": 128,
        "BLOCK_SIZE_K": 32,
        "GROUP_SIZE_M": 8,
        "num_stages": 4,
        "num_warps": 4,
    }
