"""CUDA error types and their trial labels: compile, resources, launch, and a lost context.

Four kinds of failure, as a kernel author tells them apart:

* **compile**: NVRTC rejected the source (:class:`CudaBuildError`, label ``compile``);
* **resources**: the configuration needs more than the device has, found at build time by ptxas
  ("uses too much shared data", too many registers: :class:`CudaResourceError`, label ``compile``)
  or before/at launch (block too large for the kernel's registers, too much shared memory:
  :class:`CudaLaunchError` with ``kind="resources"``, label ``runtime``);
* **launch**: the driver refused the launch for another reason (:class:`CudaLaunchError`,
  ``kind="launch"``, label ``runtime``);
* **illegal address** and the other sticky errors (:class:`CudaContextLost`, label ``runtime``):
  the CUDA context of the process is unusable afterwards, so :func:`mark_context_lost` records it
  and the backend asks the isolated trial worker to be replaced (the trial fails, tuning goes on).

The detail of every label starts with the kind (``resources: ...``), so reports and the
feasibility model can tell them apart. Pure Python: the plugin classifies errors without
importing cuda-python.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final, Literal

from pytest_autotune.outcome import Label

__all__ = [
    "STICKY_ERRORS",
    "CudaBuildError",
    "CudaContextLost",
    "CudaError",
    "CudaLaunchError",
    "CudaResourceError",
    "FailureKind",
    "classify_cuda_error",
    "context_lost",
    "is_resource_log",
    "mark_context_lost",
    "reset_context_lost",
]

#: The failure kinds, in the words the details start with.
FailureKind = Literal["compile", "resources", "launch", "illegal address"]

#: Driver errors after which the context is unusable (CUDA's "sticky" errors), by name.
STICKY_ERRORS: Final = frozenset(
    {
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_INVALID_PC",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
        "CUDA_ERROR_ECC_UNCORRECTABLE",
    }
)
#: Driver errors that mean "this launch needs more than the device gives it".
RESOURCE_ERRORS: Final = frozenset({"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "CUDA_ERROR_OUT_OF_MEMORY"})

#: ptxas messages of a configuration beyond the device's resources (not a mistake in the source).
_RESOURCE_LOG = re.compile(
    r"too much shared data|too many resources|uses too much|registers.*exceed|exceeds.*registers"
    r"|too much local data|Insufficient registers",
    re.IGNORECASE,
)
_EXCERPT_LINES: Final = 12
_EXCERPT_CHARS: Final = 2000
_CAUSE_DEPTH: Final = 8

_LOST: list[str] = []


def is_resource_log(log: str) -> bool:
    """Whether a failed build's log says the configuration exceeds the device's resources."""
    return bool(_RESOURCE_LOG.search(log))


def log_excerpt(log: str) -> str:
    """The error lines of a compiler log (else its first lines), bounded."""
    lines = [line.strip() for line in log.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    text = "\n".join((errors or lines)[:_EXCERPT_LINES])
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 3] + "..."


class CudaError(RuntimeError):
    """Base of the CUDA backend's errors; ``kind`` is the :data:`FailureKind`."""

    kind: FailureKind = "launch"


class CudaBuildError(CudaError):
    """NVRTC could not build the source for a configuration (``log``: its log, with ptxas's)."""

    kind: FailureKind = "compile"

    def __init__(self, log: str, options: Sequence[str], *, arch: str, defines: Sequence[str] = ()) -> None:
        self.log = log
        self.options = tuple(options)
        self.arch = arch
        self.defines = tuple(defines)
        shown = f"options {' '.join(self.options) or '(none)'}"
        if self.defines:
            shown = f"#defines {' '.join(self.defines)} and {shown}"
        super().__init__(f"NVRTC build for {arch} failed ({self.kind}) with {shown}:\n{log_excerpt(log)}")


class CudaResourceError(CudaBuildError):
    """The build failed because the configuration needs more shared memory or registers than
    the architecture has (ptxas: "uses too much shared data")."""

    kind: FailureKind = "resources"


class CudaLaunchError(CudaError):
    """A launch the device cannot run: found before it reached the driver, or refused by it.

    ``kind`` is ``"resources"`` (threads, shared memory or registers beyond a limit) or
    ``"launch"``; ``status`` is the driver's error name (or the one it would have returned).
    """

    def __init__(self, status: str, message: str, *, kind: FailureKind = "launch") -> None:
        self.status = status
        self.kind = kind
        super().__init__(f"{status}: {message}")


class CudaContextLost(CudaError):
    """A sticky driver error (illegal address, ...): this process's CUDA context is unusable."""

    kind: FailureKind = "illegal address"

    def __init__(self, status: str, message: str) -> None:
        self.status = status
        super().__init__(f"{status}: {message}")


def mark_context_lost(reason: str) -> None:
    """Record that this process's CUDA context is unusable (the worker must be replaced)."""
    _LOST.append(reason)


def context_lost() -> str | None:
    """Why this process's CUDA context is unusable, or None while it is fine."""
    return _LOST[0] if _LOST else None


def reset_context_lost() -> None:
    """Forget a lost context (after the context was reset, and in tests)."""
    _LOST.clear()


def _detail(exc: CudaError) -> str:
    if isinstance(exc, CudaBuildError):
        return f"{exc.kind}: {log_excerpt(exc.log) or exc}"
    if isinstance(exc, CudaContextLost):
        return f"{exc.kind}: {exc} (the CUDA context is lost; an isolated worker is replaced)"
    return f"{exc.kind}: {exc}"


def classify_cuda_error(exc: BaseException) -> tuple[Label, str] | None:
    """``(label, detail)`` of a CUDA backend error (following ``raise ... from``), else None.

    Builds (compile and build-time resources) are ``compile``; launch-time resources, launch
    errors and lost contexts are ``runtime``. The detail starts with the kind.
    """
    current: BaseException | None = exc
    for _ in range(_CAUSE_DEPTH):
        if current is None:
            return None
        if isinstance(current, CudaError):
            label: Label = "compile" if isinstance(current, CudaBuildError) else "runtime"
            return label, _detail(current)
        current = current.__cause__
    return None
