"""The reporting side: gather results from reports, find unused entries, write the store once.

Runs in the single process, or in the xdist controller (workers only attach results to their
reports and send what they collected through ``workeroutput``). Each passed tune/baseline result is
written to ``autotune.json`` as soon as its report arrives (a locked, atomic update), so a run that
is interrupted or killed keeps every test finished before; at the end of the session
:meth:`Controller.finish` removes unused entries when ``--autotune-prune`` asks for it. After a
failed write (read-only file, unwritable location) nothing more is attempted and the session fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pytest_autotune.devices import host_key
from pytest_autotune.results import AutotuneResult, from_user_properties
from pytest_autotune.session import CollectionInfo, nodeid_file
from pytest_autotune.store import StoreError, apply_changes, commit_info

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.session import AutotuneSession

__all__ = ["Controller", "StoreOutcome"]


@dataclass
class StoreOutcome:
    """What happened to ``autotune.json`` during the session (for the summary)."""

    written: int = 0
    removed: int = 0
    changed: bool = False
    error: str | None = None
    prune_refused: str | None = None
    json_error: str | None = None


@dataclass(eq=False)
class Controller:
    """Collects results and writes the store (see the module docstring)."""

    session: AutotuneSession
    results: list[AutotuneResult] = field(default_factory=list)
    updates: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    device_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    collection: CollectionInfo = field(default_factory=CollectionInfo)
    unused: dict[str, list[str]] = field(default_factory=dict)
    outcome: StoreOutcome = field(default_factory=StoreOutcome)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Hook: take the result carried by a call-phase report (the controller is registered as a plugin)."""
        if report.when != "call":
            return
        result = from_user_properties(report.user_properties)
        if result is None:
            return
        self.results.append(result)
        if result.entry is not None and report.passed:
            key = (result.device, result.nodeid)
            self.updates[key] = result.entry
            if result.device_info:
                self.device_info[result.device] = result.device_info
            self._write({key: result.entry}, [])

    @cached_property
    def _commit_info(self) -> dict[str, Any]:
        return commit_info(self.session.rootpath)

    def _write(self, updates: dict[tuple[str, str], dict[str, Any]], removals: list[tuple[str, str]]) -> None:
        """Apply changes to the store now; after a first failure nothing more is attempted."""
        if self.outcome.error is not None or (not updates and not removals):
            return
        stamped = {key: {**entry, "commit_info": self._commit_info} for key, entry in updates.items()}
        try:
            changed = apply_changes(
                self.session.settings.cache_path,
                updates=stamped,
                removals=removals,
                device_info=self.device_info,
            )
        except StoreError as exc:
            self.outcome.error = str(exc)
            return
        if changed:
            self.outcome.changed = True
            self.outcome.written += len(updates)
            self.outcome.removed += len(removals)

    def add_collection(self, info: CollectionInfo) -> None:
        """Fold in what a process collected."""
        self.collection.merge(info)

    def session_devices(self) -> set[str]:
        """Devices this session ran tunable tests on (the host always counts)."""
        return {host_key()} | {result.device for result in self.results}

    @cached_property
    def _partial_selections(self) -> dict[str, str]:
        """Command-line arguments that select part of a file (node ids), by that file's node-id path."""
        config = self.session.config
        partial: dict[str, str] = {}
        for arg in config.args:
            if "::" not in arg:
                continue
            path = (config.invocation_params.dir / nodeid_file(arg)).resolve()
            try:
                partial[path.relative_to(self.session.rootpath).as_posix()] = arg
            except ValueError:
                partial[nodeid_file(arg)] = arg
        return partial

    def find_unused(self) -> dict[str, list[str]]:
        """Entries of this session's devices whose test is gone.

        An entry is unused when its test was not collected although its whole file was (or the
        file no longer exists); tests of files outside this run's selection, or of files only
        partly selected (``file.py::test``), are left alone.
        """
        store, root = self.session.store, self.session.rootpath
        partial = self._partial_selections
        unused: dict[str, list[str]] = {}
        for device in sorted(self.session_devices() & set(store.devices())):
            for nodeid in sorted(store.tests(device)):
                if nodeid in self.collection.tunable:
                    continue
                path = nodeid_file(nodeid)
                if path in partial and (root / path).exists():
                    continue
                if path in self.collection.files or not (root / path).exists():
                    unused.setdefault(device, []).append(nodeid)
        return unused

    def finish(self, exitstatus: int) -> None:
        """Compute unused entries and prune them when asked (updates were written as tests passed)."""
        self.unused = self.find_unused()
        if not self.session.settings.prune:
            return
        refusal = self._prune_refusal(exitstatus)
        if refusal:
            self.outcome.prune_refused = refusal
            return
        self._write({}, [(device, nodeid) for device, ids in self.unused.items() for nodeid in ids])

    def _prune_refusal(self, exitstatus: int) -> str | None:
        """Why pruning must not run: anything short of collecting whole files in full."""
        if self._partial_selections:
            shown = ", ".join(sorted(self._partial_selections.values()))
            return f"node ids select only part of their file ({shown}); give whole files or folders"
        if self.session.config.getoption("lf", False):
            return "--lf selects only the tests that failed last time"
        if self.collection.deselected:
            return f"{self.collection.deselected} test(s) were deselected"
        if self.collection.errors:
            return f"{self.collection.errors} collection error(s)"
        if exitstatus in (2, 3, 4):  # interrupted, internal error, usage error
            return "the session did not complete"
        return None
