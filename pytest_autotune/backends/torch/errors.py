"""What a failed Triton or torch trial means: labelled infeasible, or the context lost.

Triton's own verdicts on a configuration are infeasible trials, not failures of the test:
``OutOfResources`` (shared memory or registers beyond the device) and ``PTXASError`` (ptxas
refused the code, usually registers) are ``compile`` trials of kind ``resources``;
``CompilationError`` (including ``CompileTimeAssertionFailure``: a ``tl.static_assert`` the
configuration breaks) is ``compile``. A CUDA error that says an illegal memory access happened
(torch raises it at the next synchronisation) is ``runtime`` of kind ``illegal address`` and
marks the context lost, so an isolated worker is replaced; out of device memory is ``runtime``
of kind ``resources``. Everything else is left to the generic classification.

Recognised by class name and module, looked up on the exception only: classifying an error
never imports triton or torch.
"""

from __future__ import annotations

from typing import Final

from pytest_autotune.backends.cuda.errors import log_excerpt, mark_context_lost
from pytest_autotune.outcome import Label

__all__ = ["classify_triton_error"]

_RESOURCES: Final = frozenset({"OutOfResources", "PTXASError"})
_COMPILE: Final = frozenset(
    {"CompilationError", "CompileTimeAssertionFailure", "UnsupportedLanguageConstruct"}
)
_LOST_TEXT: Final = (
    "illegal memory access",
    "misaligned address",
    "illegal instruction",
    "unspecified launch failure",
)
_CAUSE_DEPTH: Final = 8


def _triton_class(exc: BaseException) -> str | None:
    """The name of the Triton error class ``exc`` is (or derives from), else None."""
    for cls in type(exc).__mro__:
        if cls.__module__.startswith("triton.") and cls.__name__ in _RESOURCES | _COMPILE:
            return cls.__name__
    return None


def classify_triton_error(exc: BaseException) -> tuple[Label, str] | None:
    """``(label, detail)`` of a Triton or torch CUDA error (following ``raise ... from``), else None."""
    current: BaseException | None = exc
    for _ in range(_CAUSE_DEPTH):
        if current is None:
            return None
        name = _triton_class(current)
        if name is not None:
            kind = "resources" if name in _RESOURCES else "compile"
            return "compile", f"{kind}: {name}: {log_excerpt(str(current)) or name}"
        text = str(current)
        if type(current).__name__ == "OutOfMemoryError" and type(current).__module__.startswith("torch"):
            return "runtime", f"resources: {log_excerpt(text)}"
        if isinstance(current, RuntimeError) and any(t in text for t in _LOST_TEXT):
            mark_context_lost(log_excerpt(text))
            lost = "the CUDA context is lost; an isolated worker is replaced"
            return "runtime", f"illegal address: {log_excerpt(text)} ({lost})"
        current = current.__cause__
    return None
