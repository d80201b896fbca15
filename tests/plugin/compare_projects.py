"""Small real projects in git repositories, compared with ``pytest --autotune-compare`` in a fresh process.

Used by the layout and hardening tests of ``--autotune-compare``: each project is laid out as a
Python project is (``src/`` or flat, installed editable or normally into a throwaway prefix that a
``sitecustomize`` adds as a site folder, so ``.pth`` lines and import finders act as in a venv),
committed as REF, changed, committed again, and compared in a ``python -m pytest`` subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.plugin.git_commands import git

#: The tunable test of the projects: it records a cost made of the library's, read from a data
#: file next to the library's module (a kernel source read by path), and of two conftest fixtures
#: (conftest.py files at two levels). REF's and the working tree's differ by distinct primes per
#: piece, so the ratio says which piece came from where.
TEST_MODULE = """
from {module} import cost
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 2, default=1))
def test_lib(autotune, root_factor, tests_factor):
    autotune.record(cost() * root_factor * tests_factor)
"""
LIBRARY = """
from pathlib import Path


def cost():
    return float((Path(__file__).parent / "cost.txt").read_text())
"""
CONFTEST = """
import pytest


@pytest.fixture
def {name}():
    return {value}
"""
#: REF's pieces (library cost, root conftest, tests/ conftest); the working tree's are all 1.
REF_PIECES = (2.0, 3, 5)


def _env(extra_path: list[Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_AUTOTUNE", "PYTEST_ADDOPTS"))}
    paths = [str(p) for p in extra_path] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


@dataclass
class Project:
    """A project in a git repository at ``root``; ``path`` is what the subprocesses get on PYTHONPATH."""

    root: Path
    path: list[Path]

    def run(self, *args: str, timeout: float = 300, env: dict[str, str] | None = None) -> CompareRun:
        """``python -m pytest args`` in the project, with a JSON export and a Markdown summary
        (``env``: more environment variables)."""
        out = self.root.parent / "out"
        out.mkdir(exist_ok=True)
        json_path, md_path = out / "out.json", out / "summary.md"
        for path in (json_path, md_path):
            path.unlink(missing_ok=True)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-p",
                "no:randomly",
                "-p",
                "no:cacheprovider",
                "-rs",
                f"--autotune-json={json_path}",
                f"--autotune-report-md={md_path}",
                *args,
            ],
            cwd=self.root,
            env={**_env(self.path), **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        data = json.loads(json_path.read_text()) if json_path.exists() else {"benchmarks": []}
        summary = md_path.read_text() if md_path.exists() else ""
        return CompareRun(done.returncode, done.stdout + done.stderr, data, summary)


@dataclass
class CompareRun:
    """What a compare run printed, exported and summarised."""

    rc: int
    output: str
    export: dict[str, Any]
    summary: str

    def verdict(self, name: str = "test_lib") -> dict[str, Any]:
        """``extra_info["autotune_compare"]`` of test ``name``, with the detail merged in."""
        for bench in self.export.get("benchmarks", []):
            if bench["name"] == name:
                extra = bench["extra_info"]
                return {**extra.get("autotune_compare_detail", {}), **extra["autotune_compare"]}
        raise AssertionError(f"no compared result for {name}:\n{self.output[-4000:]}")


def write_project(
    root: Path,
    *,
    layout: str,
    module: str = "mylib",
    pieces: tuple[float, int, int],
    pythonpath: bool = False,
) -> None:
    """Write (or overwrite) the project's files: ``layout`` is ``src`` or ``flat``; ``module`` may be
    dotted (a namespace package: ``acme.mylib``, the ``acme`` folder without ``__init__.py``);
    ``pythonpath`` sets pytest's ``pythonpath = ["src"]``."""
    cost, root_factor, tests_factor = pieces
    base = root / "src" if layout == "src" else root
    package = base.joinpath(*module.split("."))
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(LIBRARY)
    (package / "cost.txt").write_text(f"{cost}\n")
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "test_k.py").write_text(TEST_MODULE.format(module=module))
    (root / "conftest.py").write_text(CONFTEST.format(name="root_factor", value=root_factor))
    (root / "tests" / "conftest.py").write_text(CONFTEST.format(name="tests_factor", value=tests_factor))
    top = module.split(".")[0]
    find = (
        f'[tool.setuptools.packages.find]\nwhere = ["src"]\ninclude = ["{top}*"]\nnamespaces = true\n'
        if layout == "src"
        else f'[tool.setuptools]\npackages = ["{module}"]\n'
    )
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{top}-proj"\nversion = "0.1"\n\n{find}\n'
        '[tool.setuptools.package-data]\n"*" = ["*.txt"]\n\n'
        '[tool.pytest.ini_options]\naddopts = "-p no:randomly"\n'
        + ('pythonpath = ["src"]\n' if pythonpath else "")
    )
    (root / ".gitignore").write_text("*.egg-info/\nbuild/\n*.so\n__pycache__/\n")


def install(root: Path, prefix: Path, *, editable: bool) -> Path:
    """``pip install [-e] root`` into ``prefix``; returns a folder whose ``sitecustomize`` adds the
    prefix's site-packages as a site folder (put it on PYTHONPATH)."""
    args = ["-e", str(root)] if editable else [str(root)]
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run(
        [*pip, "--prefix", str(prefix), *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    site = Path(sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)}))
    boot = prefix / "boot"
    boot.mkdir(exist_ok=True)
    (boot / "sitecustomize.py").write_text(f"import site\nsite.addsitedir({str(site)!r})\n")
    return boot


def commit_ref_then_change(root: Path, change: Any) -> None:
    """Commit the project as ``ref`` (tagged), call ``change()``, commit that as HEAD."""
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "ref")
    git(root, "tag", "ref")
    change()
    git(root, "add", ".")
    git(root, "commit", "-q", "--allow-empty", "-m", "change")
