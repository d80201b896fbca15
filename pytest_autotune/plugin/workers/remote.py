"""A test's trial worker started on another host: what a Dask worker runs for ``--autotune-cluster``.

The tuning run's executor (:class:`~pytest_autotune.tuning.parallel.dask.DaskExecutor`) sends each
Dask worker a :class:`RemoteTrials` factory: plain data (the test's
:class:`~pytest_autotune.plugin.workers.launch.WorkerRecipe`, its trial timeout and memory limit,
the repeat count, the store's path), pickled to the worker. Called there, once per tuning run, it
makes the worker's persistent runner: an
:class:`~pytest_autotune.plugin.workers.parent.IsolatedTrials` whose worker pytest starts on that
host, from the same checkout, in the Dask worker's environment, so that it takes that worker's
device (``PYOPENCL_CTX`` and the like), never the controller's. A crash or hang fails the trial
and the next one starts a fresh worker, as on the test's own host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pytest_autotune.plugin.workers.launch import WorkerRecipe, worker_recipe
from pytest_autotune.plugin.workers.parent import IsolatedTrials
from pytest_autotune.plugin.workers.protocol import ENV_VAR
from pytest_autotune.plugin.workers.runner import BodyRun
from pytest_autotune.tuning.process.worker import WorkerStartError

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.policy import Policy
    from pytest_autotune.tuning.parallel.dask import DaskExecutor

__all__ = ["ClusterTrials", "RemoteSlot", "RemoteTrials", "lost_trial"]

#: Variables of the Dask worker's environment that its trial worker does not inherit: the
#: controller's options and device are not this host's.
_NOT_INHERITED: Final = ("PYTEST_ADDOPTS", ENV_VAR, "PYTEST_AUTOTUNE_DEVICE")


class RemoteSlot:
    """One Dask worker's persistent trial worker, as a slot runner (``runner(config)``)."""

    def __init__(self, trials: IsolatedTrials, repeat: int) -> None:
        self.trials = trials
        self.repeat = repeat

    def __call__(self, config: dict[str, Any]) -> BodyRun:
        """One trial on this host's device."""
        return self.trials(config, self.repeat)

    def restart(self) -> None:
        """Stop the worker; the next trial starts a fresh one."""
        self.trials.worker.stop()

    def close(self, *, kill: bool = False) -> None:
        """Stop the worker for good (``kill``: at once, it may be in a trial)."""
        self.trials.__exit__(RuntimeError if kill else None, None, None)


@dataclass(frozen=True)
class RemoteTrials:
    """Makes, on the host that calls it, the persistent runner of one test's trials."""

    recipe: WorkerRecipe
    repeat: int
    timeout: float | None = None
    memory: int | None = None
    cache_path: str | None = None

    def __call__(self) -> RemoteSlot:
        """A trial worker for the test in this process's environment (its device)."""
        env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
        if self.cache_path is not None:
            env["PYTEST_AUTOTUNE_CACHE"] = self.cache_path
        trials = IsolatedTrials.from_recipe(self.recipe, env, timeout=self.timeout, memory=self.memory)
        return RemoteSlot(trials, self.repeat)


def lost_trial(config: dict[str, Any], detail: str) -> BodyRun:
    """The run of a trial whose Dask worker was lost: a ``runtime`` failure."""
    return BodyRun(dict(config), (), "runtime", detail)


class ClusterLink:
    """The one connection of a pytest run to the scheduler of ``--autotune-cluster``.

    Made on the first tuned test that needs it, then shared by every test; a failure is remembered,
    so fifty tests cost one bounded attempt (:func:`pytest_autotune.tuning.parallel.dask.connect`),
    not fifty, and each fails at once with the same message.
    """

    def __init__(self, address: str) -> None:
        self.address = address
        self._client: Any = None
        self._failure: str | None = None

    def client(self) -> Any:
        """The ``distributed.Client``; raises :class:`WorkerStartError` saying why there is none."""
        if self._failure is not None:
            raise WorkerStartError(f"{self._failure} (not tried again in this run)")
        if self._client is None:
            from pytest_autotune.tuning.parallel.dask import ClusterUnreachable, connect

            try:
                self._client = connect(self.address)
            except ClusterUnreachable as exc:
                self._failure = f"--autotune-cluster: {exc}"
                raise WorkerStartError(self._failure) from None
        return self._client

    def close(self) -> None:
        """Close the connection, if one was made."""
        client, self._client = self._client, None
        if client is not None:
            client.close()


class ClusterTrials:
    """``--autotune-cluster``: the search's trials on a Dask cluster's devices, the rest here.

    Called like :class:`IsolatedTrials` (``trials(config, repeat)``), it runs on the test's own
    device, in a worker of this host: the finalists are re-measured there, as in a sequential run,
    so the committed choice never compares times from two devices. :attr:`executor` runs the
    search on the cluster (one persistent worker pytest per Dask worker).
    """

    def __init__(
        self, item: pytest.Function, policy: Policy, env: dict[str, str], link: ClusterLink, *, repeat: int
    ) -> None:
        from pytest_autotune.tuning.parallel.dask import DaskExecutor

        client = link.client()  # raises WorkerStartError, at once after a first failure
        self.local = IsolatedTrials(item, policy, env)
        factory = RemoteTrials(
            worker_recipe(item),
            repeat,
            policy.trial_timeout,
            policy.worker_memory,
            env.get("PYTEST_AUTOTUNE_CACHE"),
        )
        self.executor: DaskExecutor[BodyRun] = DaskExecutor(client, factory, lost_trial)

    def __call__(self, config: dict[str, Any], repeat: int) -> BodyRun:
        """One run on the test's own device (the finalists' re-measurements)."""
        return self.local(config, repeat)

    def summary(self) -> dict[str, Any]:
        """The local worker's starts and failures, and how many devices the cluster lent."""
        return {**self.local.summary(), "devices": self.executor.slots}

    def __enter__(self) -> ClusterTrials:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.executor.close()
        finally:
            self.local.__exit__(*exc)
