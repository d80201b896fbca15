"""One test's trials on several devices of its type at once (``--autotune-parallel=N|all``).

A box of identical GPUs tunes a test N times faster when N trials run at once, one per GPU. Every
device gets its own persistent trial worker, exactly the worker an isolated sequential run uses
(:class:`~pytest_autotune.plugin.workers.parent.IsolatedTrials`, told its device through its
environment), so a crash or hang on one device fails that trial only and restarts that device's
worker. The workers sit behind a :class:`~pytest_autotune.tuning.parallel.executor.LocalExecutor`, which the
tuning loop (:func:`~pytest_autotune.tuning.parallel.loop.run_parallel`) keeps busy; another executor
(other hosts) plugs in the same way.

Which devices: those of the test's backend whose key equals the key of the test's own device
(:func:`same_type_specs`), the test's device first; ``all`` (or ``auto``) takes every one, ``N`` the
first N. Asking for more than there are uses what there is, with a warning. Only the search runs in
parallel: the finalists are re-measured, and the baseline measured, on the test's own device, as in
a sequential run, so the committed choice never compares times from two devices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_autotune.plugin.workers.parent import IsolatedTrials
from pytest_autotune.tuning.parallel.executor import LocalExecutor

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.backends.base import Backend
    from pytest_autotune.plugin.devices import DeviceResolver
    from pytest_autotune.plugin.workers.runner import BodyRun
    from pytest_autotune.policy import Policy

__all__ = ["ParallelTrials", "TrialSlot", "same_type_specs"]


def same_type_specs(resolver: DeviceResolver, backend: Backend) -> list[str | None]:
    """Specs of this host's usable devices of the test's type (same key), one per physical device
    (:meth:`~pytest_autotune.backends.base.Backend.identity`), the test's own first."""
    own = resolver.assignment(backend)
    seen = {backend.identity(own.device)}
    specs = [backend.spec_of(own.device)]
    for device in backend.usable_devices():
        identity = backend.identity(device)
        if backend.key(device) == own.key and identity not in seen:  # another physical device
            seen.add(identity)
            specs.append(backend.spec_of(device))
    return specs


class TrialSlot:
    """A :class:`~pytest_autotune.tuning.parallel.executor.SlotRunner` over one device's trial worker."""

    def __init__(self, worker: IsolatedTrials, repeat: int) -> None:
        self.worker = worker
        self.repeat = repeat

    def __call__(self, config: dict[str, Any]) -> BodyRun:
        """One trial on this slot's device."""
        return self.worker(config, self.repeat)

    def restart(self) -> None:
        """Stop the device's worker; its next trial starts a fresh one."""
        self.worker.worker.stop()

    def close(self, *, kill: bool = False) -> None:
        """Stop the device's worker (``kill``: at once, it may be in a trial)."""
        if kill:
            self.worker.__exit__(RuntimeError, None, None)
        else:
            self.worker.__exit__(None, None, None)


class ParallelTrials:
    """One trial worker per device (``envs[i]`` names device ``i``) and the executor over them.

    Called like :class:`IsolatedTrials` (``trials(config, repeat)``), it runs on the first device:
    the finalists and everything after the search stay on the test's own device.
    """

    def __init__(
        self, item: pytest.Function, policy: Policy, envs: Sequence[dict[str, str]], *, repeat: int
    ) -> None:
        self.workers = [IsolatedTrials(item, policy, env) for env in envs]
        self.executor: LocalExecutor[BodyRun] = LocalExecutor(
            [TrialSlot(worker, repeat) for worker in self.workers]
        )

    @property
    def devices(self) -> int:
        """How many devices run trials."""
        return len(self.workers)

    def __call__(self, config: dict[str, Any], repeat: int) -> BodyRun:
        """One run on the test's own device (the finalists' re-measurements)."""
        return self.workers[0](config, repeat)

    def summary(self) -> dict[str, Any]:
        """The workers' starts, crashes, timeouts and memory restarts, summed over the devices."""
        total: dict[str, Any] = {"devices": self.devices}
        for worker in self.workers:
            for name, value in worker.summary().items():
                total[name] = total.get(name, [] if isinstance(value, list) else 0) + value
        return total

    def __enter__(self) -> ParallelTrials:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:  # interrupted or failed: kill every worker, no graceful stop
            for worker in self.workers:
                worker.__exit__(*exc)
        self.executor.close()
