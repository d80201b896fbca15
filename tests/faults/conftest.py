"""Fixtures of the fault tests: a pytester project with a fake timer, and the drill helpers.

The drills themselves live in ``benchmarks/drills.py`` (the full drill ``benchmarks/fault_drills.py``
runs them with more repetitions); here they run once each, quickly.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

DRILLS_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "drills.py"


@pytest.fixture(scope="session")
def drills() -> ModuleType:
    """``benchmarks/drills.py``, loaded by path (the benchmarks are not a package)."""
    spec = importlib.util.spec_from_file_location("autotune_bench_drills", DRILLS_PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, drills: ModuleType
) -> pytest.Pytester:
    """A pytester project with the drills' fake timer (optimum: every integer parameter 3).

    Nothing from the environment changes the plugin's defaults (trials run isolated on POSIX).
    """
    for name in list(os.environ):
        if name.startswith("PYTEST_AUTOTUNE") or name == "PYTEST_ADDOPTS":
            monkeypatch.delenv(name)
    pytester.makeconftest(drills.DRILL_CONFTEST)
    return pytester
