"""The messages between the plugin and its workers (the processes that call a test's body).

The parent side (:mod:`pytest_autotune.plugin.workers.parent`) starts a worker pytest with a
:class:`WorkerSpec` in its environment and sends :class:`TrialRequest` objects; the worker side
(:mod:`pytest_autotune.plugin.workers.main`) answers each with a :class:`TrialReply`, or with a
:class:`BodyEnded` when the body raised a pytest outcome or an interrupt that must end tuning.
Kept apart from both sides so that the session, which only needs to know whether this process is
a worker, imports neither.

A worker in the ``compare`` role (:mod:`pytest_autotune.plugin.compare.worker`, one per side of
``--autotune-compare``) answers :class:`CompareSetup` once with a :class:`SideSetup` (its committed
configuration and the first run of the body), then each :class:`CompareMeasure` with a
:class:`TrialReply` (another run of the body); when the test is not collected there it sends
:class:`NotCollected` instead of getting ready.
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
    "CompareMeasure",
    "CompareSetup",
    "EndKind",
    "NotCollected",
    "NotServedKind",
    "SideSetup",
    "TrialReply",
    "TrialRequest",
    "WorkerRole",
    "WorkerSpec",
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
        (a compare worker that cannot serve its test says why: :class:`NotCollected`)."""
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


@dataclass(frozen=True)
class CompareSetup:
    """Parent -> compare worker: run the body once with the side's committed configuration."""

    repeat: int


@dataclass(frozen=True)
class SideSetup:
    """Compare worker -> parent: the side's configuration, why it was chosen, and the first run.

    ``state`` is the planning's (``committed``, ``missing``, ``stale``).
    """

    config: dict[str, Any]
    state: str
    reason: str
    run: TrialReply


@dataclass(frozen=True)
class CompareMeasure:
    """Parent -> compare worker: run the body again, ``warmup`` untimed and ``repeat`` timed calls per
    ``autotune.measure`` (a warm-up the test sets itself wins)."""

    repeat: int
    warmup: int


#: Why a compare worker cannot serve its test: ``missing`` (no such test: a new test),
#: ``not-tunable`` (not a ``@tunable`` test there), ``collection`` (its file does not collect: a syntax
#: error, an import that fails), ``store`` (that tree's ``autotune.json`` cannot be read),
#: ``unfaithful`` (the worker would not run its own tree's code:
#: :mod:`~pytest_autotune.plugin.compare.import_guard`).
NotServedKind = Literal["missing", "not-tunable", "collection", "store", "unfaithful"]


@dataclass(frozen=True)
class NotCollected:
    """Compare worker -> parent, instead of getting ready (or instead of a run's reply): it cannot
    serve its test, ``kind`` says why and ``reason`` in words."""

    reason: str
    kind: NotServedKind = "missing"
