"""The worker side of trial isolation: answer requests until told to stop, and die with the parent.

Whatever starts a worker (``multiprocessing`` in :mod:`pytest_autotune.tuning.process.isolated`, a pytest
sub-session in :mod:`pytest_autotune.plugin.workers.main`) ends in :func:`serve_requests` with a
handler of its own, so the exchange with the parent (:mod:`pytest_autotune.tuning.process.protocol`)
is written once. :func:`watch_parent` makes an orphan exit by itself: a parent killed with SIGKILL
cannot stop its worker, and a worker stuck in a hung trial would otherwise live on.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from pytest_autotune.tuning.process.protocol import ORPHAN_STATUS, STOP, Ready, Reply

__all__ = ["resident_bytes", "serve_requests", "watch_parent"]


def resident_bytes() -> int:
    """Resident memory of this process in bytes (Linux: current; elsewhere: the peak)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)


def watch_parent(wait_until_gone: Callable[[], object]) -> None:
    """Exit this process (status :data:`ORPHAN_STATUS`) as soon as ``wait_until_gone()`` returns.

    ``wait_until_gone`` blocks until the parent is gone (e.g. reading a pipe whose write end only
    the parent holds). It runs in a daemon thread, so a hung trial cannot keep an orphan alive.
    """

    def watch() -> None:
        try:
            wait_until_gone()
        finally:
            os._exit(ORPHAN_STATUS)

    threading.Thread(target=watch, name="pytest-autotune-parent-watch", daemon=True).start()


def serve_requests(
    channel: Connection,
    handle: Callable[[Any], tuple[Any, bool]],
    restart_needed: Callable[[], str | None] | None = None,
) -> None:
    """The worker loop: send :class:`Ready`, then answer requests until :data:`STOP` or EOF.

    ``handle(request)`` returns ``(payload, go_on)``; the loop ends after a payload with
    ``go_on`` False (e.g. the test body called ``pytest.skip``). ``restart_needed()``, asked after
    each request, says why this process cannot serve another one (a lost GPU context); the reply
    then carries the reason and the loop ends, so the parent replaces the worker.
    """
    channel.send(Ready(resident_bytes()))
    while True:
        try:
            request = channel.recv()
        except EOFError:
            return
        if isinstance(request, str) and request == STOP:
            return
        payload, go_on = handle(request)
        restart = None if restart_needed is None else restart_needed()
        channel.send(Reply(payload, resident_bytes(), restart))
        if not go_on or restart is not None:
            return
