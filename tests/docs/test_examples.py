"""The documentation's example tests run as published: tuned, written to autotune.json, then checked.

The files under ``docs/examples/`` are the ones README and the documentation show (README's copy is
kept equal by ``test_readme.py``, the pages' inline copies by ``test_pages_on_github.py``); the
budget is cut so that these runs take seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyopencl")

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
#: A short search: the examples' own budgets make a newcomer's run, not a test's.
QUICK = ("--autotune-strategy=random", "--autotune-isolate=none")


def entries(pytester: pytest.Pytester) -> dict[str, Any]:
    data = json.loads((pytester.path / "autotune.json").read_text())
    (device,) = data["devices"].values()
    return dict(device["tests"])


@pytest.mark.opencl
def test_readme_first_test_tunes_then_checks(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_scale=(EXAMPLES / "test_scale.py").read_text())
    tuned = pytester.runpytest("--autotune", "--autotune-budget=3", *QUICK)
    tuned.assert_outcomes(passed=1)
    tuned.stdout.fnmatch_lines(["tuned 1:*", "*test_scale.py::test_scale*{'LS': *, 'WPT': *}*"])
    entry = entries(pytester)["test_scale.py::test_scale"]
    assert set(entry["config"]) == {"WPT", "LS"}
    checked = pytester.runpytest()
    checked.assert_outcomes(passed=1)
    checked.stdout.fnmatch_lines(["checked 1: 1 passed*"])


@pytest.mark.opencl
def test_tutorial_test_tunes_with_its_geometry(pytester: pytest.Pytester) -> None:
    source = (EXAMPLES / "test_matvec.py").read_text()
    assert "budget=30," in source
    pytester.makepyfile(test_matvec=source.replace("budget=30,", "budget=3,"))
    tuned = pytester.runpytest("--autotune", *QUICK)
    tuned.assert_outcomes(passed=1)
    tuned.stdout.fnmatch_lines(["*test_matvec*GB/s=*"])
    assert "test_matvec.py::test_matvec" in entries(pytester)


@pytest.mark.opencl
def test_tutorial_starting_point_is_a_plain_passing_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain=(EXAMPLES / "plain_matvec.py").read_text())
    pytester.runpytest().assert_outcomes(passed=1)
