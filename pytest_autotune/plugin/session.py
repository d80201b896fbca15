"""Per-process state of the plugin: settings, the loaded store, devices, and what was collected.

One :class:`AutotuneSession` lives in ``config.stash`` of every pytest process (the single process,
the xdist controller and each worker). Workers run tests; the controller (or the single process)
collects their results from reports and writes the store (:mod:`pytest_autotune.plugin.controller`). A
worker the plugin started itself (a trial or baseline worker, :mod:`pytest_autotune.plugin.workers.main`,
or one side of a comparison, :mod:`pytest_autotune.plugin.compare.worker`) has ``worker_spec`` set: it
serves one test for its parent, and reports and writes nothing. ``xdist_worker`` is this process's
slot among pytest-xdist's workers (``is_xdist_worker`` says whether it is one).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_autotune.plugin.compare.git_ref import ResolvedRef, resolve_ref
from pytest_autotune.plugin.compare.messages import NotCollected
from pytest_autotune.plugin.devices import DeviceResolver
from pytest_autotune.plugin.options import PolicyValidator, Settings, resolve
from pytest_autotune.plugin.workers.protocol import ENV_VAR, WorkerSpec
from pytest_autotune.plugin.xdist_hosts import slot_from_workerinput
from pytest_autotune.store.document import StoreError
from pytest_autotune.store.reading import Store
from pytest_autotune.store.writing import check_writable

if TYPE_CHECKING:
    import pytest


__all__ = ["AutotuneSession", "CollectionInfo"]


def nodeid_file(nodeid: str) -> str:
    """The file part of a node id (``"tests/test_k.py::test_x[1]"`` -> ``"tests/test_k.py"``)."""
    return nodeid.split("::", 1)[0]


@dataclass
class CollectionInfo:
    """What one process collected: tunable node ids (deselected ones included) and files.

    ``complete`` is False when anything was deselected or failed to collect; pruning then refuses
    to run, since absent tests may merely not have been selected.
    """

    tunable: set[str] = field(default_factory=set)
    files: set[str] = field(default_factory=set)
    deselected: int = 0
    errors: int = 0

    def add(self, nodeid: str, *, tunable: bool) -> None:
        """Note one collected (or deselected) item."""
        self.files.add(nodeid_file(nodeid))
        if tunable:
            self.tunable.add(nodeid)

    def merge(self, other: CollectionInfo) -> None:
        """Fold in another process's collection (xdist workers collect the same tests)."""
        self.tunable |= other.tunable
        self.files |= other.files
        self.deselected = max(self.deselected, other.deselected)
        self.errors = max(self.errors, other.errors)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for xdist's ``workeroutput``."""
        return {
            "tunable": sorted(self.tunable),
            "files": sorted(self.files),
            "deselected": self.deselected,
            "errors": self.errors,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CollectionInfo:
        """Inverse of :meth:`to_dict`."""
        return cls(set(data["tunable"]), set(data["files"]), int(data["deselected"]), int(data["errors"]))


def _worker_spec() -> WorkerSpec | None:
    """This process's worker spec (trial, baseline or compare role) when the plugin started it as one."""
    if ENV_VAR not in os.environ:
        return None
    return WorkerSpec.from_environ()


def _xdist_workers(config: pytest.Config) -> bool:
    """Whether this run starts (or is) xdist workers."""
    if getattr(config, "workerinput", None) is not None:
        return True
    numprocesses = getattr(config.option, "numprocesses", None)
    return numprocesses not in (None, 0, "0")


class AutotuneSession:
    """The plugin's state in one pytest process (see the module docstring)."""

    def __init__(self, config: pytest.Config, validate_policy: PolicyValidator) -> None:
        """``validate_policy`` parses the options that set policy keys
        (:func:`pytest_autotune.tuning.validation.validate_policy`)."""
        self.config = config
        self.settings: Settings = resolve(config, validate_policy)
        #: What this process serves when the plugin started it as a worker (any role), else None.
        self.worker_spec = _worker_spec()
        # A worker reads the store its parent read already, or REF's temporary copy of it
        # (--autotune-compare): how to repair the file is the parent's message to give.
        try:
            self.store = Store.load(self.settings.cache_path, advice=self.worker_spec is None)
        except StoreError as exc:
            if self.worker_spec is not None and self.worker_spec.role == "compare":
                # the parent says why REF's side was not compared
                self.worker_spec.tell_parent(NotCollected(str(exc), "store"))
            raise
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        #: This process's slot among pytest-xdist's workers (index, count, host).
        self.xdist_worker = slot_from_workerinput(workerinput)
        self.is_xdist_worker = workerinput is not None
        settings = self.settings
        writer = not self.is_xdist_worker and self.worker_spec is None  # the process that writes the store
        if writer and (settings.tuning or settings.update_baseline or settings.prune):
            check_writable(settings.cache_path)  # fail now, not after tuning
        #: The commit ``--autotune-compare`` names (None when not comparing, and in workers).
        self.compare: ResolvedRef | None = None
        if settings.compare_ref is not None and self.worker_spec is None:
            if _xdist_workers(config):
                raise ValueError(
                    "--autotune-compare cannot run under pytest-xdist (-n): a comparison times two "
                    "processes against each other and needs the device to itself; drop -n (or use -n 0)"
                )
            self.compare = resolve_ref(config.rootpath, settings.compare_ref)
        parallel = settings.parallel != 1 and settings.tuning
        if parallel and self.worker_spec is None and _xdist_workers(config):
            raise ValueError(
                "--autotune-parallel cannot be combined with pytest-xdist (-n) yet: each xdist worker "
                "already takes a device of its own; use one or the other"
            )
        self.devices = DeviceResolver(self.settings.device_spec, self.xdist_worker)
        self.collection = CollectionInfo()

    @property
    def rootpath(self) -> Path:
        """The rootdir (node ids are relative to it)."""
        return self.config.rootpath

    def journal_path(self, device: str, nodeid: str) -> Path:
        """Where the tuning journal of ``nodeid`` on ``device`` lives (under the pytest cache)."""
        cache = getattr(self.config, "cache", None)
        base = cache.mkdir("autotune") if cache is not None else self.rootpath / ".pytest_cache" / "autotune"
        base.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256(f"{device}\0{nodeid}".encode()).hexdigest()[:12]
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid.rsplit("/", 1)[-1])[:80]
        return Path(base) / f"{slug}-{digest}.jsonl"
