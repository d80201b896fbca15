"""What an exception raised by a test body means for the trial: its failure label and detail.

A failed ``assert`` is ``correctness`` and ``autotune.reject`` is ``constraints``; a device's build
and launch errors are ``compile``/``runtime`` as that device's backend classifies them. Only the
backends whose device library is already loaded are asked (:func:`loaded_backends`), so classifying
the error of a plain Python test never imports a device library. Anything else is ``runtime``,
with the error kept as the detail. Used by the pytest glue and by the harness that runs a tunable
test outside pytest, hence here, below both.
"""

from __future__ import annotations

import traceback
from typing import Final

from pytest_autotune.backends.registry import loaded_backends
from pytest_autotune.outcome import Label, Rejected

__all__ = ["classify_exception", "describe_exception"]

#: The longest detail kept for a failed trial.
_DETAIL_LIMIT: Final = 2000


def describe_exception(exc: BaseException) -> str:
    """``Type: message (file:line)`` of the innermost frame, cut to a readable length."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if frames:
        text += f" ({frames[-1].filename}:{frames[-1].lineno})"
    return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 3] + "..."


def classify_exception(exc: Exception) -> tuple[Label, str]:
    """The trial label and detail of an exception raised by a test body."""
    if isinstance(exc, Rejected):
        return "constraints", exc.reason
    if isinstance(exc, AssertionError):
        return "correctness", describe_exception(exc)
    for backend in loaded_backends():
        found = backend.classify(exc)
        if found is not None:
            return found
    return "runtime", describe_exception(exc)
