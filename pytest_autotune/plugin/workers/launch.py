"""Starting a worker pytest for one test: its command line, private folder, process and channel.

Shared by the two kinds of worker: tuning trials (:mod:`pytest_autotune.plugin.workers.parent`) and
the two sides of ``--autotune-compare`` (:mod:`pytest_autotune.plugin.compare.side`). A worker is a
fresh ``python -m pytest`` (fork + exec: OpenCL drivers are not fork-safe) that collects the test's
file, keeps only the test's node id and sets it up itself; :func:`launch_worker` starts it in its
own process group with a socket to the parent and a pipe it watches to die with the parent.
What starting one takes is plain data, a :class:`WorkerRecipe` (:func:`worker_recipe`), so a worker
can also be started on another host that holds the same checkout (:func:`launch_recipe`: the
Dask executor's trial workers).

What the worker inherits from the parent (:func:`worker_arguments`): the rootdir and ini file, the
``-p`` plugins, the import mode, ``-o`` overrides, ``-W`` filters, ``--confcutdir``/``--noconftest``
and the environment it is given. Given ``root`` (the REF side of a comparison), the paths under the
parent's rootdir are moved under ``root``; a comparison's workers import this process's
pytest-autotune even from a tree that holds another copy of it (:func:`pinned_pytest`). Its output
goes to a log file in its private folder
(``pytest-autotune-worker-<pid>-*`` in the temporary directory, named after the owning pytest), which
is removed when it stops; the first worker a later run starts removes the folders of owners that
are no longer alive (:func:`remove_stale_dirs`), never those of live runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pytest_autotune.plugin.workers.protocol import ENV_VAR, WorkerRole, WorkerSpec
from pytest_autotune.tuning.process.worker import Launched

if TYPE_CHECKING:
    import pytest

__all__ = [
    "WORKER_DIR_PREFIX",
    "WorkerRecipe",
    "launch_recipe",
    "launch_worker",
    "pinned_home",
    "pinned_pytest",
    "relocate",
    "remove_stale_dirs",
    "remove_stale_worker_dirs",
    "worker_arguments",
    "worker_recipe",
]

#: Name prefix of a worker's private directory, followed by the owning pytest's pid and a dash.
WORKER_DIR_PREFIX: Final = "pytest-autotune-worker-"
_checked_prefixes: set[str] = set()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale_dirs(prefix: str, base: Path | None = None) -> list[Path]:
    """Remove folders ``<prefix><pid>-*`` under ``base`` (the temporary directory) whose pid is dead.

    Folders of live processes (this one included) and those not named by a pid are left alone.
    Returns the removed paths.
    """
    owned = re.compile(re.escape(prefix) + r"(\d+)-")
    removed = []
    for path in Path(base or tempfile.gettempdir()).glob(prefix + "*"):
        match = owned.match(path.name)
        if match is None or not path.is_dir() or path.is_symlink():
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def remove_stale_worker_dirs(base: Path | None = None) -> list[Path]:
    """:func:`remove_stale_dirs` of workers' private folders (:data:`WORKER_DIR_PREFIX`)."""
    return remove_stale_dirs(WORKER_DIR_PREFIX, base)


def _private_dir() -> Path:
    """A new private directory for a worker, named after this process (cleans stale ones once)."""
    if WORKER_DIR_PREFIX not in _checked_prefixes:
        _checked_prefixes.add(WORKER_DIR_PREFIX)
        remove_stale_worker_dirs()
    return Path(tempfile.mkdtemp(prefix=f"{WORKER_DIR_PREFIX}{os.getpid()}-"))


class _PopenChild:
    """:class:`~pytest_autotune.tuning.process.isolated.Child` over a worker started in its own process group.

    The exit status is read without reaping the process (``waitid`` with ``WNOWAIT``), so until
    :meth:`kill` reaps it its process id, which is also its group's id, cannot be reused: killing
    the group can never hit an unrelated process.
    """

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._status: int | None = None

    @property
    def pid(self) -> int:
        return self._process.pid

    def exitcode(self) -> int | None:
        if not hasattr(os, "waitid"):  # macOS: reaps; kill() then spares the group, whose id may be reused
            return self._process.poll()
        if self._status is None and self._process.returncode is None:
            try:
                info = os.waitid(os.P_PID, self._process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                info = None
            if info is not None:
                exited = info.si_code == os.CLD_EXITED
                self._status = info.si_status if exited else -info.si_status
        return self._process.returncode if self._status is None else self._status

    def kill(self) -> None:
        if self._process.returncode is None:
            with contextlib.suppress(OSError):
                os.killpg(self._process.pid, signal.SIGKILL)  # the worker and what the body started
            self._process.wait()

    def wait(self, timeout: float) -> int | None:
        deadline = time.monotonic() + timeout
        while (code := self.exitcode()) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return code


def _unneeded_plugins(item: pytest.Item) -> list[str]:
    """Plugins the worker skips because the test cannot need them (they cost seconds to import)."""
    if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
        return []
    return ["hypothesispytest"]  # acts on @given tests only; importing hypothesis takes ~1 s


def relocate(path: Path, base: Path, root: Path) -> Path:
    """``path`` moved from under ``base`` to under ``root`` (unchanged when it is not under ``base``)."""
    try:
        return root / Path(path).relative_to(base)
    except ValueError:
        return Path(path)


def pinned_pytest() -> list[str]:
    """``python -m pytest``, but with this process's pytest-autotune whatever the working directory holds.

    ``-m`` puts the working directory first on ``sys.path``; in a tree that holds a ``pytest_autotune``
    package (another commit of this project) the worker would import that one. So the interpreter
    runs with ``-P`` (no such entry), imports the plugin from where this process found it, and only
    then puts the working directory first, as ``-m`` would have, for the tree's own modules. Then the
    import guard its environment describes is installed
    (:func:`~pytest_autotune.plugin.compare.import_guard.install_from_environ`), before pytest
    imports any of the project's code, and pytest starts through its supported entry point,
    :func:`pytest.main`.
    """
    boot = (
        f"import os, sys; sys.path.insert(0, {pinned_home()!r}); import pytest_autotune.plugin; "
        "sys.path[0] = os.getcwd(); "
        "from pytest_autotune.plugin.compare.import_guard import install_from_environ; "
        "install_from_environ(); "
        "import pytest; code = pytest.main(); sys.stdout.flush(); sys.exit(int(code))"
    )
    return [sys.executable, "-P", "-c", boot]


def pinned_home() -> str:
    """The folder that holds this process's ``pytest_autotune`` package."""
    return str(Path(__file__).resolve().parents[3])


#: Stands for the worker's private folder in a recipe's arguments (made where the worker starts).
_PRIVATE: Final = "\x00private\x00"


@dataclass(frozen=True)
class WorkerRecipe:
    """How to start a worker pytest for one test, as plain data (it can be pickled to another host).

    ``args`` is the command line with a placeholder for the private folder, ``cwd`` the folder it
    starts in, ``nodeid`` and ``role`` what it serves.
    """

    nodeid: str
    args: tuple[str, ...]
    cwd: str
    role: WorkerRole = "trial"

    def arguments(self, private: Path) -> list[str]:
        """The command line for a worker whose private folder is ``private``."""
        return [arg.replace(_PRIVATE, str(private)) for arg in self.args]


def worker_recipe(item: pytest.Item, root: Path | None = None, *, role: WorkerRole = "trial") -> WorkerRecipe:
    """What starting a worker pytest for ``item`` in ``role`` takes (see the module docstring).

    ``root`` replaces the rootdir (paths under it move along; an ini file missing there is left
    out); a ``compare`` worker starts with :func:`pinned_pytest` rather than ``python -m pytest``.
    """
    config, nodeid = item.config, item.nodeid
    base = config.rootpath
    root = base if root is None else root
    option = config.option
    private = Path(_PRIVATE)
    start = pinned_pytest() if role == "compare" else [sys.executable, "-m", "pytest"]
    args = [*start, str(root / nodeid.split("::", 1)[0])]
    args += ["--rootdir", str(root), "-o", "addopts="]
    if config.pluginmanager.has_plugin("cacheprovider"):  # else cache_dir is an unknown option (a warning)
        args += ["-o", f"cache_dir={private / 'cache'}"]
    inipath = None if config.inipath is None else relocate(config.inipath, base, root)
    if inipath is not None and inipath.exists():
        args += ["-c", str(inipath)]
    for plugin in getattr(option, "plugins", None) or ():
        args += ["-p", plugin]
    args += [f"--import-mode={getattr(option, 'importmode', 'prepend')}"]
    for override in getattr(option, "override_ini", None) or ():
        args += ["-o", override]
    for warning in getattr(option, "pythonwarnings", None) or ():
        args += ["-W", warning]
    if getattr(option, "confcutdir", None):
        args += ["--confcutdir", str(relocate(Path(option.confcutdir), base, root))]
    if getattr(option, "noconftest", False):
        args.append("--noconftest")
    if getattr(option, "disable_plugin_autoload", False):
        args.append("--disable-plugin-autoload")
    for plugin in _unneeded_plugins(item):
        args += ["-p", f"no:{plugin}"]
    args += ["--basetemp", str(private / "tmp"), "-s", "-q", "--no-header", "-p", "no:randomly"]
    cwd = config.invocation_params.dir
    if root != base:
        cwd = relocate(cwd, base, root)
        cwd = cwd if cwd.is_dir() else root
    return WorkerRecipe(nodeid, tuple(args), str(cwd), role)


def worker_arguments(
    item: pytest.Item, private: Path, root: Path | None = None, *, pinned: bool = False
) -> list[str]:
    """Command line of a worker pytest for ``item`` whose private folder is ``private``.

    ``root`` as for :func:`worker_recipe`; ``pinned``: start it with :func:`pinned_pytest`.
    """
    return worker_recipe(item, root, role="compare" if pinned else "trial").arguments(private)


def launch_worker(
    item: pytest.Item,
    *,
    env: dict[str, str],
    role: WorkerRole = "trial",
    root: Path | None = None,
) -> Launched:
    """Start a worker pytest serving ``item`` (in ``role``), from ``root`` (default: the rootdir)."""
    return launch_recipe(worker_recipe(item, root, role=role), env=env)


def launch_recipe(recipe: WorkerRecipe, *, env: dict[str, str]) -> Launched:
    """Start the worker pytest ``recipe`` describes, with environment ``env``, on this host."""
    private = _private_dir()
    parent_end, child_end = socket.socketpair()
    watch_read, watch_write = os.pipe()
    spec = WorkerSpec(recipe.nodeid, child_end.fileno(), watch_read, recipe.role)
    log = private / "output.log"
    try:
        with open(log, "wb") as output:
            process = subprocess.Popen(
                recipe.arguments(private),
                cwd=recipe.cwd,
                env={**env, ENV_VAR: spec.to_env()},
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                pass_fds=(child_end.fileno(), watch_read),
                start_new_session=True,  # a terminal's Ctrl-C reaches the parent only
            )
    except BaseException:
        parent_end.close()
        os.close(watch_write)
        shutil.rmtree(private, ignore_errors=True)
        raise
    finally:
        child_end.close()
        os.close(watch_read)

    def cleanup() -> None:
        os.close(watch_write)  # the worker's watch thread sees EOF if it is still there
        shutil.rmtree(private, ignore_errors=True)

    return Launched(_PopenChild(process), Connection(parent_end.detach()), log, cleanup)
