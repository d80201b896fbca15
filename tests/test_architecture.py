"""The package's structure stays readable: layers without circles, shallow imports, small modules.

Measured from the code by ``benchmarks/import_graph.py`` (``python -m benchmarks.import_graph``
prints the same measures); the limits are those of the architecture step (issue 24).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.import_graph import import_graph, measure, strongly_connected

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_autotune"
STRUCTURE = measure(PACKAGE)


def test_no_import_circle() -> None:
    assert STRUCTURE.circles == ()


#: The issue's target, 10 floors, is met (see docs/architecture.md, "Import depth"); it stays a
#: ratchet: the depth may shrink, never grow.
MAX_FLOORS = 10


def test_import_depth_does_not_grow() -> None:
    assert STRUCTURE.floors <= MAX_FLOORS, " -> ".join(STRUCTURE.longest_chain)


def test_at_most_twelve_modules_at_the_top() -> None:
    assert STRUCTURE.top_level_modules <= 12


def test_no_module_over_450_lines() -> None:
    name, lines = STRUCTURE.largest
    assert lines <= 450, name


@pytest.mark.parametrize("layer", ["space", "strategies", "tuning", "timing", "backends"])
def test_library_layers_import_no_pytest_glue(layer: str) -> None:
    """Arrows point down: the library layers never import the pytest glue (plugin/)."""
    edges, _ = import_graph(PACKAGE)
    offenders = {
        (module, target)
        for module, targets in edges.items()
        if module.startswith(f"pytest_autotune.{layer}")
        for target in targets
        if target.startswith("pytest_autotune.plugin")
    }
    assert offenders == set()


def test_only_backends_import_opencl() -> None:
    edges, _ = import_graph(PACKAGE)
    offenders = {
        (module, target)
        for module, targets in edges.items()
        if not module.startswith("pytest_autotune.backends")
        for target in targets
        if target.startswith("pytest_autotune.backends.opencl")
    }
    assert offenders == set()
    for path in PACKAGE.rglob("*.py"):
        if "backends" not in path.relative_to(PACKAGE).parts:
            assert "import pyopencl" not in path.read_text(encoding="utf-8"), path


def test_measures_find_a_circle_and_floors() -> None:
    """The measuring code itself, on a hand-made graph: a <-> b is one circle, c -> a one floor up."""
    edges = {"a": {"b"}, "b": {"a"}, "c": {"a"}, "d": set()}
    assert sorted(strongly_connected(edges)) == [["a", "b"], ["c"], ["d"]]


def test_command_prints_the_measures() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.import_graph"],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"floors                 {STRUCTURE.floors}" in done.stdout
