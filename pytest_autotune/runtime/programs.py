"""Build and launch a kernel with a configuration outside pytest, exactly as the test does.

:func:`build` hands the source and the configuration to the backend that owns the context (OpenCL:
a ``pyopencl.Context``; CUDA: the CUDA backend's context), which is what ``autotune.build`` does in
the test: the same ``#define`` lines at the top of the source (or ``-D`` options with
``define_style="options"``), the same encoding of values, the same program cache and launch checks.
:func:`launch_sizes` gives the global and local sizes of a configuration from the kernel's declared
:class:`~pytest_autotune.Geometry` (Kernel Tuner's ``problem_size``, ``grid_div_*`` and
``block_size_names``), as ``autotune.launch`` does. So a kernel module can declare its source, its
parameters and its geometry once, and both the test and the application import it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_autotune.backends.geometry import Geometry, LaunchSizes

__all__ = ["build", "launch_sizes"]


def build(
    context: Any,
    source: str | os.PathLike[str],
    config: Mapping[str, Any],
    *,
    options: Sequence[str] = (),
    define_style: str | None = None,
    source_name: str | None = None,
    **backend_options: Any,
) -> Any:
    """The program of ``source`` built for ``context`` with ``config`` as its defines (module
    docstring); ``source`` is the kernel's text or the path of its file (messages then name it).
    Raises the backend's build error (carrying the compiler's log) when the compiler refuses it."""
    from pytest_autotune.backends import BackendError, available_backends, backend_for_object, get_backend

    if isinstance(source, os.PathLike):
        source_name = source_name or os.fspath(source)
        source = Path(source).read_text(encoding="utf-8")
    backend = backend_for_object(context) or next(  # an offline CUDA target loads no library yet
        (b for b in map(get_backend, available_backends()) if b.owns(context)), None
    )
    if backend is None:
        raise BackendError(
            f"runtime.build got a {type(context).__name__!r}, which no backend owns; pass the "
            "device library's context (a pyopencl.Context for OpenCL)"
        )
    extra: dict[str, Any] = dict(backend_options)
    if define_style is not None:
        extra["define_style"] = define_style
    if source_name is not None:
        extra["source_name"] = source_name
    return backend.build(context, source, dict(config), options, **extra)


def launch_sizes(geometry: Geometry, config: Mapping[str, Any]) -> LaunchSizes:
    """Global size, local size and grid of ``config`` under ``geometry``:
    ``global_size, local_size = launch_sizes(GEOMETRY, choice.config)``."""
    return geometry.sizes(config)
