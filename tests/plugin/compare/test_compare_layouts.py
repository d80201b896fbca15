"""``--autotune-compare`` compares REF's code with the working tree's, whatever the project's layout.

Each project (:mod:`benchmarks.drills.compare_kit`) records a cost made of three pieces: the
library's (read from a data file beside its module: a kernel source read by path), a root
``conftest.py`` fixture and a ``tests/conftest.py`` fixture. At REF they are 2, 3 and 5, in the
working tree all 1, so a faithful comparison measures the ratio 1/30 exactly; a piece taken from
the working tree on REF's side shows as a missing factor (before issue 34, an installed library
gave 1/15: REF's side imported the working tree's library). The values are recorded, not timed,
so the verdict is exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.drills.compare_kit import FAITHFUL, layout_project


@pytest.mark.parametrize(
    ("layout", "how", "module"),
    [
        ("src", "editable", "mylib"),  # setuptools writes a .pth line with the working tree's src/
        ("flat", "editable", "mylib"),  # setuptools installs an import finder mapping mylib there
        ("src", "installed", "mylib"),  # a normal install: a copy in site-packages
        ("src", "editable", "acme.mylib"),  # a namespace package (acme has no __init__.py)
        ("src", "env", "mylib"),  # PYTHONPATH names the working tree's src/ (absolute)
        ("src", "ini", "mylib"),  # pytest's pythonpath = ["src"]
    ],
    ids=["src-editable", "flat-editable", "src-installed", "namespace-editable", "pythonpath-env", "ini"],
)
def test_each_side_runs_its_own_trees_code(tmp_path: Path, layout: str, how: str, module: str) -> None:
    run = layout_project(tmp_path, layout, how, module).run("--autotune-compare=ref")
    verdict = run.verdict()
    assert verdict["ratio"] == pytest.approx(FAITHFUL), run.output[-3000:]
    assert verdict["verdict"] == "pass"
    assert run.rc == 0, run.output[-3000:]
