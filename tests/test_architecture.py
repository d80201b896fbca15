"""The package's structure stays readable: layers without circles, shallow imports, small modules.

Measured from the code by ``benchmarks/structure/import_graph.py`` (``python -m benchmarks import-graph``
prints the same measures); the limits are those of the architecture steps (issues 24 and 35). The
same checks cover ``benchmarks/``, which may import the library; the library never imports it.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.__main__ import discover
from benchmarks.structure.import_graph import (
    EXTENSION_POINTS,
    FLOORS,
    Structure,
    import_graph,
    imports_of,
    measure,
    strongly_connected,
    top_level_unit,
    unplaced_units,
    up_a_floor,
    upward_arrows,
)

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_autotune"
BENCHMARKS = ROOT / "benchmarks"
STRUCTURE = measure(PACKAGE)
BENCH_STRUCTURE = measure(BENCHMARKS)

#: At most this many modules in one folder (issue 35), in every folder (issue 45 split the last larger ones).
MAX_MODULES_PER_FOLDER = 12


def test_no_import_circle() -> None:
    assert STRUCTURE.circles == ()
    assert BENCH_STRUCTURE.circles == ()


def test_no_module_imports_its_folders_front_door() -> None:
    """No upward arrow anywhere, ``plugin/``'s folders included: a module imports the module that
    defines a name, never the ``__init__`` of a folder it stands in."""
    assert STRUCTURE.upward == ()
    assert BENCH_STRUCTURE.upward == ()


def test_every_top_level_unit_stands_on_one_floor() -> None:
    """Each top-level module and folder is declared on exactly one floor, and each declared one exists."""
    edges, _ = import_graph(PACKAGE)
    declared = [unit for units in FLOORS["pytest_autotune"] for unit in units]
    assert len(declared) == len(set(declared))
    assert unplaced_units(edges, FLOORS["pytest_autotune"]) == []
    assert set(declared) == {top_level_unit(module) for module in edges}


def test_no_import_runs_up_a_floor() -> None:
    edges, _ = import_graph(PACKAGE)
    offenders = [
        f"{module} (floor {below}) -> {target} (floor {above})"
        for module, target, below, above in up_a_floor(edges, FLOORS["pytest_autotune"])
    ]
    assert offenders == []
    assert STRUCTURE.up_a_floor == ()


def test_up_a_floor_on_a_hand_made_graph() -> None:
    """The measure itself: up a floor is named with both floors; down, within a floor, within a unit
    and from or to a unit on no floor are not."""
    floors = (("low",), ("mid", "side"), ("top",))
    edges = {
        "p": {"p.top"},  # the package's __init__, on no floor here
        "p.low": {"p.mid.a"},  # up: 0 -> 1
        "p.mid.a": {"p.low", "p.side", "p.mid", "p.top.b"},  # down, within a floor and a unit, up
        "p.side": {"p.mid.a", "p.other"},  # within a floor; a unit on no floor
        "p.top.b": {"p.low", "p.top"},
        "p.other": {"p.top"},
    }
    assert up_a_floor(edges, floors) == [("p.low", "p.mid.a", 0, 1), ("p.mid.a", "p.top.b", 1, 2)]
    assert unplaced_units(edges, floors) == ["__init__", "other"]
    assert top_level_unit("p") == "__init__"
    assert top_level_unit("p.__main__") == "__main__"


def test_the_layers_section_shows_the_declared_floors() -> None:
    """docs/architecture.md's "Layers" table lists the floors of ``FLOORS``, top first, unit by unit."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| ([^|]+) \|", section, flags=re.MULTILINE)
    shown = {
        int(number): tuple(
            name.removesuffix("/").removesuffix(".py") for name in re.findall(r"`([^`]+)`", units)
        )
        for number, units in rows
    }
    assert [number for number, _ in rows] == [str(n) for n in reversed(range(len(FLOORS["pytest_autotune"])))]
    assert shown == dict(enumerate(FLOORS["pytest_autotune"]))


def test_upward_arrows_are_imports_of_an_enclosing_front_door() -> None:
    """The measure itself: a child importing its folder's ``__init__`` is up, a sibling is not."""
    edges = {"p.a": {"p"}, "p.b": {"p.a"}, "p.q.c": {"p", "p.q"}, "p": {"p.a"}, "p.q": set()}
    assert upward_arrows(edges, {"p", "p.q"}) == [("p.a", "p"), ("p.q.c", "p"), ("p.q.c", "p.q")]


@pytest.mark.parametrize("structure", [STRUCTURE, BENCH_STRUCTURE], ids=["package", "benchmarks"])
def test_no_folder_over_twelve_modules(structure: Structure) -> None:
    folders = structure.per_folder.items()
    crowded = {folder: count for folder, count in folders if count > MAX_MODULES_PER_FOLDER}
    assert crowded == {}


def test_library_never_imports_benchmarks() -> None:
    assert imports_of(PACKAGE, "benchmarks") == []


def test_benchmarks_stand_in_folders() -> None:
    """Only the runner and the shared helpers sit directly in ``benchmarks/``."""
    direct = sorted(p.name for p in BENCHMARKS.glob("*.py"))
    assert direct == ["__init__.py", "__main__.py", "common.py"]
    for init in BENCHMARKS.glob("*/__init__.py"):
        assert init.read_text(encoding="utf-8").startswith('"""'), init  # says which question it holds


def test_every_benchmark_command_is_listed() -> None:
    """Each module with a ``main()`` in a benchmark folder has a name and question, so the runner finds it."""
    listed = {b.module for b in discover()}
    runnable = {
        ".".join(("benchmarks", *p.relative_to(BENCHMARKS).with_suffix("").parts))
        for p in BENCHMARKS.glob("*/*.py")
        if "\ndef main(" in p.read_text(encoding="utf-8")
    }
    assert runnable == listed


def test_docs_run_benchmarks_one_way() -> None:
    """Every benchmark command of README and docs/ is ``python -m benchmarks NAME``, NAME one that exists."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages if "_build" not in page.parts)
    assert "python benchmarks/" not in text
    assert "-m benchmarks." not in text
    names = {b.name for b in discover()}
    used = set(re.findall(r"python -m benchmarks ([a-z][\w-]*)", text))
    assert used
    assert used <= names, used - names


def test_extension_point_files_exist() -> None:
    """The files docs/architecture.md says an extension edits are where it says."""
    for paths in EXTENSION_POINTS.values():
        for path in paths:
            assert (ROOT / path).is_file(), path


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


@pytest.mark.parametrize("layer", ["space", "strategies", "tuning", "timing", "backends", "runtime"])
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


#: Outside backends/, only the OpenCL objective of the test helpers (which the library never imports)
#: may import pyopencl or the OpenCL backend: it runs a whole ``@tunable`` OpenCL test.
OPENCL_OUTSIDE_BACKENDS = "pytest_autotune.testing.opencl_objective"


def test_only_backends_import_opencl() -> None:
    edges, _ = import_graph(PACKAGE)
    offenders = {
        (module, target)
        for module, targets in edges.items()
        if not module.startswith("pytest_autotune.backends") and module != OPENCL_OUTSIDE_BACKENDS
        for target in targets
        if target.startswith("pytest_autotune.backends.opencl")
    }
    assert offenders == set()
    for path in PACKAGE.rglob("*.py"):
        if "backends" not in path.relative_to(PACKAGE).parts and path.name != "opencl_objective.py":
            assert "import pyopencl" not in path.read_text(encoding="utf-8"), path


def test_measures_find_a_circle_and_floors() -> None:
    """The measuring code itself, on a hand-made graph: a <-> b is one circle, c -> a one floor up."""
    edges = {"a": {"b"}, "b": {"a"}, "c": {"a"}, "d": set()}
    assert sorted(strongly_connected(edges)) == [["a", "b"], ["c"], ["d"]]


def test_command_prints_the_measures() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks", "import-graph"],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"floors                 {STRUCTURE.floors}" in done.stdout
    assert "imports up a floor     0" in done.stdout
    assert "   8  plugin\n" in done.stdout  # the declared floors, top first


def test_runner_lists_every_benchmark_with_its_question() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    for benchmark in discover():
        assert f"  {benchmark.name}" in done.stdout
        assert benchmark.question in done.stdout
    unknown = subprocess.run(
        [sys.executable, "-m", "benchmarks", "no-such-benchmark"], cwd=ROOT, capture_output=True, text=True
    )
    assert unknown.returncode == 2
    assert "no benchmark named 'no-such-benchmark'" in unknown.stderr
