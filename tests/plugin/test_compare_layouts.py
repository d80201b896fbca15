"""``--autotune-compare`` compares REF's code with the working tree's, whatever the project's layout.

Each project (:mod:`tests.plugin.compare_projects`) records a cost made of three pieces: the
library's (read from a data file beside its module), a root ``conftest.py`` fixture and a
``tests/conftest.py`` fixture. At REF they are 2, 3 and 5, in the working tree all 1, so a faithful
comparison measures the ratio 1/30 exactly; a piece taken from the working tree on REF's side shows
as a missing factor (before issue 34, an installed library gave 1/15: REF's side imported the
working tree's library). The values are recorded, not timed, so the verdict is exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugin.compare_projects import REF_PIECES, Project, commit_ref_then_change, install, write_project

FAITHFUL = 1 / (REF_PIECES[0] * REF_PIECES[1] * REF_PIECES[2])


def _project(tmp_path: Path, layout: str, module: str = "mylib", *, pythonpath: bool = False) -> Path:
    root = tmp_path / "repo"
    root.mkdir()

    def write(pieces: tuple[float, int, int]) -> None:
        write_project(root, layout=layout, module=module, pieces=pieces, pythonpath=pythonpath)

    write(REF_PIECES)
    commit_ref_then_change(root, lambda: write((1.0, 1, 1)))
    return root


def _assert_faithful(project: Project) -> None:
    run = project.run("--autotune-compare=ref")
    verdict = run.verdict()
    assert verdict["ratio"] == pytest.approx(FAITHFUL), run.output[-3000:]
    assert verdict["verdict"] == "pass"
    assert run.rc == 0, run.output[-3000:]


@pytest.mark.parametrize(
    ("layout", "module", "editable"),
    [
        ("src", "mylib", True),  # setuptools writes a .pth line with the working tree's src/
        ("flat", "mylib", True),  # setuptools installs an import finder mapping mylib to the working tree
        ("src", "mylib", False),  # a normal install: a copy in site-packages
        ("src", "acme.mylib", True),  # a namespace package (acme has no __init__.py)
    ],
    ids=["src-editable", "flat-editable-finder", "src-installed", "namespace-editable"],
)
def test_an_installed_project_is_compared_with_refs_own_code(
    tmp_path: Path, layout: str, module: str, editable: bool
) -> None:
    root = _project(tmp_path, layout, module)
    boot = install(root, tmp_path / "prefix", editable=editable)
    _assert_faithful(Project(root, [boot]))


def test_a_pythonpath_into_the_working_tree_is_moved_to_refs_tree(tmp_path: Path) -> None:
    root = _project(tmp_path, "src")
    _assert_faithful(Project(root, [root / "src"]))  # an absolute PYTHONPATH entry


def test_pytests_own_pythonpath_setting_is_faithful(tmp_path: Path) -> None:
    root = _project(tmp_path, "src", pythonpath=True)  # no install: pytest puts src/ on sys.path
    _assert_faithful(Project(root, []))
