"""The parent side of isolated trials: start a worker pytest per tuned test and send it trials.

Fixtures such as OpenCL contexts cannot be sent to another process, and OpenCL drivers are not
fork-safe, so the worker is a fresh ``python -m pytest`` (started by fork + exec, nothing of the
parent's state shared) that sets the test up itself: it collects the test's file, keeps only the
test's node id, creates its fixtures (conftest timers included) and then, instead of calling the
body once, serves trials: receive a configuration, call the body
(:func:`~pytest_autotune.plugin.workers.runner.run_trial`), send back the samples and the outcome label. The
parent keeps the tuner and the journal; a worker that crashes or hangs fails that trial only
(:mod:`pytest_autotune.tuning.process.isolated`), and the next trial starts a new worker.

How a worker is started, what it inherits from the parent (rootdir, ini file, plugins, import
mode, ``-o``/``-W``, the environment less ``PYTEST_ADDOPTS``, and the test's device) and where its
output goes (a log file, never the terminal; the end of it becomes the detail of a crashed or
timed-out trial): :mod:`pytest_autotune.plugin.workers.launch`.

``pytest.skip``/``xfail``/``fail``/``exit``, ``KeyboardInterrupt`` and ``SystemExit`` raised by the
body in the worker end the serving loop and are raised again in the parent, so they end tuning as
they would in-process.

When it is on: ``--autotune-isolate=auto`` (the default) isolates tuning trials on POSIX systems
and runs them in the pytest process elsewhere; ``process`` and ``none`` force either way. Tuning
trials and the finalists' re-measurements are isolated, and so is a baseline: it is measured in
fresh baseline workers (role ``baseline``: the body sees ``autotune.tuning`` False, as in a plain
run; :mod:`pytest_autotune.plugin.modes.baseline`). Normal runs and the final call of a tuned test (the
winner, run as the real test) run in the pytest process, because the real test must run where
pytest reports it, and its configuration has already run without crashing. What it costs
(``benchmarks/overhead/plugin.py``, fake timer, so the numbers are the plugin's own; measured on 2
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

import os
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.plugin.workers.launch import (
    WORKER_DIR_PREFIX,
    WorkerRecipe,
    launch_recipe,
    remove_stale_worker_dirs,
    worker_arguments,
    worker_recipe,
)
from pytest_autotune.plugin.workers.protocol import (
    ENV_VAR,
    BodyEnded,
    TrialReply,
    TrialRequest,
    WorkerRole,
)
from pytest_autotune.plugin.workers.runner import BodyRun
from pytest_autotune.tuning.process.worker import Launched, Worker, WorkerFailure

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from pytest_autotune.policy import Policy

__all__ = [
    "START_TIMEOUT",
    "WORKER_DIR_PREFIX",  # re-exported from worker_launch, as are the two functions below
    "IsolatedTrials",
    "remove_stale_worker_dirs",
    "worker_arguments",
    "worker_environment",
]

#: Seconds a worker may take to collect and set up its test before it counts as failed.
START_TIMEOUT: Final = 300.0


class IsolatedTrials:
    """Trial runner for tune mode that calls the body in a worker process (module docstring).

    Call it like :func:`~pytest_autotune.plugin.workers.runner.run_trial` without the item: ``trials(config,
    repeat)`` returns a :class:`~pytest_autotune.plugin.workers.runner.BodyRun`; a crash or hang comes
    back as a ``runtime`` or ``timeout`` run. Use it as a context manager: leaving stops the worker.
    ``role="baseline"`` makes it a baseline worker: the body sees ``autotune.tuning`` False, as in a
    plain run (:mod:`pytest_autotune.plugin.modes.baseline`). :meth:`from_recipe` makes one from a
    :class:`~pytest_autotune.plugin.workers.launch.WorkerRecipe` instead of the item, on whatever
    host holds the same checkout.
    """

    def __init__(
        self, item: pytest.Function, policy: Policy, env: dict[str, str], *, role: WorkerRole = "trial"
    ) -> None:
        self._setup(worker_recipe(item, role=role), env, policy.trial_timeout, policy.worker_memory)

    @classmethod
    def from_recipe(
        cls, recipe: WorkerRecipe, env: dict[str, str], *, timeout: float | None, memory: int | None
    ) -> IsolatedTrials:
        """Trials in workers started from ``recipe`` with ``env``, ``timeout`` per trial and a
        ``memory`` growth limit (bytes, None: none)."""
        trials = cls.__new__(cls)
        trials._setup(recipe, env, timeout, memory)
        return trials

    def _setup(
        self, recipe: WorkerRecipe, env: dict[str, str], timeout: float | None, memory: int | None
    ) -> None:
        self.recipe = recipe
        self._env = env
        self.worker = Worker(
            self._launch,
            timeout=timeout,
            start_timeout=START_TIMEOUT,
            memory_limit=memory,
            name=f"{recipe.role} worker",
        )

    def _launch(self) -> Launched:
        return launch_recipe(self.recipe, env=self._env)

    def __call__(self, config: dict[str, Any], repeat: int) -> BodyRun:
        """Run one trial in the worker."""
        reply = self.worker.request(TrialRequest(dict(config), repeat))
        if isinstance(reply, WorkerFailure):
            return BodyRun(dict(config), (), reply.label, reply.detail)
        if isinstance(reply, BodyEnded):
            self.worker.stop()
            reply.raise_again()
        assert isinstance(reply, TrialReply)
        return BodyRun(dict(config), tuple(reply.samples), reply.label, reply.detail, tuple(reply.cpu))

    def launch(self) -> None:
        """Start the worker process now; the first trial (or :meth:`wait_ready`) waits until it set up."""
        self.worker.launch()

    def wait_ready(self) -> None:
        """Wait until the worker set the test up (started now if it was not); raises
        :class:`~pytest_autotune.tuning.process.worker.WorkerStartError` when it cannot."""
        self.worker.wait_ready()

    def close(self) -> None:
        """Stop the worker process (idempotent)."""
        self.worker.close()

    def summary(self) -> dict[str, Any]:
        """Worker starts, crashes, timeouts, memory restarts and start times."""
        return self.worker.stats.to_dict()

    def __enter__(self) -> IsolatedTrials:
        return self

    def __exit__(self, *exc: object) -> None:
        self.worker.__exit__(*exc)


def worker_environment(cache_path: Path, device_spec: str | None) -> dict[str, str]:
    """A worker's environment: this process's, less ``PYTEST_ADDOPTS`` and the worker variable, with
    the store's path and the test's very same device (``device_spec``; None: the host)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", ENV_VAR)}
    env["PYTEST_AUTOTUNE_CACHE"] = str(cache_path)
    if device_spec is not None:
        env["PYTEST_AUTOTUNE_DEVICE"] = device_spec
    return env
