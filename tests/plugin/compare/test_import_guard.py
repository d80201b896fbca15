"""The compare workers' import guard, piece by piece (the end-to-end layouts are in test_compare_layouts)."""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types
from pathlib import Path

import pytest

from pytest_autotune.plugin.compare.import_guard import GuardSpec, TreeFinder, verify
from pytest_autotune.plugin.compare.project_packages import project_packages


def _package(root: Path, name: str, text: str = "") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(text)
    return folder


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """REF's exported tree and the working tree, each with ``src/mylib``."""
    ref, working = tmp_path / "ref", tmp_path / "working"
    for tree in (ref, working):
        _package(tree / "src", "mylib", f"WHERE = {str(tree)!r}\n")
    return ref.resolve(), working.resolve()


def _finder(
    ref: Path, working: Path, packages: dict[str, str | None], outside: tuple[str, ...] = ()
) -> TreeFinder:
    exempt = str(Path(__file__).resolve().parents[3] / "pytest_autotune")
    return TreeFinder(GuardSpec("REF main", str(ref), str(working), packages, exempt, outside))


def test_the_spec_travels_through_the_environment(trees: tuple[Path, Path]) -> None:
    ref, working = trees
    spec = GuardSpec("REF main", str(ref), str(working), {"mylib": "src/mylib", "_c": None}, "/x", ("/v",))
    assert GuardSpec.from_text(spec.to_env()) == spec


def test_a_module_the_working_tree_would_give_comes_from_refs_tree(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ref, working = trees
    monkeypatch.syspath_prepend(str(working / "src"))  # an editable install's .pth line
    found = _finder(ref, working, {"mylib": "src/mylib"}).find_spec("mylib", None)
    assert found.origin == str(ref / "src" / "mylib" / "__init__.py")
    assert list(found.submodule_search_locations) == [str(ref / "src" / "mylib")]


def test_an_installed_copy_of_a_project_package_is_replaced_by_the_trees(
    trees: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref, working = trees
    site = tmp_path / "site-packages"
    _package(site, "mylib", "WHERE = 'installed'\n")
    monkeypatch.syspath_prepend(str(site))
    finder = _finder(ref, working, {"mylib": "src/mylib"})
    assert finder.find_spec("mylib", None).origin == str(ref / "src" / "mylib" / "__init__.py")
    assert finder.installed == {"mylib": str(site.resolve() / "mylib")}


def test_a_compiled_extension_only_the_working_tree_holds_is_refused(trees: tuple[Path, Path]) -> None:
    ref, working = trees
    build = working / "src" / "mylib" / f"_speed{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    build.write_bytes(b"")
    finder = _finder(ref, working, {"mylib": "src/mylib"})
    with pytest.raises(ModuleNotFoundError, match=r"refuses mylib\._speed"):
        finder.find_spec("mylib._speed", [str(ref / "src" / "mylib")])
    assert finder.refusals == [
        f"mylib._speed: it is a compiled extension ({build}) that REF main's tree does not hold; "
        "comparing it needs a build of each side"
    ]
    # a plain module the working tree added since is just not there, as at REF
    (working / "src" / "mylib" / "added.py").write_text("")
    assert finder.find_spec("mylib.added", [str(ref / "src" / "mylib")]) is None
    assert len(finder.refusals) == 1


def test_verify_names_modules_loaded_from_the_working_tree_but_not_the_interpreters(
    trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    ref, working = trees
    venv = working / ".venv" / "lib" / "site-packages"
    escaped, tool, own = (types.ModuleType(n) for n in ("escaped_x", "tool_x", "mylib"))
    escaped.__file__ = str(working / "src" / "escaped_x.py")
    tool.__file__ = str(venv / "tool_x.py")
    own.__file__ = str(ref / "src" / "mylib" / "__init__.py")
    for module in (escaped, tool, own):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    finder = _finder(ref, working, {"mylib": "src/mylib"}, outside=(str(working / ".venv"),))
    found = verify(finder)
    assert found == [f"escaped_x was imported from {escaped.__file__}, a file of the working tree"]
    assert verify(finder) == []  # each module is read once
    assert finder.describe() is None  # verify's findings count only through problems()


def test_the_projects_packages_are_found_where_projects_keep_them(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _package(root, "flatpkg")
    _package(root / "src", "srcpkg")
    (root / "src" / "ns" / "inner").mkdir(parents=True)
    (root / "src" / "ns" / "inner" / "mod.py").write_text("")
    (root / "src" / "single.py").write_text("")
    (root / "docs").mkdir()  # no __init__.py at the top level: not a package
    (root / "conftest.py").write_text("")
    found = project_packages(root)
    assert found == {
        "flatpkg": "flatpkg",
        "ns": os.path.join("src", "ns"),
        "single": os.path.join("src", "single.py"),
        "srcpkg": os.path.join("src", "srcpkg"),
    }
