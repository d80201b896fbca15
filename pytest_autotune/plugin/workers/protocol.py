"""The messages between the plugin and its workers (the processes that call a test's body).

The parent side (:mod:`pytest_autotune.plugin.workers.parent`) starts a worker pytest with a
:class:`WorkerSpec` in its environment and sends :class:`TrialRequest` objects; the worker side
(:mod:`pytest_autotune.plugin.workers.main`) answers each with a :class:`TrialReply`, or with a
:class:`BodyEnded` when the body raised a pytest outcome or an interrupt that must end tuning.
Kept apart from both sides so that the session, which only needs to know whether this process is
a worker, imports neither.

The :class:`WorkerSpec` serves every role; the messages of a worker in the ``compare`` role (one
per side of ``--autotune-compare``) sit beside what sends them, in
:mod:`pytest_autotune.plugin.compare.messages`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from pytest_autotune.outcome import Label

__all__ = [
    "ENV_VAR",
    "BodyEnded",
    "EndKind",
    "TrialReply",
    "TrialRequest",
    "WorkerRole",
    "WorkerSpec",
    "body_ended",
]

#: Environment variable that puts a pytest process in trial-worker mode (JSON of :class:`WorkerSpec`).
ENV_VAR: Final = "PYTEST_AUTOTUNE_TRIAL_WORKER"


EndKind = Literal["skip", "xfail", "fail", "exit", "interrupt", "system-exit"]
#: What a worker serves: tuning trials, a baseline measured as a plain run measures (the body sees
#: ``autotune.tuning`` False), or one side of a comparison.
WorkerRole = Literal["trial", "baseline", "compare"]


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker serves: one node id in a role, over the channel and parent-watch descriptors."""

    nodeid: str
    channel_fd: int
    watch_fd: int
    role: WorkerRole = "trial"

    def to_env(self) -> str:
        """The value of :data:`ENV_VAR`."""
        return json.dumps(
            {
                "nodeid": self.nodeid,
                "channel_fd": self.channel_fd,
                "watch_fd": self.watch_fd,
                "role": self.role,
            }
        )

    def tell_parent(self, message: object) -> None:
        """Send one ``message`` to the parent over this worker's channel, before or instead of serving
        (a compare worker that cannot serve its test says why:
        :class:`~pytest_autotune.plugin.compare.messages.NotCollected`)."""
        from multiprocessing.connection import Connection

        channel = Connection(self.channel_fd, readable=False)
        try:
            channel.send(message)
        finally:
            channel.close()

    @classmethod
    def from_environ(cls) -> WorkerSpec | None:
        """The spec of this process, removed from the environment (the body's subprocesses are no workers)."""
        text = os.environ.pop(ENV_VAR, None)
        if not text:
            return None
        data = json.loads(text)
        role: WorkerRole = data.get("role") if data.get("role") in ("baseline", "compare") else "trial"
        return cls(str(data["nodeid"]), int(data["channel_fd"]), int(data["watch_fd"]), role)


@dataclass(frozen=True)
class TrialRequest:
    """Parent -> worker: call the body once with ``config`` (``repeat`` timed calls per measure)."""

    config: dict[str, Any]
    repeat: int


@dataclass(frozen=True)
class TrialReply:
    """Worker -> parent: what one call of the body produced."""

    samples: tuple[float, ...]
    label: Label
    detail: str
    #: The CPU seconds of each sample (:attr:`~pytest_autotune.plugin.workers.runner.BodyRun.cpu`).
    cpu: tuple[float, ...] = ()


@dataclass(frozen=True)
class BodyEnded:
    """Worker -> parent: the body raised a pytest outcome or an interrupt; tuning must end."""

    kind: EndKind
    message: str

    def raise_again(self) -> None:
        """Raise the outcome in the parent, as the body raised it in the worker."""
        import pytest

        if self.kind == "skip":
            pytest.skip(self.message)
        if self.kind == "xfail":
            pytest.xfail(self.message)
        if self.kind == "exit":
            pytest.exit(self.message)
        if self.kind == "interrupt":
            raise KeyboardInterrupt(self.message)
        text = self.message if self.kind == "fail" else f"the test body raised {self.message}"
        pytest.fail(text, pytrace=False)


def body_ended(exc: BaseException) -> BodyEnded:
    """The message that carries a pytest outcome or an interrupt the body raised to the parent."""
    import pytest

    message = str(getattr(exc, "msg", None) or exc)
    if isinstance(exc, pytest.skip.Exception):
        return BodyEnded("skip", message)
    if isinstance(exc, pytest.xfail.Exception):
        return BodyEnded("xfail", message)
    if isinstance(exc, pytest.fail.Exception):
        return BodyEnded("fail", message)
    if isinstance(exc, pytest.exit.Exception):
        return BodyEnded("exit", message)
    if isinstance(exc, KeyboardInterrupt):
        return BodyEnded("interrupt", message)
    return BodyEnded("system-exit", f"{type(exc).__name__}({message})")
