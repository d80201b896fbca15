"""What a tuning worker process and its parent say to each other over their pipe.

The parent (:class:`~pytest_autotune.tuning.process.worker.Worker`) and the child
(:func:`~pytest_autotune.tuning.process.serve.serve_requests`) run different code, often started
differently (``multiprocessing`` for the library, a pytest sub-session for the plugin), so the few
things both sides must agree on live here and nowhere else: the messages (pickled objects over a
:class:`multiprocessing.connection.Connection`) and the exit status of a worker whose parent is gone.

The exchange: the child sends :class:`Ready` once it is set up; then, for each request the parent
sends, exactly one :class:`Reply`; the request :data:`STOP` (or the pipe closing) ends the child.
Every message from the child carries its resident memory, so the parent can replace a worker that
leaks without asking it anything extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = ["ORPHAN_STATUS", "STOP", "Ready", "Reply"]

#: The request that ends a worker's loop.
STOP: Final = "stop"
#: Exit status of a worker whose parent disappeared.
ORPHAN_STATUS: Final = 70


@dataclass(frozen=True)
class Ready:
    """First message of a worker: set up and waiting; ``rss`` is its resident memory in bytes."""

    rss: int


@dataclass(frozen=True)
class Reply:
    """A worker's answer to one request, with its resident memory afterwards.

    ``restart`` is why the worker cannot serve another request (e.g. its GPU context was lost to
    an illegal address; None: it can): it exits after this reply, and the parent starts a new one.
    """

    payload: Any
    rss: int
    restart: str | None = None
