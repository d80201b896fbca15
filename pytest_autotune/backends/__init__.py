"""Device backends: the contract every backend implements and the registry that names them.

Each backend (see :class:`~pytest_autotune.backends.base.Backend`) lives in its own module or folder
under ``backends/`` and has one entry in the registry (:mod:`~pytest_autotune.backends.registry`):
which backend a test runs on (:func:`backend_for_fixtures`), which ones are in use
(:func:`loaded_backends`), and :func:`register_backend` for third-party backends. The entries are
static text, so choosing a backend for a test never imports a device library.

This package re-exports the names of :mod:`~pytest_autotune.backends.base` and of the registry, so
``from pytest_autotune.backends import get_backend`` is the short spelling; modules of this package
import from the module that defines a name.
"""

from __future__ import annotations

from typing import Any

from pytest_autotune.backends.base import Backend, BackendError, DeviceLimits, DeviceSource
from pytest_autotune.backends.registry import (
    DEFAULT_BACKEND,
    BackendEntry,
    available_backends,
    backend_entry,
    backend_for_fixtures,
    backend_for_object,
    backend_name_for_fixtures,
    fixture_modules,
    get_backend,
    loaded_backends,
    register_backend,
    restart_needed,
)

__all__ = [
    "DEFAULT_BACKEND",
    "Backend",
    "BackendEntry",
    "BackendError",
    "DeviceLimits",
    "DeviceSource",
    "available_backends",
    "backend_entry",
    "backend_for_fixtures",
    "backend_for_object",
    "backend_name_for_fixtures",
    "define_macros",
    "fixture_modules",
    "get_backend",
    "loaded_backends",
    "register_backend",
    "restart_needed",
]


def define_macros(defines: Any) -> tuple[tuple[str, str], ...]:
    """``(macro, value text)`` pairs of a configuration, encoded as the OpenCL and CUDA backends
    write ``#define`` lines (:func:`pytest_autotune.backends.opencl.defines.define_macros`: booleans
    0/1, floats with an ``f``, permutations as ``NAME_0``, ... ``NAME_LEN``); pure Python, for the
    header ``python -m pytest_autotune export`` writes."""
    from pytest_autotune.backends.opencl.defines import define_macros as macros

    return macros(defines, "source")
