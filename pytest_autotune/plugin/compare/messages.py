"""The messages between ``--autotune-compare`` and its workers, one per side of a comparison.

A worker in the ``compare`` role (:mod:`pytest_autotune.plugin.compare.worker`, started by
:mod:`pytest_autotune.plugin.compare.side`) answers :class:`CompareSetup` once with a
:class:`SideSetup` (its committed configuration and the first run of the body), then each
:class:`CompareMeasure` with a :class:`~pytest_autotune.plugin.workers.protocol.TrialReply` (another
run of the body); when the test is not collected there it sends :class:`NotCollected` instead of
getting ready. They sit here, beside the two ends that send them; the worker spec and the trial
messages every role shares are in :mod:`pytest_autotune.plugin.workers.protocol`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pytest_autotune.plugin.workers.protocol import TrialReply

__all__ = ["CompareMeasure", "CompareSetup", "NotCollected", "NotServedKind", "SideSetup"]


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
