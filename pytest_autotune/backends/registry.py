"""The registry of device backends: which backend a test runs on, and which ones are in use.

Each backend (see :class:`~pytest_autotune.backends.base.Backend`) lives in its own module or folder
under ``backends/`` and has one entry here: its class as a ``"module:Class"`` string, the fixtures
that put a test on it, the device library it drives, and the module holding its pytest fixtures.
The entries are static text, so choosing a backend for a test, or registering the fixtures, never
imports a device library: a plain Python test never loads pyopencl.

* :func:`backend_for_fixtures` picks a test's backend from its fixture names; a test that uses no
  backend's fixtures runs on the host backend (wall-clock timing, keyed by the CPU model).
* :func:`loaded_backends` lists only backends whose device library is already imported: the
  default timer and the trial error classification ask these, because an object of a library
  that was never imported cannot be a result or an error of that library.
* :func:`register_backend` adds a backend at run time (third-party code, tests).

It is a module of its own, re-exported by the package, so that the modules of ``backends/`` that
ask it (:mod:`~pytest_autotune.backends.errors`) import it rather than their folder's front door.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from pytest_autotune.backends.base import Backend, BackendError

__all__ = [
    "DEFAULT_BACKEND",
    "BackendEntry",
    "available_backends",
    "backend_entry",
    "backend_for_fixtures",
    "backend_for_object",
    "backend_name_for_fixtures",
    "fixture_modules",
    "get_backend",
    "loaded_backends",
    "register_backend",
    "restart_needed",
]

#: The backend of tests that use no backend's fixtures.
DEFAULT_BACKEND: Final = "host"


@dataclass(frozen=True)
class BackendEntry:
    """A registered backend, described without importing it.

    ``target`` is ``"package.module:Class"``; ``fixtures`` are the fixture names that put a test
    on the backend (they must equal the class's :attr:`Backend.fixtures`); ``library`` is the
    top-level module of the device library (None for none): the backend counts as loaded once it
    is in ``sys.modules``; ``fixture_module`` is a module the plugin registers as a pytest plugin
    for the backend's fixtures (None when the fixtures come from elsewhere, e.g. a conftest).
    """

    target: str
    fixtures: frozenset[str] = frozenset()
    library: str | None = None
    fixture_module: str | None = None


_REGISTRY: dict[str, BackendEntry] = {
    "host": BackendEntry("pytest_autotune.backends.host:HostBackend"),
    "opencl": BackendEntry(
        "pytest_autotune.backends.opencl.backend:OpenCLBackend",
        fixtures=frozenset({"cl_context", "cl_queue"}),
        library="pyopencl",
        fixture_module="pytest_autotune.backends.opencl.fixtures",
    ),
    "cuda": BackendEntry(
        "pytest_autotune.backends.cuda.backend:CudaBackend",
        fixtures=frozenset({"cuda_device", "cuda_stream"}),
        library="cuda.bindings",
        fixture_module="pytest_autotune.backends.cuda.fixtures",
    ),
    "torch": BackendEntry(
        "pytest_autotune.backends.torch.backend:TorchBackend",
        fixtures=frozenset({"torch_device"}),
        library="torch",
        fixture_module="pytest_autotune.backends.torch.fixtures",
    ),
}

_INSTANCES: dict[str, Backend] = {}


def available_backends() -> list[str]:
    """Registered backend names, sorted."""
    return sorted(_REGISTRY)


def backend_entry(name: str) -> BackendEntry:
    """The registry entry of ``name``; ``ValueError`` naming the known backends when unknown."""
    entry = _REGISTRY.get(name)
    if entry is None:
        raise ValueError(f"unknown backend {name!r}; available: {', '.join(available_backends())}")
    return entry


def register_backend(
    name: str,
    target: str | type[Backend],
    *,
    fixtures: Iterable[str] | None = None,
    library: str | None = None,
    fixture_module: str | None = None,
) -> None:
    """Register (or replace) the backend ``name``: a :class:`Backend` class or its ``"module:Class"``.

    ``fixtures`` defaults to the class's own when a class is given (a string target needs them
    spelled out: the point of the entry is to know them without importing). Register before
    pytest configures the plugin (e.g. when a ``conftest.py`` is imported) for ``fixture_module``
    to be registered with pytest.
    """
    if not name or not name.replace("_", "").isalnum():
        raise ValueError(f"backend name {name!r}: use letters, digits and underscores")
    if isinstance(target, str):
        if target.count(":") != 1:
            raise ValueError(f"backend {name!r}: target {target!r} must look like 'package.module:Class'")
        path = target
        declared = frozenset(fixtures or ())
    else:
        path = f"{target.__module__}:{target.__qualname__}"
        declared = frozenset(target.fixtures if fixtures is None else fixtures)
    _REGISTRY[name] = BackendEntry(path, declared, library, fixture_module)
    _INSTANCES.pop(name, None)


def get_backend(name: str) -> Backend:
    """The backend registered as ``name`` (one instance per process), imported on first use."""
    backend = _INSTANCES.get(name)
    if backend is not None:
        return backend
    entry = backend_entry(name)
    module_name, _, class_name = entry.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"backend {name!r} cannot be loaded from {entry.target!r}: {exc}") from exc
    cls: Any = getattr(module, class_name)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise TypeError(f"backend {name!r}: {entry.target!r} is not a Backend subclass")
    if cls.name != name or cls.fixtures != entry.fixtures:
        raise ValueError(
            f"backend {name!r}: the registry says name {name!r} and fixtures {sorted(entry.fixtures)}, "
            f"the class {cls.__qualname__} says {cls.name!r} and {sorted(cls.fixtures)}"
        )
    backend = _INSTANCES[name] = cls()
    return backend


def backend_name_for_fixtures(fixturenames: Iterable[str]) -> str:
    """The backend a test with these fixture names (its closure) runs on; imports nothing.

    A test may use the fixtures of one backend at most; with none it runs on the host.
    """
    names = set(fixturenames)
    matched = [name for name, entry in _REGISTRY.items() if entry.fixtures & names]
    if len(matched) > 1:
        used = "; ".join(f"{name}: {', '.join(sorted(_REGISTRY[name].fixtures & names))}" for name in matched)
        raise BackendError(
            f"a test can run on one backend only, but it uses the fixtures of several ({used})"
        )
    return matched[0] if matched else DEFAULT_BACKEND


def backend_for_fixtures(fixturenames: Iterable[str]) -> Backend:
    """The backend object for a test with these fixture names (see :func:`backend_name_for_fixtures`)."""
    return get_backend(backend_name_for_fixtures(fixturenames))


def loaded_backends() -> list[Backend]:
    """The backends whose device library is already imported (those without a library always)."""
    return [
        get_backend(name)
        for name, entry in _REGISTRY.items()
        if entry.library is None or entry.library in sys.modules
    ]


def backend_for_object(obj: Any) -> Backend | None:
    """The loaded backend that owns ``obj`` (a context, a queue), None when none does."""
    return next((backend for backend in loaded_backends() if backend.owns(obj)), None)


def restart_needed() -> str | None:
    """Why this process must be replaced before its next trial (a loaded backend lost its device
    context), None while it can go on."""
    for backend in loaded_backends():
        reason = backend.needs_restart()
        if reason is not None:
            return f"{backend.name}: {reason}"
    return None


def fixture_modules() -> list[str]:
    """The modules that hold the registered backends' fixtures (pytest plugins to register)."""
    return [entry.fixture_module for entry in _REGISTRY.values() if entry.fixture_module is not None]
