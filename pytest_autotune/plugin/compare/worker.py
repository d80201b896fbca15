"""The worker side of ``--autotune-compare``: a pytest process that measures one side of a comparison.

Started by :mod:`pytest_autotune.plugin.compare.side` from one tree (the reference commit's, or the
working tree), it collects the test there, plans it as a plain check would (so the configuration
is the one that tree's ``autotune.json`` commits for this device, else the declared defaults) and
serves the parent (:func:`serve_compare`): the first request
(:class:`~pytest_autotune.plugin.compare.messages.CompareSetup`) and each measurement
(:class:`~pytest_autotune.plugin.compare.messages.CompareMeasure`) run the body once with that
configuration, asserts included, and send back its samples. Each measurement runs the whole body,
so it gets fresh inputs and buffers: a process whose buffers happened to land badly in memory
would otherwise be slower (or faster) for every measurement it takes, a bias no number of blocks
removes.

:class:`CompareWorkerMode` is the run mode of such a process
(:mod:`pytest_autotune.plugin.modes.run_mode`). :class:`NotCollectedReporter` tells the parent,
instead of getting ready, when the tree has no such tunable test (a new test, a new parameter),
when its file does not collect (a syntax error, a kernel source that is not there yet), and when
the worker would not run its own tree's code
(:mod:`pytest_autotune.plugin.compare.import_guard`: checked again after every run of the body, whose
imports may come late). That the tree's ``autotune.json`` cannot be read is told by the session
(:mod:`pytest_autotune.plugin.session`), which reads it before this module is loaded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from pytest_autotune.plugin.compare.import_guard import installed_finder
from pytest_autotune.plugin.compare.messages import (
    CompareMeasure,
    CompareSetup,
    NotCollected,
    NotServedKind,
    SideSetup,
)
from pytest_autotune.plugin.workers.protocol import TrialReply, WorkerSpec, body_ended
from pytest_autotune.plugin.workers.runner import run_trial
from pytest_autotune.tuning.process.serve import serve_requests, watch_parent

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin.modes.committed import Committed
    from pytest_autotune.plugin.modes.item_plan import ItemPlan, Planner

__all__ = ["CompareWorkerMode", "NotCollectedReporter", "serve_compare", "unfaithful"]


def unfaithful() -> NotCollected | None:
    """The guard's refusal when this worker imported code that is not its tree's (None: all its own)."""
    finder = installed_finder()
    reason = None if finder is None else finder.describe()
    return None if reason is None else NotCollected(reason, "unfaithful")


def _send(spec: WorkerSpec, message: NotCollected) -> None:
    spec.tell_parent(message)


class NotCollectedReporter:
    """Plugin of a compare worker: sends :class:`NotCollected` when its test is not there to serve."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        self.errors: list[str] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Keep the first line of each collection error (the reason the test is missing)."""
        if report.failed:
            lines = [line for line in str(report.longreprtext).splitlines() if line.startswith("E ")]
            self.errors.append(f"{report.nodeid}: {(lines[-1][1:].strip() if lines else 'collection error')}")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """After the items were narrowed to the served test: is it there, and tunable?"""
        from pytest_autotune.api import get_spec

        items = [item for item in session.items if item.nodeid == self.spec.nodeid]
        kind: NotServedKind
        refused = unfaithful()
        if refused is not None:
            kind, reason = refused.kind, refused.reason
        elif items and get_spec(getattr(items[0], "obj", None)) is not None:
            return
        elif items:
            kind, reason = "not-tunable", "it is not a @tunable test there"
        elif self.errors:
            kind, reason = "collection", "its file does not collect there: " + "; ".join(self.errors)
        else:
            kind, reason = "missing", "no such test there"
        session.items.clear()  # nothing to serve: the parent stops this worker
        _send(self.spec, NotCollected(reason, kind))


def serve_compare(item: pytest.Function, autotune: Autotune, spec: WorkerSpec, committed: Committed) -> None:
    """Compare worker's test call: answer the parent's requests for ``item`` until told to stop."""
    watch_parent(lambda: os.read(spec.watch_fd, 1))
    channel = Connection(spec.channel_fd)
    config = dict(committed.config)

    def handle(request: Any) -> tuple[Any, bool]:
        repeat = request.repeat if isinstance(request, (CompareMeasure, CompareSetup)) else 1
        warmup = request.warmup if isinstance(request, CompareMeasure) else None
        try:
            run = run_trial(item, autotune, config, repeat=repeat, warmup=warmup)
        except BaseException as exc:  # pytest outcomes and interrupts end the loop; the parent decides
            return body_ended(exc), False
        reply = TrialReply(run.samples, run.label, run.detail, run.cpu)
        refused = unfaithful()  # the body may import late
        if refused is not None:
            return refused, False
        if isinstance(request, CompareSetup):
            return SideSetup(config, committed.state, committed.reason, reply), True
        return reply, True

    try:
        serve_requests(channel, handle)
    finally:
        channel.close()


@dataclass(frozen=True)
class CompareWorkerMode:
    """The run mode of a compare worker: serve one side of its test's comparison (:func:`serve_compare`)."""

    spec: WorkerSpec
    #: ``item``'s plan in this mode (None: not a tunable test), as the hooks hand it over.
    plan: Planner
    name: str = "compare-worker"

    def run(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> None:
        """Serve ``item`` with the configuration its tree commits (the plan's)."""
        serve_compare(item, autotune, self.spec, plan.committed)
