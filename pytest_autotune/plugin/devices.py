"""Which device a tunable test runs on, its key in ``autotune.json``, and who else times on it.

Device-neutral: each test runs on the backend its fixtures name
(:func:`pytest_autotune.backends.backend_for_fixtures`; a test that uses no backend's fixtures runs
on the host backend, keyed ``host:<cpu model>``), and the backend does discovery, selection, keys
and information. This module decides which of a backend's devices this process uses:

* ``--autotune-device`` (one spec, or under xdist a comma-separated list), else the device the
  environment chooses for the backend (OpenCL: ``PYOPENCL_CTX``, which a ``--tx`` spec may set per
  worker: ``popen//env:PYOPENCL_CTX=0:1``), else the first usable device.
* Under xdist, the workers that run on one host (:class:`WorkerSlot`: the controller tells each
  worker which of its peers share its host, :mod:`pytest_autotune.plugin.xdist_hosts`) are counted
  apart from those of other hosts: the K-th worker of a host takes entry ``K`` (cyclically) of a
  ``--autotune-device`` list, else the device its environment names, else usable device ``K``
  (cyclically) of the backend.
* Workers share a device (:meth:`DeviceResolver.shared_by`: their timings interfere) only when
  they run on the same host and their devices are the same physical device
  (:meth:`Backend.identity <pytest_autotune.backends.base.Backend.identity>`: a PCI address or
  an index), never merely because two devices are of the same type: eight identical GPUs are
  eight devices with one key, so their workers tune side by side and write one entry per test.
  The host is one device, shared by every worker on it.

Each worker works out its peers' devices the way they do (same host, same device list), so no
message is exchanged. Where a peer's environment is unknown (a remote host whose variable this
worker's own ``--tx`` spec overrides and the peer's does not), the peer counts as setting nothing.

A backend's devices are resolved when a test of that backend first needs its key, so a run
without OpenCL tests never imports pyopencl.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_autotune.backends import Backend, backend_for_fixtures, get_backend

__all__ = ["Assignment", "DeviceResolver", "WorkerSlot"]


@dataclass(frozen=True)
class WorkerSlot:
    """This process's place among the xdist workers of its host (index 0 of 1 without xdist).

    ``index`` and ``count`` count the workers on this host only. ``overrides`` holds, per worker
    of this host (by ``index``), the environment variables its ``--tx`` spec sets (``env:``);
    empty when none set any. ``base`` holds the values the other workers inherit for variables
    that this worker's own spec overrides, where the controller knows them (its own host).
    """

    index: int = 0
    count: int = 1
    host: str = "local"
    overrides: tuple[Mapping[str, str], ...] = ()
    base: Mapping[str, str] = field(default_factory=dict)

    @property
    def parallel(self) -> bool:
        """True when several workers run at once on this host."""
        return self.count > 1

    def environment(self, peer: int) -> Mapping[str, str]:
        """The environment worker ``peer`` of this host runs with, as far as this worker can tell."""
        if not self.overrides or peer == self.index:
            return os.environ
        mine = self.overrides[self.index]
        inherited = {k: v for k, v in os.environ.items() if k not in mine}
        inherited.update(self.base)
        return {**inherited, **self.overrides[peer]}


@dataclass(frozen=True)
class Assignment:
    """The device of one backend in this process: the device object, its key, the workers on it."""

    backend: Backend
    device: Any
    key: str
    sharing: int


class DeviceResolver:
    """Resolves devices and keys for tests of one process (one per session or xdist worker)."""

    def __init__(self, spec: str | None, worker: WorkerSlot) -> None:
        self.specs = [s.strip() for s in spec.split(",")] if spec else []
        if spec is not None and not all(self.specs):
            raise ValueError(f"--autotune-device={spec!r}: empty device spec in the list")
        self.worker = worker
        self._assignments: dict[str, Assignment] = {}

    # -- by test ----------------------------------------------------------------------------------------
    @staticmethod
    def backend_for(fixturenames: Iterable[str]) -> Backend:
        """The backend of a test with these (closure of) fixture names."""
        return backend_for_fixtures(fixturenames)

    def key_for(self, fixturenames: Iterable[str]) -> str:
        """The device key of a test given its fixture names."""
        return self.assignment(self.backend_for(fixturenames)).key

    def is_cpu_for(self, fixturenames: Iterable[str]) -> bool:
        """Whether the device of a test with these fixture names is the host's CPU (``Backend.is_cpu``)."""
        found = self.assignment(self.backend_for(fixturenames))
        return found.backend.is_cpu(found.device)

    def device(self, backend: str) -> Any:
        """This process's device of the backend named ``backend`` (what its fixtures use)."""
        return self.assignment(get_backend(backend)).device

    # -- by key -----------------------------------------------------------------------------------------
    def _by_key(self, key: str) -> Assignment | None:
        return next((a for a in self._assignments.values() if a.key == key), None)

    def info_for(self, key: str) -> dict[str, Any]:
        """Information about the device with ``key`` (for the store's ``info`` block)."""
        found = self._by_key(key)
        return {"key": key} if found is None else found.backend.info(found.device)

    def shared_by(self, key: str) -> int:
        """How many workers of this session time on the device with ``key`` (1 = this one alone)."""
        if not self.worker.parallel:
            return 1
        found = self._by_key(key)
        return self.worker.count if found is None else found.sharing

    def spec_for(self, key: str) -> str | None:
        """A spec that makes another process (a trial worker) select the device with ``key``.

        None when there is nothing to pass (the host, or a key this process never resolved).
        """
        found = self._by_key(key)
        return None if found is None else found.backend.spec_of(found.device)

    # -- assignment -------------------------------------------------------------------------------------
    def assignment(self, backend: Backend) -> Assignment:
        """This process's device of ``backend`` and the number of workers on it (resolved once)."""
        found = self._assignments.get(backend.name)
        if found is None:
            device, sharing = self._assign(backend)
            found = self._assignments[backend.name] = Assignment(
                backend, device, backend.key(device), sharing
            )
        return found

    def _assign(self, backend: Backend) -> tuple[Any, int]:
        if not self.worker.parallel:
            spec = self.specs[self.worker.index % len(self.specs)] if self.specs else None
            return backend.select(spec), 1
        usable: list[Any] | None = None
        identities: list[str] = []
        device: Any = None
        for peer in range(self.worker.count):
            spec = self._choice(backend, peer)
            if spec is None:
                usable = backend.usable_devices() if usable is None else usable
                if not usable:
                    return backend.select(None), self.worker.count  # raises, listing what exists
                chosen = usable[peer % len(usable)]
            else:
                chosen = backend.select(spec)
            identities.append(backend.identity(chosen))
            if peer == self.worker.index:
                device = chosen
        mine = identities[self.worker.index]
        return device, sum(1 for identity in identities if identity == mine)

    def _choice(self, backend: Backend, peer: int) -> str | None:
        """The spec worker ``peer`` of this host selects its device with; None: its usable device."""
        if self.specs:
            return self.specs[peer % len(self.specs)]
        return backend.environment_spec(self.worker.environment(peer))
