"""The messages between a tuning run and its trial worker (the process that calls the test body).

The parent side (:mod:`pytest_autotune.plugin.worker_parent`) starts a worker pytest with a
:class:`WorkerSpec` in its environment and sends :class:`TrialRequest` objects; the worker side
(:mod:`pytest_autotune.plugin.worker_main`) answers each with a :class:`TrialReply`, or with a
:class:`BodyEnded` when the body raised a pytest outcome or an interrupt that must end tuning.
Kept apart from both sides so that the session, which only needs to know whether this process is
a worker, imports neither.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from pytest_autotune.outcome import Label

__all__ = ["ENV_VAR", "BodyEnded", "EndKind", "TrialReply", "TrialRequest", "WorkerSpec"]

#: Environment variable that puts a pytest process in trial-worker mode (JSON of :class:`WorkerSpec`).
ENV_VAR: Final = "PYTEST_AUTOTUNE_TRIAL_WORKER"


EndKind = Literal["skip", "xfail", "fail", "exit", "interrupt", "system-exit"]


@dataclass(frozen=True)
class WorkerSpec:
    """What a trial worker serves: one node id, over the channel and parent-watch descriptors.

    ``tuning`` is what the body sees as ``autotune.tuning``: True for tuning trials, False for a
    worker that measures a baseline as a plain run would (:mod:`pytest_autotune.plugin.baseline`).
    """

    nodeid: str
    channel_fd: int
    watch_fd: int
    tuning: bool = True

    def to_env(self) -> str:
        """The value of :data:`ENV_VAR`."""
        fields = {"nodeid": self.nodeid, "channel_fd": self.channel_fd, "watch_fd": self.watch_fd}
        return json.dumps({**fields, "tuning": self.tuning})

    @classmethod
    def from_environ(cls) -> WorkerSpec | None:
        """The spec of this process, removed from the environment (the body's subprocesses are no workers)."""
        text = os.environ.pop(ENV_VAR, None)
        if not text:
            return None
        data = json.loads(text)
        tuning = bool(data.get("tuning", True))
        return cls(str(data["nodeid"]), int(data["channel_fd"]), int(data["watch_fd"]), tuning)


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


@dataclass(frozen=True)
class BodyEnded:
    """Worker -> parent: the body raised a pytest outcome or an interrupt; tuning must end."""

    kind: EndKind
    message: str
