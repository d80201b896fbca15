"""The outcome of one trial: a measured value or a labelled failure.

Labels follow Kernel Tuner: ``ok`` (measured), ``correctness`` (the result
check failed), ``compile`` (build error), ``runtime`` (launch or execution
error), ``timeout`` (took too long), ``constraints`` (rejected explicitly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal, get_args

__all__ = ["FAILURE_LABELS", "LABELS", "Label", "Outcome", "Rejected"]

Label = Literal["ok", "correctness", "compile", "runtime", "timeout", "constraints"]
LABELS: Final[tuple[Label, ...]] = get_args(Label)
FAILURE_LABELS: Final[tuple[Label, ...]] = tuple(label for label in LABELS if label != "ok")


@dataclass(frozen=True)
class Outcome:
    """Result of evaluating one configuration.

    ``value`` is the objective in minimisation form (the tuner negates
    maximised objectives before strategies see them); it is set only when
    ``label == "ok"``. ``detail`` carries an error message or build log.
    """

    label: Label
    value: float | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        if self.label not in LABELS:
            raise ValueError(f"unknown outcome label {self.label!r}; expected one of {LABELS}")
        if self.label == "ok":
            if self.value is None or not math.isfinite(self.value):
                raise ValueError(f"an 'ok' outcome needs a finite value, got {self.value!r}")
        elif self.value is not None:
            raise ValueError(f"a {self.label!r} outcome carries no value")

    @classmethod
    def ok(cls, value: float) -> Outcome:
        """A successful measurement."""
        return cls("ok", float(value))

    @classmethod
    def failed(cls, label: Label, detail: str = "") -> Outcome:
        """An infeasible configuration with its failure label."""
        if label == "ok":
            raise ValueError("Outcome.failed needs a failure label, not 'ok'")
        return cls(label, None, detail)

    @property
    def feasible(self) -> bool:
        """True when the configuration produced a value."""
        return self.label == "ok"


class Rejected(Exception):
    """Raised by ``autotune.reject(reason)``: the configuration is infeasible (label ``constraints``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
