"""Tuned configurations at run time: the application launches what ``pytest --autotune`` found.

``pytest --autotune`` stores the best configuration per test (or kernel name and problem-size key)
and device in ``autotune.json``; this package lets the application itself use that file, without
pytest::

    from pytest_autotune import runtime

    tuned = runtime.load("autotune.json")           # read once, checked as the plugin checks it
    choice = tuned.choose("matmul", device=runtime.DeviceId.of(key), key={"M": 512, "N": 512, "K": 512},
                          default={"BLOCK": 64})
    choice.config, choice.reason                    # what to launch, and where it came from

Beside the reader, imported on first use: :func:`~pytest_autotune.runtime.triton.tuned` (a
decorator in place of ``triton.autotune``), :func:`~pytest_autotune.runtime.programs.build` (an OpenCL
or CUDA source built with a configuration, as the test builds it) and
:func:`~pytest_autotune.runtime.programs.launch_sizes` (its global and local sizes), and
:func:`~pytest_autotune.runtime.captures.capture` with :func:`~pytest_autotune.runtime.captures.load_capture`
(one launch's inputs per key saved under ``$PYTEST_AUTOTUNE_CAPTURE``, for a test to tune on).
``python -m pytest_autotune export`` writes a C header or a minimal store for applications that do
not run Python.

The package sits above ``entry``, ``store`` and ``backends`` and beside ``plugin``, which it never
imports; importing it brings in neither pytest, numpy nor torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pytest_autotune.runtime.devices import DeviceId, match_level, opencl_device, torch_device
from pytest_autotune.runtime.reader import Choice, TunedConfigError, TunedConfigs, load
from pytest_autotune.runtime.sizes import distance

if TYPE_CHECKING:  # pragma: no cover - for type checkers: loaded by __getattr__
    from pytest_autotune.runtime.captures import capture, captured_keys, load_capture
    from pytest_autotune.runtime.programs import build, launch_sizes
    from pytest_autotune.runtime.triton import tuned

__all__ = [
    "Choice",
    "DeviceId",
    "TunedConfigError",
    "TunedConfigs",
    "build",
    "capture",
    "captured_keys",
    "distance",
    "launch_sizes",
    "load",
    "load_capture",
    "match_level",
    "opencl_device",
    "torch_device",
    "tuned",
]

#: Helpers imported when first used (they import a device library, or numpy for the geometry).
_LAZY = {
    "build": "programs",
    "capture": "captures",
    "captured_keys": "captures",
    "launch_sizes": "programs",
    "load_capture": "captures",
    "tuned": "triton",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
