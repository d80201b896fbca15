"""The reporting side: gather results from reports, find unused entries, write the store once.

Runs in the single process, or in the xdist controller (workers only attach results to their
reports and send what they collected through ``workeroutput``). Each passed tune/baseline result is
written to ``autotune.json`` as soon as its report arrives (a locked, atomic update), so a run that
is interrupted or killed keeps every test finished before; at the end of the session
:meth:`Controller.finish` removes unused entries when ``--autotune-prune`` asks for it. After a
failed write (read-only file, unwritable location) the store is not tried again: that result and
every later one go to a recovery file (:mod:`pytest_autotune.recovery`) that the summary names with
the command that merges it, and the session fails.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_autotune.backends.host import host_key
from pytest_autotune.entry import StoreEntry, utc_moment
from pytest_autotune.plugin.report.results import AutotuneResult, from_user_properties
from pytest_autotune.plugin.session import CollectionInfo, nodeid_file
from pytest_autotune.plugin.store_outcome import StoreOutcome
from pytest_autotune.recovery import write_recovery
from pytest_autotune.store.changes import apply_changes
from pytest_autotune.store.document import StoreError
from pytest_autotune.store.git_commit import commit_info

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.plugin.report.formats.reporter import ReportContext, ReportOutcome
    from pytest_autotune.plugin.session import AutotuneSession

__all__ = ["Controller", "StoreOutcome"]


@dataclass(eq=False)
class Controller:
    """Collects results and writes the store (see the module docstring)."""

    session: AutotuneSession
    results: list[AutotuneResult] = field(default_factory=list)
    updates: dict[tuple[str, str], StoreEntry] = field(default_factory=dict)
    device_info: dict[str, dict[str, Any]] = field(default_factory=dict)
    collection: CollectionInfo = field(default_factory=CollectionInfo)
    unused: dict[str, list[str]] = field(default_factory=dict)
    outcome: StoreOutcome = field(default_factory=StoreOutcome)
    unsaved: dict[tuple[str, str], StoreEntry] = field(default_factory=dict)
    #: Each report format's outcome, by the reporter's name (the summary shows their paths and errors).
    reports: dict[str, ReportOutcome] = field(default_factory=dict)

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

    def _write(self, updates: dict[tuple[str, str], StoreEntry], removals: list[tuple[str, str]]) -> None:
        """Apply changes to the store now; after a first failure, save results to a recovery file."""
        if not updates and not removals:
            return
        now = utc_moment()  # the time a merge compares (python -m pytest_autotune merge)
        stamped = {
            key: replace(entry, commit_info=self._commit_info, measured_at=now)
            for key, entry in updates.items()
        }
        if self.outcome.error is not None:
            self._recover(stamped)
            return
        try:
            changed = apply_changes(
                self.session.settings.cache_path,
                updates=stamped,
                removals=removals,
                device_info=self.device_info,
            )
        except StoreError as exc:
            self.outcome.error = str(exc)
            self._recover(stamped)
            return
        if changed:
            self.outcome.changed = True
            self.outcome.written += len(updates)
            self.outcome.removed += len(removals)

    def _recover(self, entries: dict[tuple[str, str], StoreEntry]) -> None:
        """Write every result not saved so far to a new recovery file (then drop the previous one)."""
        if not entries:
            return
        self.unsaved.update(entries)
        cache = getattr(self.session.config, "cache", None)
        fallbacks = [Path(cache.mkdir("autotune"))] if cache is not None else []
        fallbacks.append(Path(tempfile.gettempdir()))
        previous = self.outcome.recovery
        try:
            self.outcome.recovery = write_recovery(
                self.session.settings.cache_path, self.unsaved, self.device_info, fallbacks
            )
        except (StoreError, OSError) as exc:
            self.outcome.recovery_error = str(exc)
            return
        self.outcome.recovered = len(self.unsaved)
        if previous is not None and previous != self.outcome.recovery:
            previous.unlink(missing_ok=True)  # the new file holds all of it

    def report_context(self, terminal: pytest.TerminalReporter | None) -> ReportContext:
        """What the report formats are given: the run's settings, the store's outcome, the unused
        entries and the formats' outcomes so far (each reporter's goes into :attr:`reports`)."""
        from pytest_autotune.plugin.report.formats.reporter import ReportContext

        return ReportContext(
            config=self.session.config,
            settings=self.session.settings,
            store=self.outcome,
            unused=self.unused,
            outcomes=self.reports,
            terminal=terminal,
        )

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
