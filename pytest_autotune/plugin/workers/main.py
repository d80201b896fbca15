"""The worker side of isolated trials: a pytest process that serves one test's trials to its parent.

The worker is a fresh ``python -m pytest`` started by :mod:`pytest_autotune.plugin.workers.parent`.
It collects the test's file, keeps only the test's node id, creates its fixtures (conftest timers
included) and then, instead of calling the body once, serves trials (:func:`serve_item`): receive
a configuration, call the body (:func:`~pytest_autotune.plugin.workers.runner.run_trial`), send back the
samples and the outcome label. ``pytest.skip``/``xfail``/``fail``/``exit``, ``KeyboardInterrupt``
and ``SystemExit`` raised by the body end the serving loop and travel back as a
:class:`~pytest_autotune.plugin.workers.protocol.BodyEnded`, which the parent raises again. The
worker also watches its parent and exits when the parent is gone. :class:`WorkerMode` is the run
mode of such a process (:mod:`pytest_autotune.plugin.modes.run_mode`), in the ``trial`` or the
``baseline`` role.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from pytest_autotune.backends import restart_needed
from pytest_autotune.plugin.workers.protocol import TrialReply, TrialRequest, WorkerSpec, body_ended
from pytest_autotune.plugin.workers.runner import run_trial
from pytest_autotune.tuning.process.serve import serve_requests, watch_parent

if TYPE_CHECKING:
    import pytest

    from pytest_autotune.fixture import Autotune
    from pytest_autotune.plugin.modes.item_plan import ItemPlan, Planner

__all__ = ["WorkerMode", "serve_item"]


def serve_item(item: pytest.Function, autotune: Autotune, spec: WorkerSpec) -> None:
    """Worker mode's test call: answer trial requests for ``item`` until told to stop."""
    watch_parent(lambda: os.read(spec.watch_fd, 1))
    channel = Connection(spec.channel_fd)

    def handle(request: TrialRequest) -> tuple[Any, bool]:
        try:
            run = run_trial(item, autotune, request.config, repeat=request.repeat)
        except BaseException as exc:  # pytest outcomes and interrupts end the loop; the parent re-raises
            return body_ended(exc), False
        return TrialReply(run.samples, run.label, run.detail, run.cpu), True

    try:
        serve_requests(channel, handle, restart_needed)
    finally:
        channel.close()


@dataclass(frozen=True)
class WorkerMode:
    """The run mode of a trial or baseline worker: serve its one test to the parent (:func:`serve_item`)."""

    spec: WorkerSpec
    #: ``item``'s plan in this mode (None: not a tunable test), as the hooks hand it over.
    plan: Planner

    @property
    def name(self) -> str:
        """``trial-worker`` or ``baseline-worker``."""
        return f"{self.spec.role}-worker"

    def run(self, item: pytest.Function, plan: ItemPlan, autotune: Autotune) -> None:
        """Serve ``item``'s trials (its plan is the worker's: :meth:`ItemPlan.for_trial_worker`)."""
        serve_item(item, autotune, self.spec)
