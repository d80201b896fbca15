"""The temporary project that ``benchmarks/gate/bench.py`` checks, the slowdowns it injects, and the load.

The project is a git repository (so the relative mode can compare with ``HEAD``) holding the five
example kernels of ``example_kernels/`` and the numpy kernel of ``benchmarks/gate/``, with the
top-level ``conftest.py`` (the OpenCL availability gate) and ``project_files/gate_slowdown.py``.
Each OpenCL test's measured launch is rewritten to go through ``gate_slowdown.launch`` (the only
change to the examples); a slowdown is injected by editing ``gate_slowdown.FRACTION`` in the
working tree, never committed. ``project_files/gate_recorder.py`` is copied too (loaded only by
the absolute-mode runs, with ``-p gate_recorder``).

:class:`BusyLoad` starts N processes that spin on a CPU and stops them when the block ends, however
it ends (an exception, Ctrl-C, or SIGTERM, which it turns into ``KeyboardInterrupt``).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import Final

from benchmarks.common import ROOT

__all__ = [
    "KERNELS",
    "BusyLoad",
    "Kernel",
    "Run",
    "git",
    "make_project",
    "project_env",
    "run_pytest",
    "set_fraction",
]

GATE = ROOT / "benchmarks" / "gate" / "project_files"
EXAMPLES = ROOT / "example_kernels"
#: Plugins a run does not need (and that would add noise or seconds); the trial workers inherit them.
PLUGINS_OFF: Final = (
    "-p",
    "no:randomly",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:xdist",
    "-p",
    "no:benchmark",
)


@dataclass(frozen=True)
class Kernel:
    """A kernel test of the project: its name, files, node id and where its launch's output is."""

    name: str
    files: tuple[Path, ...]
    nodeid: str
    out: int | None  # index of the output among the kernel's arguments; None: not an OpenCL launch


def _example(name: str, out: int) -> Kernel:
    return Kernel(
        name, (EXAMPLES / f"test_{name}.py", EXAMPLES / f"{name}.cl"), f"test_{name}.py::test_{name}", out
    )


#: The kernels, by name: the five examples (output argument of each launch) and the numpy kernel.
KERNELS: Final = {
    "saxpy": _example("saxpy", -1),
    "gemm": _example("gemm", -1),
    "conv2d": _example("conv2d", -3),
    "reduction": _example("reduction", -1),
    "transpose": _example("transpose", -2),
    "numpy": Kernel("numpy", (GATE / "test_gate_numpy.py",), "test_gate_numpy.py::test_gate_numpy", None),
}
_LAUNCH = re.compile(r"autotune\.measure\(lambda: (\w+)\(cl_queue, ")


def _inject_launch(source: str, out: int, name: str) -> str:
    """Route the measured launch through ``gate_slowdown.launch`` (exactly one in each example)."""
    routed, count = _LAUNCH.subn(
        rf"autotune.measure(lambda: gate_slowdown.launch(\1, {out}, cl_queue, ", source
    )
    if count != 1:
        raise SystemExit(
            f"example {name}: expected one measured launch 'autotune.measure(lambda: K(cl_queue, ...'"
        )
    head = "from __future__ import annotations\n"
    return routed.replace(head, head + "\nimport gate_slowdown\n", 1)


def git(project: Path, *args: str) -> str:
    """Run git in the project (a fixed identity, no user configuration needed)."""
    done = subprocess.run(
        ["git", "-c", "user.name=gate-bench", "-c", "user.email=gate-bench@localhost", *args],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def make_project(project: Path, kernels: list[str]) -> None:
    """Write the project (module docstring) into the empty folder ``project`` and commit it."""
    for name in kernels:
        kernel = KERNELS[name]
        for path in kernel.files:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".py" and kernel.out is not None:
                text = _inject_launch(text, kernel.out, name)
            (project / path.name).write_text(text, encoding="utf-8")
    shutil.copy(ROOT / "conftest.py", project / "conftest.py")
    for name in ("gate_slowdown.py", "gate_recorder.py"):
        shutil.copy(GATE / name, project / name)
    (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (project / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n*.log\n*.xml\nout*.json\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "kernels")


def set_fraction(project: Path, fraction: float) -> None:
    """Inject a slowdown of ``fraction`` (0 restores the committed source)."""
    path = project / "gate_slowdown.py"
    text = re.sub(r"(?m)^FRACTION = .*$", f"FRACTION = {fraction!r}", path.read_text(encoding="utf-8"))
    path.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Run:
    """One pytest process: exit status, output tail and wall-clock seconds."""

    returncode: int
    output: str
    seconds: float


def project_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a process in the project: this checkout importable first, no autotune settings."""
    clean = {k: v for k, v in env.items() if not k.startswith(("PYTEST_AUTOTUNE", "PYTEST_ADDOPTS"))}
    clean["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return clean


def run_pytest(project: Path, env: dict[str, str], *args: str, timeout: float = 1800) -> Run:
    """A fresh ``python -m pytest`` in the project, importing this checkout's pytest_autotune."""
    clean = project_env(env)
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGINS_OFF, *args],
            cwd=project,
            env=clean,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else str(exc.stdout or "")
        return Run(-1, f"timed out after {timeout:g}s\n{out[-3000:]}", time.perf_counter() - started)
    return Run(done.returncode, (done.stdout + done.stderr)[-3000:], time.perf_counter() - started)


class BusyLoad:
    """``with BusyLoad(n):`` n processes spin on a CPU for the duration of the block (module docstring)."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._children: list[subprocess.Popen[bytes]] = []
        self._previous: object = None

    def __enter__(self) -> BusyLoad:
        self._previous = signal.signal(signal.SIGTERM, self._interrupt)
        for _ in range(self.processes):
            self._children.append(
                subprocess.Popen(
                    [sys.executable, "-c", "while True: pass"],
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,  # a terminal's Ctrl-C reaches the benchmark, which stops them
                )
            )
        return self

    @staticmethod
    def _interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for child in self._children:
            child.kill()
        for child in self._children:
            child.wait()
        self._children.clear()
        signal.signal(signal.SIGTERM, self._previous)  # type: ignore[arg-type]
