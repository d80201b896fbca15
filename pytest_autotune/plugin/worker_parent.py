"""The parent side of isolated trials: start a worker pytest per tuned test and send it trials.

Fixtures such as OpenCL contexts cannot be sent to another process, and OpenCL drivers are not
fork-safe, so the worker is a fresh ``python -m pytest`` (started by fork + exec, nothing of the
parent's state shared) that sets the test up itself: it collects the test's file, keeps only the
test's node id, creates its fixtures (conftest timers included) and then, instead of calling the
body once, serves trials: receive a configuration, call the body
(:func:`~pytest_autotune.plugin.runner.run_trial`), send back the samples and the outcome label. The
parent keeps the tuner and the journal; a worker that crashes or hangs fails that trial only
(:mod:`pytest_autotune.tuning.isolation`), and the next trial starts a new worker.

What the worker inherits from the parent: the rootdir and ini file, the ``-p`` plugins, the import
mode, ``-o`` overrides, ``-W`` filters, ``--confcutdir``/``--noconftest``, the environment (less
``PYTEST_ADDOPTS``; ini ``addopts`` are not applied again: their effect arrives through the options
above) and the device of the test. Other command-line options are not forwarded, and plugins a
trial cannot need are skipped (hypothesis', unless the test uses ``@given``). Its output (the
body's prints, faulthandler tracebacks) goes to a log file, never to the terminal; the end of it
becomes the detail of a crashed or timed-out trial. The worker's pytest cache and temporary
directories are private and removed when it stops.

``pytest.skip``/``xfail``/``fail``/``exit``, ``KeyboardInterrupt`` and ``SystemExit`` raised by the
body in the worker end the serving loop and are raised again in the parent, so they end tuning as
they would in-process.

When it is on: ``--autotune-isolate=auto`` (the default) isolates tuning trials on POSIX systems
and runs them in the pytest process elsewhere; ``process`` and ``none`` force either way. Tuning
trials and the finalists' re-measurements are isolated, and so is a baseline: it is measured in
fresh baseline workers (``tuning=False``: the body sees ``autotune.tuning`` False, as in a plain
run; :mod:`pytest_autotune.plugin.baseline`). Normal runs and the final call of a tuned test (the
winner, run as the real test) run in the pytest process, because the real test must run where
pytest reports it, and its configuration has already run without crashing. What it costs
(``benchmarks/plugin_bench.py``, fake timer, so the numbers are the plugin's own; measured on 2
shared CPUs at load average 9-11): about 1 ms per trial over an in-process trial (a request and a
reply through a pipe), and one worker start of about 2 s per tuned test (a fresh pytest collecting
the test file and creating its fixtures), paid again after each crash or timeout, plus the
baseline's fresh processes. For kernels whose trials take milliseconds or more and budgets of tens
of trials this is a few percent of a tuning run.

A worker's private directory is named after the pytest process that owns it
(``pytest-autotune-worker-<pid>-*`` in the temporary directory). A pytest killed with SIGKILL cannot
remove it, so the first worker a later run starts removes the directories whose owner is no longer
alive (:func:`remove_stale_worker_dirs`); those of live runs are never touched.
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
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.plugin.runner import BodyRun
from pytest_autotune.plugin.worker_protocol import ENV_VAR, BodyEnded, TrialReply, TrialRequest, WorkerSpec
from pytest_autotune.tuning.worker import Launched, Worker, WorkerFailure

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.plugin.planning import ItemPlan
    from pytest_autotune.plugin.session import AutotuneSession

__all__ = [
    "START_TIMEOUT",
    "WORKER_DIR_PREFIX",
    "IsolatedTrials",
    "remove_stale_worker_dirs",
    "worker_arguments",
]

#: Seconds a worker may take to collect and set up its test before it counts as failed.
START_TIMEOUT: Final = 300.0

#: Name prefix of a worker's private directory, followed by the owning pytest's pid and a dash.
WORKER_DIR_PREFIX: Final = "pytest-autotune-worker-"
_OWNED_DIR: Final = re.compile(re.escape(WORKER_DIR_PREFIX) + r"(\d+)-")
_stale_dirs_checked = False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def remove_stale_worker_dirs(base: Path | None = None) -> list[Path]:
    """Remove worker directories under ``base`` (the temporary directory) whose owner pid is dead.

    Directories of live processes (this one included) and those not named by
    :data:`WORKER_DIR_PREFIX` plus a pid are left alone. Returns the removed paths.
    """
    removed = []
    for path in Path(base or tempfile.gettempdir()).glob(WORKER_DIR_PREFIX + "*"):
        match = _OWNED_DIR.match(path.name)
        if match is None or not path.is_dir() or path.is_symlink():
            continue
        pid = int(match.group(1))
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _private_dir() -> Path:
    """A new private directory for a worker, named after this process (cleans stale ones once)."""
    global _stale_dirs_checked
    if not _stale_dirs_checked:
        _stale_dirs_checked = True
        remove_stale_worker_dirs()
    return Path(tempfile.mkdtemp(prefix=f"{WORKER_DIR_PREFIX}{os.getpid()}-"))


class _PopenChild:
    """:class:`~pytest_autotune.tuning.isolation.Child` over a worker started in its own process group.

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


def worker_arguments(item: pytest.Item, private: Path) -> list[str]:
    """Command line of a worker pytest for ``item`` (see the module docstring for what is forwarded)."""
    config, nodeid = item.config, item.nodeid
    option = config.option
    args = [sys.executable, "-m", "pytest", str(config.rootpath / nodeid.split("::", 1)[0])]
    args += ["--rootdir", str(config.rootpath), "-o", "addopts=", "-o", f"cache_dir={private / 'cache'}"]
    if config.inipath is not None:
        args += ["-c", str(config.inipath)]
    for plugin in getattr(option, "plugins", None) or ():
        args += ["-p", plugin]
    args += [f"--import-mode={getattr(option, 'importmode', 'prepend')}"]
    for override in getattr(option, "override_ini", None) or ():
        args += ["-o", override]
    for warning in getattr(option, "pythonwarnings", None) or ():
        args += ["-W", warning]
    if getattr(option, "confcutdir", None):
        args += ["--confcutdir", str(option.confcutdir)]
    if getattr(option, "noconftest", False):
        args.append("--noconftest")
    if getattr(option, "disable_plugin_autoload", False):
        args.append("--disable-plugin-autoload")
    for plugin in _unneeded_plugins(item):
        args += ["-p", f"no:{plugin}"]
    args += ["--basetemp", str(private / "tmp"), "-s", "-q", "--no-header", "-p", "no:randomly"]
    return args


class IsolatedTrials:
    """Trial runner for tune mode that calls the body in a worker process (module docstring).

    Call it like :func:`~pytest_autotune.plugin.runner.run_trial` without the item: ``trials(config,
    repeat)`` returns a :class:`~pytest_autotune.plugin.runner.BodyRun`; a crash or hang comes back as a
    ``runtime`` or ``timeout`` run. Use it as a context manager: leaving stops the worker.
    ``tuning=False`` makes it a baseline worker: the body sees ``autotune.tuning`` False, as in a
    plain run (:mod:`pytest_autotune.plugin.baseline`).
    """

    def __init__(
        self, session: AutotuneSession, item: pytest.Function, plan: ItemPlan, *, tuning: bool = True
    ) -> None:
        self._item = item
        self._config = item.config
        self._nodeid = item.nodeid
        self._tuning = tuning
        self._env = self._environment(session, plan)
        policy = plan.policy
        self.worker = Worker(
            self._launch,
            timeout=policy.trial_timeout,
            start_timeout=START_TIMEOUT,
            memory_limit=policy.worker_memory,
            name="trial worker" if tuning else "baseline worker",
        )

    @staticmethod
    def _environment(session: AutotuneSession, plan: ItemPlan) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", ENV_VAR)}
        env["PYTEST_AUTOTUNE_CACHE"] = str(session.settings.cache_path)
        spec = session.devices.spec_for(plan.device)  # the very same device (None: the host)
        if spec is not None:
            env["PYTEST_AUTOTUNE_DEVICE"] = spec
        return env

    def _launch(self) -> Launched:
        private = _private_dir()
        parent_end, child_end = socket.socketpair()
        watch_read, watch_write = os.pipe()
        spec = WorkerSpec(self._nodeid, child_end.fileno(), watch_read, self._tuning)
        log = private / "output.log"
        try:
            with open(log, "wb") as output:
                process = subprocess.Popen(
                    worker_arguments(self._item, private),
                    cwd=self._config.invocation_params.dir,
                    env={**self._env, ENV_VAR: spec.to_env()},
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

    def __call__(self, config: dict[str, Any], repeat: int) -> BodyRun:
        """Run one trial in the worker."""
        reply = self.worker.request(TrialRequest(dict(config), repeat))
        if isinstance(reply, WorkerFailure):
            return BodyRun(dict(config), (), reply.label, reply.detail)
        if isinstance(reply, BodyEnded):
            self.worker.stop()
            _raise_ended(reply)
        assert isinstance(reply, TrialReply)
        return BodyRun(dict(config), tuple(reply.samples), reply.label, reply.detail)

    def summary(self) -> dict[str, Any]:
        """Worker starts, crashes, timeouts, memory restarts and start times."""
        return self.worker.stats.to_dict()

    def __enter__(self) -> IsolatedTrials:
        return self

    def __exit__(self, *exc: object) -> None:
        self.worker.__exit__(*exc)


def _raise_ended(ended: BodyEnded) -> None:
    import pytest

    if ended.kind == "skip":
        pytest.skip(ended.message)
    if ended.kind == "xfail":
        pytest.xfail(ended.message)
    if ended.kind == "exit":
        pytest.exit(ended.message)
    if ended.kind == "interrupt":
        raise KeyboardInterrupt(ended.message)
    pytest.fail(
        ended.message if ended.kind == "fail" else f"the test body raised {ended.message}", pytrace=False
    )
