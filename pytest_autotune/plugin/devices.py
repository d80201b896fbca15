"""Which device a tunable test runs on, its key in ``autotune.json``, and who else times on it.

Device-neutral: each test runs on the backend its fixtures name
(:func:`pytest_autotune.backends.backend_for_fixtures`; a test that uses no backend's fixtures runs
on the host backend, keyed ``host:<cpu model>``), and the backend does discovery, selection, keys
and information. This module decides which of a backend's devices this process uses:

* ``--autotune-device`` (one spec, or under xdist a comma-separated list), else the device the
  environment chooses for the backend (OpenCL: ``PYOPENCL_CTX``), else the first usable device.
* Under xdist, worker ``gwK`` takes entry ``K`` (cyclically) of a ``--autotune-device`` list;
  without a list, usable device ``K`` (cyclically) of the backend, unless the environment or a
  single spec pins every worker to one device. Workers that land on the same device share it
  (:meth:`DeviceResolver.shared_by`): their timings interfere. The host is one device, shared by
  every worker.

A backend's devices are resolved when a test of that backend first needs its key, so a run
without OpenCL tests never imports pyopencl.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_autotune.backends import Backend, backend_for_fixtures, get_backend

__all__ = ["Assignment", "DeviceResolver", "WorkerSlot"]


@dataclass(frozen=True)
class WorkerSlot:
    """This process's place among xdist workers (index 0 of 1 without xdist)."""

    index: int = 0
    count: int = 1

    @property
    def parallel(self) -> bool:
        """True when several workers run at once."""
        return self.count > 1


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
        slots = range(self.worker.count)
        if self.specs:
            keys = [backend.key(backend.select(s)) for s in self.specs]
            mine = self.worker.index % len(self.specs)
            sharing = sum(1 for k in slots if keys[k % len(keys)] == keys[mine])
            return backend.select(self.specs[mine]), sharing
        if not self.worker.parallel or backend.environment_spec():
            return backend.select(None), self.worker.count
        usable = backend.usable_devices()
        if not usable:
            return backend.select(None), self.worker.count  # raises, listing what is available
        mine = self.worker.index % len(usable)
        sharing = sum(1 for k in slots if k % len(usable) == mine)
        return usable[mine], sharing
