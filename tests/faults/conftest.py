"""Fixtures of the fault tests: a pytester project with a fake timer, and the drill helpers.

The drills themselves live in ``benchmarks/drills/faults_kit.py`` (the full drill
``benchmarks/drills/faults.py`` runs them with more repetitions); here they run once each, quickly.
"""

from __future__ import annotations

import os
from types import ModuleType

import pytest

from benchmarks.drills import faults_kit as drills_module


@pytest.fixture(scope="session")
def drills() -> ModuleType:
    """``benchmarks.drills.faults_kit``."""
    return drills_module


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
