"""Small real projects in git repositories, compared with ``pytest --autotune-compare`` in a fresh process.

Used by the compare drills (:mod:`benchmarks.drills.compare`) and the layout and hardening tests of
``--autotune-compare`` (``tests/plugin/test_compare_*.py``): each project is laid out as a
Python project is (``src/`` or flat, installed editable or normally into a throwaway prefix that a
``sitecustomize`` adds as a site folder, so ``.pth`` lines and import finders act as in a venv),
committed as REF, changed, committed again, and compared in a ``python -m pytest`` subprocess.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_autotune.plugin.compare.git_ref import REF_DIR_PREFIX


def git(repo: Path, *args: str) -> str:
    """``git args`` in ``repo`` with a fixed committer; its standard output, stripped (a failure raises)."""
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


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


# -- the scenarios the tests and the drills share -------------------------------------------------------
#: The ratio a faithful comparison of a layout project measures (every piece from its own tree).
FAITHFUL = 1 / (REF_PIECES[0] * REF_PIECES[1] * REF_PIECES[2])

SIMPLE = """
from pytest_autotune import Interval, tunable


@tunable(A=Interval(1, 2, default=1){policy})
def test_k(autotune):
{body}
"""


def write_simple(root: Path, body: str, policy: str = "") -> None:
    """``test_k.py``: a tunable test whose body is ``body`` (``policy``: more ``@tunable`` keywords)."""
    text = SIMPLE.format(body="\n".join("    " + line for line in body.strip().splitlines()), policy=policy)
    (root / "test_k.py").write_text(text)


def simple_project(
    base: Path, ref_body: str, working_body: str, policy: str = "", ref_files: dict[str, str] | None = None
) -> Project:
    """A repository whose ``test_k`` runs ``ref_body`` at REF and ``working_body`` in the working tree;
    ``ref_files`` are more files of REF's commit (removed again in the change)."""
    root = base / "repo"
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly\n")
    write_simple(root, ref_body, policy)
    for name, text in (ref_files or {}).items():
        (root / name).write_text(text)

    def change() -> None:
        write_simple(root, working_body, policy)
        for name in ref_files or {}:
            if name != "test_k.py":
                (root / name).unlink()

    commit_ref_then_change(root, change)
    return Project(root, [])


def layout_project(base: Path, layout: str, how: str, module: str = "mylib") -> Project:
    """A layout project (:data:`TEST_MODULE`) found the way ``how`` says: ``editable`` or ``installed``
    (pip into a throwaway prefix), ``env`` (an absolute ``PYTHONPATH`` to ``src/``) or ``ini``
    (pytest's ``pythonpath = ["src"]``)."""
    root = base / "repo"
    root.mkdir()

    def write(pieces: tuple[float, int, int]) -> None:
        write_project(root, layout=layout, module=module, pieces=pieces, pythonpath=how == "ini")

    write(REF_PIECES)
    commit_ref_then_change(root, lambda: write((1.0, 1, 1)))
    if how in ("editable", "installed"):
        return Project(root, [install(root, base / "prefix", editable=how == "editable")])
    return Project(root, [root / "src"] if how == "env" else [])


#: An optional compiled extension, as projects import one with a pure-Python fallback.
OPTIONAL_EXTENSION = "\ntry:\n    from mylib import _speed\nexcept ImportError:\n    _speed = None\n"


def extension_project(base: Path) -> tuple[Project, Path]:
    """An editable ``src/`` project whose working tree holds an in-place build of ``mylib._speed``
    (ignored by git, so REF's exported files lack it); returns the project and the build's path."""
    root = base / "repo"
    root.mkdir()

    def write(pieces: tuple[float, int, int]) -> None:
        write_project(root, layout="src", pieces=pieces)
        init = root / "src" / "mylib" / "__init__.py"
        init.write_text(init.read_text() + OPTIONAL_EXTENSION)

    write(REF_PIECES)
    commit_ref_then_change(root, lambda: write((1.0, 1, 1)))
    build = root / "src" / "mylib" / f"_speed{importlib.machinery.EXTENSION_SUFFIXES[0]}"
    build.write_bytes(b"not really a build")
    return Project(root, [install(root, base / "prefix", editable=True)]), build.resolve()


def submodule_project(base: Path, *, available: bool) -> Project:
    """A repository whose ``vendored/test_k.py`` comes from a git submodule (REF records 2.0, the
    working tree 1.0); unless ``available``, REF records a submodule that is not checked out."""
    root = base / "repo"
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\naddopts = -p no:randomly\n")
    git(root, "init", "-q")
    if not available:
        (root / "vendored").mkdir()
        write_simple(root / "vendored", "autotune.record(1.0)")
        git(root, "add", "pytest.ini")
        git(root, "update-index", "--add", "--cacheinfo", f"160000,{'ab' * 20},vendored")  # a gitlink
        git(root, "commit", "-q", "-m", "ref")
        git(root, "tag", "ref")
        return Project(root, [])
    sub = base / "sub"
    sub.mkdir()
    write_simple(sub, "autotune.record(2.0)")
    git(sub, "init", "-q")
    git(sub, "add", ".")
    git(sub, "commit", "-q", "-m", "sub ref")
    git(root, "submodule", "add", "-q", str(sub), "vendored")
    git(root, "commit", "-q", "-am", "ref")
    git(root, "tag", "ref")
    write_simple(root / "vendored", "autotune.record(1.0)")  # the submodule's change, committed in it
    git(root / "vendored", "commit", "-qam", "faster")
    git(root, "commit", "-qam", "bump the submodule")
    return Project(root, [])


#: A conftest.py that makes the compare workers (not the parent) sleep in their start-up.
SLOW_START = """
import os
import time
from pathlib import Path

if os.environ.get("PYTEST_AUTOTUNE_TRIAL_WORKER"):  # the compare workers only, not the parent
    Path(os.environ["MARKS"], str(os.getpid())).write_text("")
    time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Interrupted:
    """What Ctrl-C during the workers' start-up did: seconds until the workers were gone and until
    pytest ended, its output, and whether the checkout and the temporary folder were left as they were."""

    workers_gone: float
    ended: float
    output: str
    checkout_kept: bool
    trees_left: int


def interrupt_during_start(base: Path) -> Interrupted:
    """Start a comparison whose workers sleep in their start-up, send SIGINT once both started."""
    project = simple_project(base, "autotune.record(1.0)", "autotune.record(1.0)")
    root = project.root
    (root / "conftest.py").write_text(SLOW_START)
    git(root, "add", "conftest.py")
    git(root, "commit", "-qm", "slow start")
    git(root, "tag", "-f", "ref")
    marks = base / "marks"
    marks.mkdir()
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    env = {k: v for k, v in _env([]).items() if not k.startswith("PYTEST_AUTOTUNE")}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--autotune-compare=ref", "-p", "no:cacheprovider"],
        cwd=root,
        env={**env, "MARKS": str(marks)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = [int(mark.name) for mark in marks.iterdir()]
        if len(workers) < 2:
            raise RuntimeError("the two workers did not start")
        process.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        while any(_alive(pid) for pid in workers) and time.monotonic() - interrupted < 60:
            time.sleep(0.05)
        gone = time.monotonic() - interrupted
        output, _ = process.communicate(timeout=150)
        ended = time.monotonic() - interrupted
    finally:
        process.kill()
        process.wait()
    trees = list(Path(tempfile.gettempdir()).glob(f"{REF_DIR_PREFIX}{process.pid}-*"))
    kept = git(root, "status", "--porcelain", "--untracked-files=all") == status
    return Interrupted(gone, ended, output, kept, len(trees))
