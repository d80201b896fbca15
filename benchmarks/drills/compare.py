"""Bad-input drills of ``--autotune-compare``: project layouts, and objectives, failures and caps.

Each drill builds a small project in a git repository (:mod:`benchmarks.drills.compare_kit`: REF
tagged ``ref``, the change committed on top) and runs the comparison in a fresh ``python -m pytest``
with a JSON export and a Markdown summary, as a user would. Two kinds of rows:

* **compare-layout**: how the project is found (an editable ``src/`` or flat install, a normal
  install, a namespace package, ``PYTHONPATH``, pytest's ``pythonpath``, a git submodule) and what
  REF's side cannot have (a compiled extension built in the working tree, a submodule commit that
  is not here, a syntax error or a damaged ``autotune.json`` at REF). A layout row passes when the
  comparison measured each side's own code (the ratio 1/30 of the layout project: every piece
  from its own tree), or said exactly why it did not and did not pass silently;
* **compare-caps**: values that are zero or negative, a tolerance of 100%, a crash and a hang of
  the working tree (under ``--autotune-compare-max-time``, with the trial timeout off), a ``|`` in
  a test id, warnings as errors, and Ctrl-C while the workers start.

"data lost" is True when a drill left the user's checkout changed (status, files) or REF's
exported files behind.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.drills.bad_input_kit import Drill, Observation
from benchmarks.drills.compare_kit import (
    FAITHFUL,
    CompareRun,
    Project,
    extension_project,
    git,
    interrupt_during_start,
    layout_project,
    simple_project,
    submodule_project,
)

__all__ = ["DRILLS"]

LAYOUT, CAPS = "compare-layout", "compare-caps"


def _checked(project: Project, *args: str, env: dict[str, str] | None = None) -> tuple[CompareRun, bool]:
    """Run the comparison; also whether the checkout changed (data lost)."""
    before = git(project.root, "status", "--porcelain", "--untracked-files=all")
    run = project.run("--autotune-compare=ref", *args, env=env)
    return run, git(project.root, "status", "--porcelain", "--untracked-files=all") != before


def _ratio(run: CompareRun, name: str) -> float:
    try:
        return float(run.verdict(name)["ratio"])
    except (AssertionError, KeyError, TypeError, ValueError):
        return math.nan


def _layout(layout: str, how: str, module: str = "mylib") -> Callable[[Path], Observation]:
    def run(directory: Path) -> Observation:
        run, lost = _checked(layout_project(directory, layout, how, module))
        ratio = _ratio(run, "test_lib")
        ok = math.isclose(ratio, FAITHFUL, rel_tol=1e-6) and run.rc == 0
        return Observation(f"ratio {ratio:.4g} (faithful {FAITHFUL:.4g}), rc {run.rc}", ok, lost)

    return run


def _expect(
    build: Callable[[Path], Project],
    *args: str,
    rc: int,
    words: tuple[str, ...],
    absent: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Callable[[Path], Observation]:
    """A drill that passes when the run ends with ``rc`` and its output holds ``words``, not ``absent``."""

    def run(directory: Path) -> Observation:
        found, lost = _checked(build(directory), *args, env=env)
        text = found.output + found.summary
        missing = [w for w in words if w not in text]
        present = [w for w in absent if w in text]
        line = next((line.strip() for line in found.output.splitlines() if any(w in line for w in words)), "")
        ok = found.rc == rc and not missing and not present
        problem = f"; missing {missing}" if missing else f"; printed {present}" if present else ""
        return Observation(f"rc {found.rc}: {line or found.output.strip()[-200:]}{problem}", ok, lost)

    return run


def _extension(directory: Path) -> Observation:
    project, build = extension_project(directory)
    found, lost = _checked(project)
    words = ("cannot compare: REF ref: it would not run its own tree's code", f"compiled extension ({build})")
    ok = found.rc == 1 and all(w in found.output for w in words) and "❌ cannot compare" in found.summary
    line = next(
        (line.strip() for line in found.output.splitlines() if "refused:" in line), found.output[-200:]
    )
    return Observation(f"rc {found.rc}: {line}", ok, lost)


def _submodule(directory: Path) -> Observation:
    found, lost = _checked(submodule_project(directory, available=True), "vendored/test_k.py")
    ratio = _ratio(found, "test_k")
    ok = math.isclose(ratio, 0.5, rel_tol=1e-6) and "new test" not in found.output
    return Observation(f"compared: ratio {ratio:.3g} (REF's submodule 2.0, working tree 1.0)", ok, lost)


def _objective(
    policy: str, ref: str, working: str, verdict: str, ratio: float
) -> Callable[[Path], Observation]:
    def run(directory: Path) -> Observation:
        project = simple_project(directory, f"autotune.record({ref})", f"autotune.record({working})", policy)
        found, lost = _checked(project)
        try:
            got = found.verdict("test_k")
        except AssertionError:
            return Observation(f"no verdict, rc {found.rc}: {found.output.strip()[-200:]}", False, lost)
        ok = got["verdict"] == verdict and math.isclose(got["ratio"], ratio, rel_tol=1e-6)
        return Observation(
            f"{got['verdict']}, change {got['ratio'] - 1:+.0%} of scale {got.get('scale')}", ok, lost
        )

    return run


def _crash(directory: Path) -> Observation:
    crash = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"
    found, lost = _checked(simple_project(directory, "autotune.record(1.0)", crash))
    said = "failed: cannot run the working tree's test: the worker of the working tree was killed by signal "
    said += "SIGSEGV"
    line = next((line.strip() for line in found.output.splitlines() if said in line), "")
    why = found.summary.partition("### Why")[2]
    ok = (
        found.rc == 1
        and bool(line)
        and "❌ failed" in found.summary
        and "⏭️" not in found.summary
        and "SIGSEGV" in why
        and 'File "<string>"' not in why
    )
    return Observation(f"rc {found.rc}: {line}; Markdown: {why.strip()[:80]}", ok, lost)


def _hang(directory: Path) -> Observation:
    project = simple_project(directory, "autotune.record(1.0)", "import time\ntime.sleep(600)")
    began = time.monotonic()
    found, lost = _checked(project, "--autotune-compare-max-time=3", "--autotune-trial-timeout=off")
    took = time.monotonic() - began
    ok = found.rc == 1 and "the time left of --autotune-compare-max-time=3s" in found.output and took < 90
    return Observation(f"rc {found.rc} after {took:.0f}s (pytest and two workers start, 3 s cap)", ok, lost)


def _pipe(directory: Path) -> Observation:
    body = "autotune.record(1.0)"
    project = simple_project(directory, body, body)
    test = project.root / "test_k.py"
    test.write_text(
        "import pytest\n"
        + test.read_text().replace(
            "def test_k(autotune):",
            "@pytest.mark.parametrize('x', [1], ids=['a|b'])\ndef test_k(autotune, x):",
        )
    )
    git(project.root, "commit", "-qam", "ids")
    git(project.root, "tag", "-f", "ref")
    found, lost = _checked(project)
    rows = [line for line in found.summary.splitlines() if line.startswith("| `test_k")]
    cells = [len(row.replace("\\|", "").split("|")) - 2 for row in rows]
    return Observation(f"Markdown row of test_k[a|b]: {cells} cells (7 expected)", cells == [7], lost)


def _interrupt(directory: Path) -> Observation:
    done = interrupt_during_start(directory)
    ok = done.workers_gone < 5 and done.ended < 30 and done.checkout_kept and done.trees_left == 0
    return Observation(
        f"workers gone {done.workers_gone:.1f}s after SIGINT, pytest ended after {done.ended:.1f}s",
        ok,
        not done.checkout_kept or done.trees_left > 0,
    )


FAITHFUL_TEXT = f"each side imports its own tree's library, conftests and data: ratio {FAITHFUL:.4g}"

LAYOUT_DRILLS: list[Drill] = [
    Drill(LAYOUT, "src/ layout, pip install -e (a .pth line)", FAITHFUL_TEXT, _layout("src", "editable")),
    Drill(
        LAYOUT, "flat layout, pip install -e (an import finder)", FAITHFUL_TEXT, _layout("flat", "editable")
    ),
    Drill(
        LAYOUT,
        "src/ layout, pip install . (a copy in site-packages)",
        FAITHFUL_TEXT,
        _layout("src", "installed"),
    ),
    Drill(
        LAYOUT,
        "namespace package acme.mylib, pip install -e",
        FAITHFUL_TEXT,
        _layout("src", "editable", "acme.mylib"),
    ),
    Drill(LAYOUT, "PYTHONPATH=<working tree>/src (absolute)", FAITHFUL_TEXT, _layout("src", "env")),
    Drill(LAYOUT, 'pytest pythonpath = ["src"]', FAITHFUL_TEXT, _layout("src", "ini")),
    Drill(
        LAYOUT,
        "compiled extension built in the working tree only (import optional)",
        "refused: the test fails naming mylib._speed and why; Markdown says cannot compare",
        _extension,
    ),
    Drill(LAYOUT, "test in a git submodule", "compared at the submodule commit REF records", _submodule),
    Drill(
        LAYOUT,
        "submodule commit of REF not checked out here",
        "skipped as not compared, naming the submodule (not as a new test)",
        _expect(
            lambda d: submodule_project(d, available=False),
            "vendored/test_k.py",
            rc=0,
            words=("not compared: vendored/test_k.py at ref: it lies in the git submodule vendored",),
            absent=("new test",),
        ),
    ),
    Drill(
        LAYOUT,
        "syntax error in REF's test file",
        "skipped: not compared: its file does not collect at REF (not a new test)",
        _expect(
            lambda d: simple_project(
                d, "pass", "autotune.record(1.0)", ref_files={"test_k.py": "def test_k(:\n"}
            ),
            rc=0,
            words=("not compared: its file does not collect at REF", "SyntaxError"),
            absent=("new test",),
        ),
    ),
    Drill(
        LAYOUT,
        "damaged autotune.json at REF",
        "skipped: not compared: REF's autotune.json cannot be read (not a new test)",
        _expect(
            lambda d: simple_project(
                d, "autotune.record(1.0)", "autotune.record(1.0)", ref_files={"autotune.json": "{"}
            ),
            rc=0,
            words=("not compared: REF's autotune.json cannot be read",),
            absent=("new test",),
        ),
    ),
]

CAP_DRILLS: list[Drill] = [
    Drill(
        CAPS,
        'objective="score", values -1.0 at REF, -1.5 now',
        "judged on differences: pass, -50% of the scale 1",
        _objective(', objective="score"', "-1.0", "-1.5", "pass", 0.5),
    ),
    Drill(
        CAPS,
        'objective="rate", maximize=True, 2.0 at REF, 0.0 now',
        "judged on differences: regression, +100% of the scale 2",
        _objective(', objective="rate", maximize=True', "2.0", "0.0", "regression", 2.0),
    ),
    Drill(
        CAPS,
        "--autotune-compare-tolerance=100%",
        "usage error (rc 4) at start-up: below 100%",
        _expect(
            lambda d: simple_project(d, "autotune.record(1.0)", "autotune.record(1.0)"),
            "--autotune-compare-tolerance=100%",
            rc=4,
            words=("below 100%",),
            absent=("ValueError",),
        ),
    ),
    Drill(
        CAPS, "working tree segfaults", "the test fails; terminal and Markdown say killed by SIGSEGV", _crash
    ),
    Drill(
        CAPS,
        "working tree hangs, --autotune-trial-timeout=off, --autotune-compare-max-time=3",
        "fails within the cap plus the start-up, naming the cap",
        _hang,
    ),
    Drill(CAPS, "a | in a test id", "the Markdown row keeps its 7 cells", _pipe),
    Drill(
        CAPS,
        "PYTHONWARNINGS=error and -W error",
        "the comparison runs (no deprecated entry point, no unknown option)",
        _expect(
            lambda d: simple_project(d, "autotune.record(2.0)", "autotune.record(1.0)"),
            "-W",
            "error",
            rc=0,
            words=("test_k.py::test_k  -50.0%",),
            absent=("Warning",),
            env={"PYTHONWARNINGS": "error"},
        ),
    ),
    Drill(
        CAPS,
        "Ctrl-C while both workers start (their conftest sleeps 120 s)",
        "workers gone within 5 s, checkout and temporary folder as they were",
        _interrupt,
    ),
]

DRILLS: list[Drill] = [*LAYOUT_DRILLS, *CAP_DRILLS]
