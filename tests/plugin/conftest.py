"""Helpers for the plugin's pytester tests: a project with a deterministic fake timer.

The fake timer (an ``autotune_timer`` fixture override in the project's conftest, built on
:mod:`pytest_autotune.testing`) returns ``bowl``'s ``1e-4 * (1 + sum((v - 3)**2))`` seconds over the
configuration's integer values, so the best configuration sets every integer parameter to 3.
``AUTOTUNE_SLOW`` (``"name=factor,..."``) multiplies the time of tests whose node id contains
``name``: an injected slowdown without touching the code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Import what in-process pytester runs would otherwise import (and assertion-rewrite) afresh each
# time: pytester drops modules first imported inside a run, and re-importing them (hypothesis's
# plugin loads hypothesis in its terminal summary) would dominate every run.
import hypothesis
import pytest

import pytest_autotune.backends.geometry
import pytest_autotune.backends.launch_limits
import pytest_autotune.plugin.modes.execution
import pytest_autotune.plugin.modes.tune
import pytest_autotune.plugin.workers.placement
import pytest_autotune.strategies.classic.exhaustive
import pytest_autotune.strategies.classic.random_search
import pytest_autotune.testing
import pytest_autotune.tuning.tuner  # noqa: F401

del hypothesis

# matplotlib too, whole: a run that first imports some of its modules loses them when it ends while
# the rest stay, and the next run's figures mix two generations of its classes (a TypeError in
# ``set_clip_path``) -- seen under xdist once the report formats became reporters.
try:
    import matplotlib.backends.backend_agg
    import matplotlib.figure
    import matplotlib.ticker  # noqa: F401
except ImportError:  # pragma: no cover - matplotlib is a test dependency
    pass

FAKE_TIMER_CONFTEST = """
import os

import pytest

from pytest_autotune.testing import FakeTimer, bowl


@pytest.fixture
def autotune_timer():
    return FakeTimer(bowl, slowdown=os.environ.get("AUTOTUNE_SLOW", ""))
"""

#: Two tunable tests (15 and 18 configurations); under the fake timer the optimum A=3, B=3 takes
#: 100us and the default A=1, B=1 takes 900us.
TWO_TESTS = """
from pytest_autotune import Interval, Set, constraint, tunable


@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
@constraint(lambda A, B: A + B <= 7)
def test_a(autotune):
    autotune.measure(lambda: None)


@tunable(A=Interval(1, 6, default=1), B=Set(1, 2, 3, default=1), strategy="exhaustive")
def test_b(autotune):
    autotune.measure(lambda: None)
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester project with the fake timer; the environment holds no autotune settings.

    Trials run in the pytest process (``PYTEST_AUTOTUNE_ISOLATE=none``): these tests are about the
    plugin's logic, and a trial worker would add a second or two per tuned test. Isolated trials
    (the default on POSIX) are tested in ``tests/faults/``.
    """
    for name in list(os.environ):
        if name.startswith("PYTEST_AUTOTUNE") or name in ("AUTOTUNE_SLOW", "PYOPENCL_CTX"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("PYTEST_AUTOTUNE_ISOLATE", "none")
    pytester.makeconftest(FAKE_TIMER_CONFTEST)
    return pytester


@pytest.fixture
def two_tests() -> str:
    """Source of a test module with two tunable tests (see :data:`TWO_TESTS`)."""
    return TWO_TESTS


@pytest.fixture
def store_data(pytester: pytest.Pytester) -> Callable[[], dict[str, Any]]:
    """Reads the project's autotune.json."""

    def read() -> dict[str, Any]:
        data: dict[str, Any] = json.loads((Path(pytester.path) / "autotune.json").read_text())
        return data

    return read


@pytest.fixture
def stored_entries(store_data: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, dict[str, Any]]]:
    """Reads every entry of the store by node id (the tests run on the host device only)."""

    def read() -> dict[str, dict[str, Any]]:
        devices = store_data()["devices"]
        assert len(devices) == 1, devices
        tests: dict[str, dict[str, Any]] = next(iter(devices.values()))["tests"]
        return tests

    return read
