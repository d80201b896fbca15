"""The CUDA driver API through cuda-python (``cuda.bindings.driver``), with errors made typed.

Every call of the driver in this backend goes through :func:`call`: cuda-python returns
``(status, *values)``, and a bad status becomes the backend's error of its kind
(:mod:`pytest_autotune.backends.cuda.errors`): a sticky error (illegal address, ...) marks the
context lost and raises :class:`CudaContextLost`; an out-of-resources refusal raises a
``resources`` :class:`CudaLaunchError`; anything else a ``launch`` one. :func:`api` returns the
module (tests swap it for a fake driver, so launch checks and timing are tested without a GPU).
"""

from __future__ import annotations

from typing import Any

from pytest_autotune.backends.cuda.errors import (
    RESOURCE_ERRORS,
    STICKY_ERRORS,
    CudaContextLost,
    CudaLaunchError,
    FailureKind,
    mark_context_lost,
)

__all__ = ["api", "call", "error_name", "set_api"]

_API: list[Any] = []


def api() -> Any:
    """The driver module (``cuda.bindings.driver``), imported on first use."""
    if not _API:
        from cuda.bindings import driver

        _API.append(driver)
    return _API[0]


def set_api(module: Any) -> None:
    """Use ``module`` as the driver (a fake in tests); None goes back to cuda-python's."""
    _API.clear()
    if module is not None:
        _API.append(module)


def error_name(status: Any) -> str:
    """The driver's name of a status (``"CUDA_ERROR_ILLEGAL_ADDRESS"``)."""
    try:
        found, name = api().cuGetErrorName(status)
        if int(found) == 0 and name:
            return bytes(name).decode()
    except Exception:
        pass
    return str(getattr(status, "name", status))


def call(function: str, *args: Any, what: str = "") -> Any:
    """Call driver ``function(*args)``; its value (a tuple for several, None for none).

    Raises :class:`CudaContextLost` (and marks the context lost) for a sticky error,
    :class:`CudaLaunchError` of kind ``resources`` or ``launch`` for the others.
    """
    result = getattr(api(), function)(*args)
    status, *values = result if isinstance(result, tuple) else (result,)
    if int(status) != 0:
        name = error_name(status)
        message = f"{function} {what}".strip()
        if name in STICKY_ERRORS:
            mark_context_lost(f"{name} in {message}")
            raise CudaContextLost(name, message)
        kind: FailureKind = "resources" if name in RESOURCE_ERRORS else "launch"
        raise CudaLaunchError(name, message, kind=kind)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)
