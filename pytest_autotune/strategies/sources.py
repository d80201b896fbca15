"""What another tuning task learnt, as a transfer source for warm-starting a new one.

A :class:`TransferSource` is the record of one *source task*: the same kernel tuned on another
device, or the same test function under another parametrization. It holds trials as plain
configurations (parameter name to value, in the source's own space) with their outcome: a value in
minimisation form (only the order and ratios within one source matter, so times relative to the
source's best are as good as absolute ones) or a failure label.

The store (``autotune.json`` histories), :class:`pytest_autotune.replay.Replay` and library users
build sources; strategies that can use them (the Bayesian engine) receive them through
``Tuner(space, strategy, sources=[...])``. Mapping a source's configurations into the target space
is the strategy layer's job (:func:`pytest_autotune.strategies.sources.map_to_space`, by
parameter name and value); a source that does not overlap is skipped with a warning naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_autotune.outcome import LABELS, Label

__all__ = ["SourceTrial", "TransferSource"]


@dataclass(frozen=True)
class SourceTrial:
    """One trial of a source task: its configuration and outcome.

    ``value`` (minimisation form, finite) is set only when ``label == "ok"``.
    """

    config: Mapping[str, Any]
    label: Label = "ok"
    value: float | None = None

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"unknown outcome label {self.label!r}; expected one of {LABELS}")
        if self.label == "ok":
            if self.value is None or not math.isfinite(self.value):
                raise ValueError(f"an 'ok' source trial needs a finite value, got {self.value!r}")
        elif self.value is not None:
            raise ValueError(f"a {self.label!r} source trial carries no value, got {self.value!r}")


@dataclass(frozen=True)
class TransferSource:
    """The trials of one source task, named for messages (``"device 'opencl:A100'"``).

    ``kind`` says where it came from: ``"device"`` (same test, another device), ``"sibling"``
    (same test function, another parametrization, same device) or ``"user"``.
    """

    name: str
    trials: Sequence[SourceTrial]
    kind: str = "user"
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def n_ok(self) -> int:
        """How many trials were measured (label ``ok``)."""
        return sum(1 for trial in self.trials if trial.label == "ok")
