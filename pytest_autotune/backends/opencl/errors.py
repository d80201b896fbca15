"""OpenCL error types and their mapping to trial outcome labels.

A tuning trial that fails inside OpenCL is not a crash: build failures become
``compile`` trials carrying the build log, launch and resource failures
(work-group too large, local memory exhausted, allocation failures, ...)
become ``runtime`` trials named by their OpenCL status code. This module
imports nothing heavy: pyopencl is looked up in ``sys.modules`` only, so the
plugin can classify exceptions without importing it.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pytest_autotune.outcome import Label

__all__ = [
    "COMPILE_STATUS_CODES",
    "DeviceNotFoundError",
    "DeviceUnusableError",
    "KernelBuildError",
    "LaunchError",
    "classify_error",
    "log_excerpt",
    "status_name",
]

#: OpenCL status codes that mean "this program could not be built".
COMPILE_STATUS_CODES = frozenset(
    {
        "BUILD_PROGRAM_FAILURE",
        "COMPILE_PROGRAM_FAILURE",
        "LINK_PROGRAM_FAILURE",
        "COMPILER_NOT_AVAILABLE",
        "LINKER_NOT_AVAILABLE",
        "INVALID_BUILD_OPTIONS",
        "INVALID_COMPILER_OPTIONS",
        "INVALID_LINKER_OPTIONS",
        "INVALID_PROGRAM_EXECUTABLE",
    }
)

_EXCERPT_LINES = 12
_EXCERPT_CHARS = 2000
_CAUSE_DEPTH = 8


class DeviceNotFoundError(LookupError):
    """No OpenCL device matches the requested one; the message lists every device."""


class DeviceUnusableError(RuntimeError):
    """The chosen OpenCL device (or, with no choice, every device) cannot build a trivial kernel.

    An environment problem, such as a compiler older than the CPU, reported once with the build
    log instead of every configuration being recorded as a compile failure.
    """


class KernelBuildError(RuntimeError):
    """An OpenCL program failed to build for a configuration.

    ``log`` is the compiler's build log, ``options`` the build options used (``-D`` defines
    included), ``defines`` the ``NAME=VALUE`` defines written into the source as ``#define`` lines,
    ``status`` the OpenCL status code name.
    """

    def __init__(
        self,
        log: str,
        options: Sequence[str],
        status: str = "BUILD_PROGRAM_FAILURE",
        *,
        defines: Sequence[str] = (),
    ) -> None:
        self.log = log
        self.options = tuple(options)
        self.defines = tuple(defines)
        self.status = status
        shown = f"options {' '.join(self.options) or '(none)'}"
        if self.defines:
            shown = f"#defines {' '.join(self.defines)} and {shown}"
        super().__init__(f"OpenCL build failed ({status}) with {shown}:\n{log_excerpt(log)}")


class LaunchError(RuntimeError):
    """A kernel launch that the device cannot run, detected before it is enqueued.

    ``status`` is the OpenCL status code the launch would fail with (for
    example ``INVALID_WORK_GROUP_SIZE`` or ``OUT_OF_RESOURCES``). Raised where
    a driver would otherwise crash the process (PoCL segfaults on a work-group
    that uses more local memory than the device has).
    """

    def __init__(self, status: str, message: str) -> None:
        self.status = status
        super().__init__(f"{status}: {message}")


def log_excerpt(log: str) -> str:
    """The informative part of a build log: its error lines, else its first lines (bounded)."""
    lines = [line for line in log.strip().splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    chosen = (errors or lines)[:_EXCERPT_LINES]
    text = "\n".join(chosen)
    return text if len(text) <= _EXCERPT_CHARS else text[: _EXCERPT_CHARS - 3] + "..."


def status_name(exc: BaseException) -> str:
    """The OpenCL status code name (``"OUT_OF_RESOURCES"``) of a pyopencl error."""
    cl = sys.modules.get("pyopencl")
    code = getattr(exc, "code", None)
    if cl is None or not isinstance(code, int):
        return "UNKNOWN"
    try:
        return str(cl.status_code.to_string(code))
    except ValueError:
        return f"status {code}"


def _opencl_status(exc: BaseException) -> tuple[str, str] | None:
    """(status code name, message) of a pyopencl error, or None for anything else."""
    cl = sys.modules.get("pyopencl")
    if cl is None or not isinstance(exc, cl.Error):
        return None
    name = status_name(exc)
    what = getattr(exc, "what", None)
    message = what.what() if what is not None and hasattr(what, "what") else str(exc)
    return name, str(message)


def classify_error(exc: BaseException) -> tuple[Label, str] | None:
    """Map an exception raised during a trial to ``(label, detail)``; None if it is not OpenCL's.

    Follows explicit ``raise ... from`` chains, so an OpenCL error wrapped by
    user code is still recognised.
    """
    current: BaseException | None = exc
    for _ in range(_CAUSE_DEPTH):
        if current is None:
            return None
        if isinstance(current, KernelBuildError):
            return "compile", log_excerpt(current.log) or str(current)
        if isinstance(current, LaunchError):
            return "runtime", str(current)
        status = _opencl_status(current)
        if status is not None:
            name, message = status
            if name in COMPILE_STATUS_CODES:
                return "compile", log_excerpt(message)
            return "runtime", f"{name}: {log_excerpt(message)}"
        current = current.__cause__
    return None
